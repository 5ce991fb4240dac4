"""Self-preference, judge noise, canaries and the judge panel (rule judge_audit)."""

from pathlib import Path

from isqaflow.arena.judging.judge_audit import JudgeAudit, run_judge_audit
from isqaflow.runtime import job

with job(snakemake):
    run_judge_audit(
        snakemake.params.judged,
        {
            "arena": list(snakemake.input.arena_controls),
            "drfr": list(snakemake.input.drfr_controls),
        },
        previous_manifest=snakemake.params.previous_manifest,
        tables_dir=Path(snakemake.output.tables[0]).parent,
        canaries_path=snakemake.output.canaries,
        audit=JudgeAudit.from_rule(snakemake.params, snakemake.wildcards),
        drfr_paths=snakemake.params.drfr,
        validity_summary_path=snakemake.input.validity,
    )
