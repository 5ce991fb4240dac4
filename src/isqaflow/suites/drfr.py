"""InFoBench's DRFR: responders' answers to instructions, judged constraint by constraint; the
judges also rate ISQA's summaries (isqaflow.drfr; rules/drfr/drfr.smk)."""

from __future__ import annotations

from isqaflow.suites.base import ModelRule, Suite

#: the judge whose known-answer controls the suite writes (its control records' ``instrument``)
JUDGE = "DRFR judge"

SUITE = Suite(
    name="drfr",
    title="InFoBench (DRFR)",
    instruments=(JUDGE,),
    rules=(
        ModelRule(
            "drfr_responses",
            "results/drfr/responses/{dataset}/{responder}.jsonl",
            "{dataset}/{responder}",
        ),
        ModelRule(
            "drfr_judge", "results/drfr/judgments/{dataset}/{judge}.jsonl", "{dataset}/{judge}"
        ),
        ModelRule(
            "drfr_summaries",
            "results/drfr/summaries/{dataset}/{summarizer}.{judge}.jsonl",
            "{dataset}/{summarizer}.{judge}",
        ),
    ),
    tables=("table5", "by_constraint", "by_category", "summaries", "ppi"),
    target_functions=("drfr_targets",),
    validity_functions=("drfr_validity_files",),
    systems=("drfr", "responders"),
    judges=("drfr", "judges"),
    # the responders' DRFR and the summaries' (the judges rate ISQA's summaries too)
    board_tables=("drfr_table5_long", "drfr_summaries_long"),
    ranked=("DRFR overall",),
    # the first columns of the board: the responders' DRFR (overall, Easy, Hard)
    board_builders=("isqaflow.report.leaderboard_columns:drfr_columns",),
    board_place=1,
    browser="results/browser/drfr.html",
    # its model jobs, its config section's checker and its API stages' call formulas (rule ->
    # formula; the suite takes its own rules'), each where it may import what it needs
    jobs="isqaflow.grid:drfr_jobs",
    config_check="isqaflow.configcheck.sections:check_drfr",
    spend_planners=("isqaflow.spend.stages:PLANNERS", "isqaflow.spend.summaries:PLANNERS"),
)
