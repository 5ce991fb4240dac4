"""Every DRFR judgment on one static page -> results/browser/drfr.html (rule drfr_browser)."""

from isqaflow.drfr.browse import run_drfr_browser
from isqaflow.runtime import job

with job(snakemake):
    run_drfr_browser(
        snakemake.output.page,
        snakemake.params.datasets,
        snakemake.params.rules,
        summary_sets=snakemake.params.summaries,
    )
