"""The rules' ``benchmark:`` files are outputs of the run: under results/benchmarks/<rule>/,
apart from the benchmark scripts in benchmarks/ (issue 27).

A dry run (``-n --forceall``, nothing computed) of the embedded default lists every job's
benchmark file; each must lie under ``results/benchmarks/<its rule>/``.  Every ``benchmark:``
directive of rules/ names its file through ``benchmark_file`` (rules/common.smk), the one
place of that path.
"""

from __future__ import annotations

import re

from workflow_utils import REPO, copy_repo, snakemake


def test_every_jobs_benchmark_file_is_under_results(tmp_path):
    workdir = copy_repo(tmp_path)
    result = snakemake(workdir, "-n", "--forceall", "--cores", "2", timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    found = []
    for block in re.split(r"\n(?:local)?rule ", result.stdout + result.stderr)[1:]:
        rule = block.split(":", 1)[0].strip()
        bench = re.search(r"^\s+benchmark: (\S+)$", block, re.MULTILINE)
        if bench:
            found.append((rule, bench.group(1)))
    assert len({rule for rule, _ in found}) >= 10, found  # the costly stages of the embedded DAG
    for rule, path in found:
        # retrieve_colbert is the ColBERT alternative of retrieve: one benchmark file per output
        assert path.startswith(f"results/benchmarks/{rule.removesuffix('_colbert')}/"), (rule, path)
        assert path.endswith(".tsv"), (rule, path)


def test_every_benchmark_directive_names_its_file_through_the_one_helper():
    directives = []
    for path in sorted((REPO / "rules").rglob("*.smk")):
        text = path.read_text()
        directives += [
            (path.name, m.group(1)) for m in re.finditer(r"\n    benchmark:\n\s+(.*)", text)
        ]
    assert directives
    for name, value in directives:
        assert value.startswith("benchmark_file("), (name, value)
