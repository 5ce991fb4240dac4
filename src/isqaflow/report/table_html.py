"""A table's Markdown file as a small HTML page, so that Snakemake's report shows it inline.

Snakemake's report shows a ``.csv``, ``.md`` or ``.tex`` result as a download link only; an
``.html`` result it shows in place (an iframe).  :func:`markdown_to_html` reads the Markdown
the tables are written as (:func:`isqaflow.report.tables.write_table`: caption paragraphs,
then a pipe table; any further paragraphs, e.g. footnotes, are kept in order) and writes
every pipe table as an HTML ``<table>`` (the separator row's colons give the alignment; a
cell's "|" escaped as "\\|", as GitHub Markdown does -- an unescaped one makes the row a
cell too long: an error naming the file and the row) and every other block as a
paragraph, all text escaped.  A Markdown link ``[text](href)`` with a relative ``href`` (no
scheme: the leaderboard's links to the judgment browser and to other tables) becomes a link;
any other stays text.  No external style or script.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Sequence

from isqaflow.io import read_text, write_text

__all__ = ["markdown_to_html", "render_table_file", "render_table_files"]

_SEPARATOR = re.compile(r"^\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$")
_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")
# [text](href): the text may hold one level of brackets ("70.0 [50.0, 90.0] (n=4)")
_LINK = re.compile(r"\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(([^()\s]+)\)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:1em;color:#111}"
    "p{max-width:70em;font-size:.9em;line-height:1.35}"
    "table{border-collapse:collapse;font-size:.85em;margin:.6em 0}"
    "th,td{border-bottom:1px solid #ddd;padding:.2em .6em;white-space:nowrap}"
    "th{border-bottom:2px solid #888;background:#f4f4f4;position:sticky;top:0}"
    "tr:hover td{background:#f7fbff}"
)


def _inline(text: str) -> str:
    """``text`` escaped, its relative Markdown links as ``<a>`` (an absolute or scripted one stays text)."""
    out, end = [], 0
    for match in _LINK.finditer(text):
        label, href = match.groups()
        if _SCHEME.match(href):
            continue
        out += [
            html.escape(text[end : match.start()]),
            f'<a href="{html.escape(href)}">{html.escape(label)}</a>',
        ]
        end = match.end()
    return "".join(out) + html.escape(text[end:])


def _cells(line: str) -> list[str]:
    line = line.strip().removeprefix("|").removesuffix("|")
    return [cell.strip().replace("\\|", "|") for cell in _UNESCAPED_PIPE.split(line)]


def _alignments(separator: str) -> list[str]:
    aligns = []
    for cell in _cells(separator):
        if cell.endswith(":") and cell.startswith(":"):
            aligns.append("center")
        elif cell.endswith(":"):
            aligns.append("right")
        else:
            aligns.append("left")
    return aligns


def _table(lines: Sequence[str], where: str) -> str:
    if len(lines) < 2 or not _SEPARATOR.match(lines[1].strip()):
        raise ValueError(
            f"{where}: a pipe table needs a header and a separator row, got {lines[:2]!r}"
        )
    header, aligns = _cells(lines[0]), _alignments(lines[1])
    if len(aligns) != len(header):
        raise ValueError(
            f"{where}: the separator row has {len(aligns)} columns, the header {len(header)}"
        )
    out = ["<table><thead><tr>"]
    out += [f'<th style="text-align:{a}">{html.escape(c)}</th>' for c, a in zip(header, aligns)]
    out.append("</tr></thead><tbody>")
    for n, line in enumerate(lines[2:], start=3):
        cells = _cells(line)
        if len(cells) != len(header):
            raise ValueError(
                f"{where}: table row {n} has {len(cells)} cells, the header {len(header)} "
                "(a cell holding an unescaped '|'?)"
            )
        out.append(
            "<tr>"
            + "".join(
                f'<td style="text-align:{a}">{_inline(c)}</td>' for c, a in zip(cells, aligns)
            )
            + "</tr>"
        )
    out.append("</tbody></table>")
    return "".join(out)


def markdown_to_html(text: str, title: str, where: str = "table") -> str:
    """The page of one table file's Markdown ``text`` (``where`` names the file in errors)."""
    blocks: list[tuple[str, list[str]]] = []  # ("table" | "text", lines)
    for line in text.splitlines():
        kind = "table" if line.lstrip().startswith("|") else "text"
        if not line.strip():
            blocks.append(("blank", []))
        elif blocks and blocks[-1][0] == kind:
            blocks[-1][1].append(line)
        else:
            blocks.append((kind, [line]))
    body = []
    for kind, lines in blocks:
        if kind == "table":
            body.append(_table(lines, where))
        elif kind == "text":
            body.append("<p>" + "<br>".join(_inline(line) for line in lines) + "</p>")
    if not any(kind == "table" for kind, _ in blocks):
        raise ValueError(f"{where}: no pipe table found")
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f'<style>{_STYLE}</style></head><body><h1 style="font-size:1.2em">{html.escape(title)}</h1>'
        + "".join(body)
        + "</body></html>\n"
    )


def render_table_file(md_path: str | os.PathLike, html_path: str | os.PathLike, title: str) -> None:
    """Write ``html_path`` from the table's Markdown file, atomically."""
    write_text(html_path, markdown_to_html(read_text(md_path), title, where=str(md_path)))


def render_table_files(
    tables: dict[str, str | os.PathLike], pages: dict[str, str | os.PathLike]
) -> None:
    """Every table's page: ``tables`` and ``pages`` map a table's name to its Markdown file and
    its page (rule table_html renders all of them in one job).  The two must name the same
    tables: a page without its table, or the reverse, is an error naming them."""
    if set(tables) != set(pages):
        raise ValueError(
            f"tables without a page: {sorted(set(tables) - set(pages))}; "
            f"pages without a table: {sorted(set(pages) - set(tables))}"
        )
    for name in sorted(tables):
        render_table_file(tables[name], pages[name], name)
