"""The report's first page (report/workflow.rst, rendered as Snakemake renders it: Jinja, then
docutils) holds the leaderboard at a glance when the run made it (issue 41 item 4: before, the
report opened on the rule graph and the leaderboard was three clicks away)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from docutils.core import publish_parts
from jinja2 import Environment

REPO = Path(__file__).resolve().parents[3]


def first_page(files) -> str:
    text = (REPO / "report/workflow.rst").read_text()
    rendered = Environment().from_string(text).render(snakemake=None, categories={}, files=files)
    return publish_parts(rendered, writer_name="html")["html_body"]


def test_the_first_page_includes_the_leaderboard_at_a_glance(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where the report is built: the workflow's folder
    (tmp_path / "results/report").mkdir(parents=True)
    (tmp_path / "results/report/at_a_glance.html").write_text(
        '<div class="isqa-front"><table><tr><td>mine</td></tr></table></div>'
    )
    body = first_page([SimpleNamespace(target="at_a_glance.html")])
    assert '<div class="isqa-front"><table><tr><td>mine</td>' in body
    assert body.index("isqaflow reproduces") < body.index("isqa-front")
    # a run without the leaderboard (a suite's target only): the page without it, no error
    assert "isqa-front" not in first_page([SimpleNamespace(target="arena_win_rates.csv")])


def test_the_rule_names_the_page_the_first_page_includes():
    rules = (REPO / "rules/inputs/leaderboard.smk").read_text()
    assert 'FRONT_PAGE = "results/report/at_a_glance.html"' in rules
    assert ":file: results/report/at_a_glance.html" in (REPO / "report/workflow.rst").read_text()
