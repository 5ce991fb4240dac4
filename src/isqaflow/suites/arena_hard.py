"""Arena-Hard-Auto v0.1: the models' answers to its questions, judged against the baseline's
in two games and scored with Bradley-Terry (isqaflow.arena_hard; rules/arena_hard/arena_hard.smk)."""

from __future__ import annotations

from isqaflow.suites.base import ModelRule, Suite

#: the judge whose known-answer controls the suite writes (its control records' ``instrument``)
JUDGE = "Arena-Hard judge"
#: its leaderboard column (one per judge where the run has several: "<column> [<judge>]")
BOARD_COLUMN = "Arena-Hard score"

SUITE = Suite(
    name="arena_hard",
    rules=(
        ModelRule(
            "arena_hard_answers", "results/arena_hard/answers/{answerer}.jsonl", "{answerer}"
        ),
        ModelRule("arena_hard_judge", "results/arena_hard/judgments/{judge}.jsonl", "{judge}"),
    ),
    tables=("scores",),
    target_functions=("arena_hard_targets",),
    validity_functions=("arena_hard_validity_files",),
    systems=("arena_hard", "answerers"),
    judges=("arena_hard", "judges"),
    judges_summaries=False,
    title="Arena-Hard-Auto v0.1",
    instruments=(JUDGE,),
    board_tables=("arena_hard_scores",),
    ranked=(BOARD_COLUMN,),
    board_builders=("isqaflow.report.leaderboard_columns:arena_hard_columns",),
    board_place=4,
    browser="results/browser/arena_hard.html",
    # its model jobs, its config section's checker and its API stages' call formulas (rule ->
    # formula; the suite takes its own rules'), each where it may import what it needs
    jobs="isqaflow.arena_hard.jobs:arena_hard_jobs",
    config_check="isqaflow.configcheck.arena_hard:check_arena_hard",
    spend_planners=("isqaflow.spend.arena_hard:PLANNERS",),
)
