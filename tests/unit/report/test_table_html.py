"""Every table as HTML for the report (isqaflow.report.table_html, rule table_html)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from isqaflow.report.table_html import markdown_to_html, render_table_file, render_table_files
from isqaflow.report.tables import write_table

REPO = Path(__file__).resolve().parents[3]


def table() -> pd.DataFrame:
    index = pd.MultiIndex.from_tuples(
        [("bm25-k5", "smollm2"), ("bm25-k5", "a <x>")], names=["setting", "model"]
    )
    return pd.DataFrame({"win %": [51.25, np.nan], "n": [12, 3]}, index=index)


def test_a_written_table_becomes_an_html_table_with_its_caption(tmp_path):
    md, page = tmp_path / "t.md", tmp_path / "t.html"
    write_table(table(), [md], caption="Win rates <judge local>; controls: 3/4 & more.")
    render_table_file(md, page, "arena_win_rates")
    text = page.read_text()
    assert "<p>Win rates &lt;judge local&gt;; controls: 3/4 &amp; more.</p>" in text
    header = re.findall(r"<th style=[^>]*>(.*?)</th>", text)
    assert header == ["setting", "model", "win %", "n"]
    rows = re.findall(r"<tr><td", text)
    assert len(rows) == 2
    assert (
        '<td style="text-align:right">51.25</td>' in text
    )  # numbers right-aligned, as in the Markdown
    assert '<td style="text-align:left">a &lt;x&gt;</td>' in text
    assert "<script" not in text and "http" not in text


def test_an_escaped_pipe_is_a_cell_an_unescaped_one_or_a_broken_table_fails_naming_the_file():
    text = markdown_to_html("| a | b |\n|:--|--:|\n| x\\|y | 1 |\n", "t")
    assert '<td style="text-align:left">x|y</td>' in text
    # an unescaped "|" inside a cell: the row has a cell too many
    with pytest.raises(ValueError, match=r"t\.md: table row 4 has 5 cells, the header 4"):
        markdown_to_html(
            "cap\n\n| a | b | c | d |\n|:--|--:|--:|--:|\n| x | 1 | 2 | 3 |\n| a|b | 1 | 2 | 3 |\n",
            "t",
            where="t.md",
        )
    with pytest.raises(ValueError, match="no pipe table"):
        markdown_to_html("only a caption\n", "t", where="t.md")
    with pytest.raises(ValueError, match="header and a separator"):
        markdown_to_html("| a |\n| b |\n", "t", where="t.md")


def test_paragraphs_after_the_table_are_kept_in_order():
    text = markdown_to_html("Caption.\n\n| a |\n|--:|\n| 1 |\n\n[1] A footnote.\n", "t")
    assert (
        text.index("<p>Caption.</p>") < text.index("<table>") < text.index("<p>[1] A footnote.</p>")
    )


@pytest.mark.slow
def test_snakemakes_report_shows_the_html_table_inline(tmp_path):
    """Snakemake's report shows a .csv/.md as a download; an .html result (mime type text/html)
    in an iframe, in place: the rendered table is registered so."""
    (tmp_path / "Snakefile").write_text(
        "rule t:\n"
        '    output: page=report("t.html", category="Tables", caption="cap.rst")\n'
        "    run:\n"
        "        import pandas as pd\n"
        "        from isqaflow.report.tables import write_table\n"
        "        from isqaflow.report.table_html import render_table_file\n"
        '        write_table(pd.DataFrame({"system": ["a"], "win %": [50.0]}), ["t.md"], caption="Cap.")\n'
        '        render_table_file("t.md", output.page, "t")\n'
    )
    (tmp_path / "cap.rst").write_text("A table.\n")
    env = {
        "PYTHONPATH": str(REPO / "src"),
        "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin",
        "HOME": str(tmp_path),
    }
    for args in (["-c1", "-q"], ["--report", "report.html"]):
        subprocess.run(
            [sys.executable, "-m", "snakemake", *args],
            cwd=tmp_path,
            env=env,
            check=True,
            capture_output=True,
            timeout=300,
        )
    report = (tmp_path / "report.html").read_text()
    entry = re.search(r'"t\.html": (\{.*?"mime_type": "[^"]+")', report).group(1)
    assert json.loads(entry + "}")["mime_type"] == "text/html"


def test_a_table_without_columns_still_renders(tmp_path):
    md, page = tmp_path / "judges_panel.md", tmp_path / "judges_panel.html"
    write_table(pd.DataFrame(), [md], caption="Agreement of the arena judges.")
    render_table_file(md, page, "judges_panel")
    text = page.read_text()
    assert "<p>Agreement of the arena judges.</p>" in text and ">(no rows)</th>" in text


def test_relative_markdown_links_become_links_others_stay_text():
    text = markdown_to_html(
        "See [validity](validity.html).\n\n| a |\n|:--|\n"
        "| [70.0 [50.0, 90.0] (n=4)](../browser/drfr.html#system=x&kind=response) |\n"
        "| [bad](javascript:alert(1)) |\n| [ext](https://example.org/x) |\n",
        "t",
    )
    assert '<p>See <a href="validity.html">validity</a>.</p>' in text
    assert (
        '<a href="../browser/drfr.html#system=x&amp;kind=response">70.0 [50.0, 90.0] (n=4)</a>'
        in text
    )
    assert 'href="javascript' not in text and 'href="https' not in text
    assert "[ext](https://example.org/x)" in text  # shown as the Markdown it is


def test_render_table_files_writes_every_page(tmp_path):
    """Rule table_html renders every table's page in one job: each page is the same render as
    one table at a time."""
    tables, pages = {}, {}
    for name, value in (("a_one", 1), ("b_two", 2)):
        tables[name] = tmp_path / f"{name}.md"
        tables[name].write_text(f"Caption {name}.\n\n| x |\n|--:|\n| {value} |\n")
        pages[name] = tmp_path / f"{name}.html"
    render_table_files(tables, pages)
    for name in tables:
        alone = tmp_path / f"{name}.alone.html"
        render_table_file(tables[name], alone, name)
        assert pages[name].read_text() == alone.read_text()
        assert f"<title>{name}</title>" in pages[name].read_text()


def test_render_table_files_refuses_a_page_without_its_table(tmp_path):
    (tmp_path / "a.md").write_text("| x |\n|--|\n| 1 |\n")
    with pytest.raises(ValueError, match=r"pages without a table: \['b'\]"):
        render_table_files(
            {"a": tmp_path / "a.md"}, {"a": tmp_path / "a.html", "b": tmp_path / "b.html"}
        )
