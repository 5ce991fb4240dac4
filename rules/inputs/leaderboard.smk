"""Input functions of the leaderboard rule (rules/leaderboard.smk)."""

LEADERBOARD = [f"results/tables/leaderboard.{ext}" for ext in ("csv", "md", "tex")]
# report/workflow.rst names it too (Snakemake renders that file before any rule is known)
FRONT_PAGE = "results/report/at_a_glance.html"


def leaderboard_score_files():
    """The metrics of every judged (dataset, summarizer) pair and of every file-based summarizer."""
    return [
        f"results/metrics/{d}/{s}/scores.jsonl"
        for d, s in isqa_pairs() + file_summary_pairs()
    ]


def leaderboard_summary_systems():
    """ "<dataset>/<summarizer>" -> the systems whose final summaries the leaderboard lists."""
    return {
        f"{d}/{s}": judged_summary_systems(d, s)
        for d, s in isqa_pairs() + file_summary_pairs()
    }


def leaderboard_tables():
    """Table name -> its CSV: the tables the leaderboard reads (isqaflow.suites: board_tables) of
    every registered suite in the run -- one whose targets are not empty."""
    return {
        name: f"results/tables/{name}.csv"
        for entry in SUITES
        if collect_suites("target_functions", globals(), [entry])
        for name in entry.board_tables
    }
