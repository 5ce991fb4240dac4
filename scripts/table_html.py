"""A table's Markdown as an HTML page the report shows inline (rule table_html)."""

from isqaflow.report.table_html import render_table_file
from isqaflow.runtime import job

with job(snakemake):
    render_table_file(snakemake.input.table, snakemake.output.page, snakemake.wildcards.table)
