"""Every table's Markdown as an HTML page the report shows inline (rule table_html: one job for
all the pages; input and output are named by table)."""

from isqaflow.report.table_html import render_table_files
from isqaflow.runtime import job

with job(snakemake):
    render_table_files(dict(snakemake.input.items()), dict(snakemake.output.items()))
