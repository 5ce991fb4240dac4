"""isqaflow.spend.figures: a dry run's jobs read back, tabulated, and the docs' block replaced."""

from __future__ import annotations

import pytest

from isqaflow.spend import figures

DRY_RUN = """
Building DAG of jobs...
[Wed Dec  2 00:00:00 2026]
localrule download:
    output: resources/a
    jobid: 3
    wildcards: name=a
    resources: tmpdir=<TBD>, mem_mb=1000, gpu=0

[Wed Dec  2 00:00:00 2026]
rule fetch_weights:
    output: resources/models/vicuna
    jobid: 4
    wildcards: model=vicuna
    resources: tmpdir=<TBD>, mem_mb=1000

[Wed Dec  2 00:00:00 2026]
rule isqa_refine:
    output: results/x
    jobid: 5
    wildcards: run=r1
    threads: 8
    resources: tmpdir=<TBD>, mem_mb=64000, gpu=2

[Wed Dec  2 00:00:00 2026]
rule isqa_refine:
    output: results/y
    jobid: 6
    wildcards: run=r2
    threads: 8
    resources: tmpdir=<TBD>, mem_mb=8000, gpu=0

[Wed Dec  2 00:00:00 2026]
localrule all:
    input: results/x
    jobid: 0
"""


def test_a_dry_runs_jobs_are_read_and_tabulated_by_where_they_run():
    jobs = figures.parse_dry_run(DRY_RUN)
    assert [j["rule"] for j in jobs] == ["download", "fetch_weights", "isqa_refine", "isqa_refine"]
    assert jobs[2]["threads"] == 8 and jobs[2]["resources"]["gpu"] == 2
    assert figures.fetched(jobs) == ["vicuna"]
    # fetch_weights is a localrule Snakemake's API names; the dry run does not mark it
    table, totals = figures.job_table(jobs, {"fetch_weights"})
    assert totals == {"jobs": 4, "submit_host": 2, "gpu_jobs": 1, "gpus": 2}
    assert table.splitlines()[2:] == [
        "| download | 1 | submit host 1 | 0 (0) | 1 |",
        "| fetch_weights | 1 | submit host 1 | 0 (0) | 1 |",
        "| isqa_refine | 2 | cpu 1, gpu 1 | 1 (2) | 8 |",
    ]


def test_weights_are_the_declared_parameters_at_16_bits_and_the_unsized_are_named():
    config = {
        "models": {
            "a": {"gpu": {"parameters": 7e9}},
            "b": {"gpu": {"memory_gb": 3.5}},
            "c": {},
        }
    }
    assert figures.weights_gb(config, ["a", "b", "c", "retriever-x"]) == (
        pytest.approx(17.5),
        ["c", "retriever-x"],
    )


def test_the_block_between_the_markers_is_replaced_and_read_back():
    doc = f"intro\n{figures.START}\nold\n{figures.END}\nrest\n"
    new = f"{figures.START}\nnew\n{figures.END}"
    assert figures.replace_block(doc, new) == f"intro\n{new}\nrest\n"
    assert figures.current_block(figures.replace_block(doc, new)) == new
    with pytest.raises(ValueError, match="exactly one"):
        figures.replace_block("no markers", new)
