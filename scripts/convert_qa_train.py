"""Raw HotpotQA files -> QA-with-evidence examples (rule convert_qa_train)."""

from isqaflow.data.convert import write_qa_examples
from isqaflow.runtime import job

with job(snakemake):
    write_qa_examples(
        snakemake.input.raw,
        snakemake.output.examples,
        lenient=snakemake.params.lenient,
        held_out_from=snakemake.input.train,
    )
