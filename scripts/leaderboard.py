"""One leaderboard across the suites (rule leaderboard)."""

from pathlib import Path

from isqaflow.report.leaderboard import LeaderboardSettings, board_inputs, build_leaderboard
from isqaflow.runtime import job

with job(snakemake):
    build_leaderboard(
        Path(snakemake.output.tables[0]).with_suffix(""),
        tables=board_inputs(snakemake.input),
        score_paths=snakemake.input.scores,
        validity_summary_path=snakemake.input.validity,
        systems_path=snakemake.input.systems[0] if snakemake.input.systems else None,
        settings=LeaderboardSettings.from_rule(snakemake.params, snakemake.wildcards),
        panel_path=snakemake.input.panel,
        panel_loo_path=snakemake.input.panel_loo,
        front_path=snakemake.output.front,
    )
