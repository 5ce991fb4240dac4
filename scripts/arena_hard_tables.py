"""Arena-Hard-Auto's scores against the baseline, Bradley-Terry with intervals and style control
(rules arena_hard_tables and peer_arena_hard_tables)."""

from isqaflow.arena_hard.tables import write_tables
from isqaflow.runtime import job

with job(snakemake):
    write_tables(
        list(snakemake.input.judgments),
        snakemake.params.judges,
        snakemake.input.baseline or None,  # none: the baseline is named (the peers' files)
        list(snakemake.input.answers),
        list(snakemake.input.controls),
        list(snakemake.output.tables),
        strong_weight=snakemake.params.strong_weight,
        rounds=snakemake.params.rounds,
        seed=snakemake.params.seed,
        # a list of one file, or none with style control off
        style_counts_path=next(iter(snakemake.input.style_counts), None),
        tokenizer=snakemake.params.style_tokenizer,
        formats=snakemake.params.formats,
        baseline=snakemake.params.baseline,
        style_off=snakemake.params.style_off,
        about=snakemake.params.about,
    )
