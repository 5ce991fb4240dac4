"""ISQA: summaries of papers refined with a feedback model's question-answering feedback,
scored by QAGS and QuestEval (isqaflow.isqa, isqaflow.metrics; rules/isqa/summarize.smk,
rules/isqa/metrics.smk)."""

from __future__ import annotations

from isqaflow.suites.base import ModelRule, Suite

#: the metrics and the feedback model whose known-answer controls the suite writes (its control
#: records' ``instrument``)
QAGS = "QAGS"
QUESTEVAL = "QuestEval"
FEEDBACK_MODEL = "feedback model"

SUITE = Suite(
    name="isqa",
    title="ISQA summaries",
    instruments=(QAGS, QUESTEVAL, FEEDBACK_MODEL),
    rules=(
        ModelRule(
            "baseline_summaries",
            "results/summaries/{dataset}/{summarizer}/baseline.jsonl",
            "{dataset}/{summarizer}",
        ),
        ModelRule(
            "generic_feedback",
            "results/summaries/{dataset}/{summarizer}/generic.jsonl",
            "{dataset}/{summarizer}",
        ),
        ModelRule(
            "isqa_refine",
            "results/summaries/{dataset}/{summarizer}/isqa-{feedback}-{questions}.steps.jsonl",
            "{dataset}/{summarizer}/{feedback}-{questions}",
        ),
    ),
    tables=(
        "table1",
        "table2",
        "table3",
        "table4",
        "oracle",
        "feedback_stats",
        "appendix_questeval_v024",
        "ppi",
    ),
    # summaries first: the run's targets list them before the tables
    target_functions=("summary_targets", "metrics_targets"),
    validity_functions=("metric_validity_files", "feedback_validity_files"),
    # the summaries' QAGS, QuestEval and ROUGE, then their DRFR and win rate against the abstract:
    # ISQA's columns (its rows, its section), though read from DRFR's and the arena's tables
    # (drfr_summaries_long, arena_summaries: those suites' board_tables)
    board_builders=(
        "isqaflow.report.leaderboard_columns:metric_columns",
        "isqaflow.report.leaderboard_columns:summary_judge_columns",
    ),
    # after DRFR's and the arena's columns (places 1, 2), as the board has always had them:
    # first in the registry (its jobs and targets come first), not on the board
    board_place=3,
    # its model jobs, its config section's checker and its API stages' call formulas (rule ->
    # formula; the suite takes its own rules'), each where it may import what it needs
    jobs="isqaflow.grid:isqa_jobs",
    config_check="isqaflow.configcheck.sections:check_isqa",
    spend_planners=("isqaflow.spend.summaries:PLANNERS",),
)
