"""One's own answers from a file, checked, as a setting's answers file (rule file_answers)."""

from isqaflow.arena.file_answers import run_file_answers
from isqaflow.runtime import job

with job(snakemake):
    run_file_answers(
        snakemake.input.queries,
        list(snakemake.input.system),
        snakemake.output.answers,
        snakemake.output.check,
        answerer=snakemake.wildcards.answerer,
        retriever=snakemake.wildcards.retriever,
        k=int(snakemake.wildcards.k),
        fmt=snakemake.params.options["format"],
        coverage=snakemake.params.options["coverage"],
        process=snakemake.params.options["process_response"],
        name=snakemake.params.options["file"],
    )
