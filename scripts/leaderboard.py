"""One leaderboard across the suites (rule leaderboard)."""

from pathlib import Path

from isqaflow.report.leaderboard import LeaderboardSettings, build_leaderboard
from isqaflow.runtime import job

with job(snakemake):
    build_leaderboard(
        Path(snakemake.output.tables[0]).with_suffix(""),
        drfr_table5=snakemake.input.drfr_table5,
        drfr_summaries=snakemake.input.drfr_summaries,
        arena_win_rates=snakemake.input.arena_win_rates,
        arena_ratings=snakemake.input.arena_ratings,
        arena_summaries=snakemake.input.arena_summaries,
        arena_length_controlled=snakemake.input.arena_length_controlled,
        score_paths=snakemake.input.scores,
        validity_summary_path=snakemake.input.validity,
        systems_path=snakemake.input.systems[0] if snakemake.input.systems else None,
        settings=LeaderboardSettings.from_rule(snakemake.params, snakemake.wildcards),
        panel_path=snakemake.input.panel,
        panel_loo_path=snakemake.input.panel_loo,
        front_path=snakemake.output.front,
    )
