"""RAG-QA Arena: answers from retrieved passages, judged in pairs against each other and rated;
the judges also rate ISQA's summaries (isqaflow.arena; rules/arena/arena.smk)."""

from __future__ import annotations

from isqaflow.suites.base import ModelRule, Suite

#: the judge whose known-answer controls the suite writes (its control records' ``instrument``)
JUDGE = "arena judge"

SUITE = Suite(
    name="arena",
    title="RAG-QA Arena",
    instruments=(JUDGE,),
    rules=(
        ModelRule(
            "rag_answers",
            "results/arena/answers/{retriever}-k{k}/{answerer}.jsonl",
            "{retriever}-k{k}/{answerer}",
        ),
        ModelRule(
            "arena_judge",
            "results/arena/judgments/{retriever}-k{k}/{judge}.jsonl",
            "{retriever}-k{k}/{judge}",
        ),
        ModelRule("arena_judge_checks", "results/validity/arena/{judge}.jsonl", "{judge}"),
        ModelRule(
            "arena_summaries",
            "results/arena/summaries/{dataset}/{summarizer}.{judge}.jsonl",
            "{dataset}/{summarizer}.{judge}",
        ),
    ),
    tables=(
        "win_rates",
        "ratings",
        "position_consistency",
        "no_answer",
        "retrieval",
        "agreement",
        "summaries",
        "length_controlled",
        "length_bias",
        "ppi",
    ),
    target_functions=("arena_targets",),
    validity_functions=("arena_validity_files",),
    systems=("arena", "answerers"),
    judges=("arena", "judges"),
    # win rates against LFRQA, ratings, the summaries' win rate against the abstract and the
    # soft preferences' LC win rates (the peers' AlpacaEval annotations)
    board_tables=("arena_win_rates", "arena_ratings", "arena_summaries", "arena_length_controlled"),
    ranked=("Bradley-Terry",),
    # win rates against LFRQA and ratings, then the soft preferences' win and LC win rates
    # against their benchmark's baseline (the arena's LC table: its rows, its settings)
    board_builders=(
        "isqaflow.report.leaderboard_columns:arena_columns",
        "isqaflow.report.leaderboard_columns:soft_preference_columns",
    ),
    board_place=2,
    browser="results/browser/arena.html",
    # its tables' blocks are settings "<retriever>-k<k>.<judge>" (the peers': "peers.<entry>")
    block="setting",
    # its model jobs, its config section's checker and its API stages' call formulas (rule ->
    # formula; the suite takes its own rules'), each where it may import what it needs
    jobs="isqaflow.grid:arena_jobs",
    config_check="isqaflow.configcheck.sections:check_arena",
    spend_planners=("isqaflow.spend.stages:PLANNERS", "isqaflow.spend.summaries:PLANNERS"),
)
