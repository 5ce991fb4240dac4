"""benchmarks/gpu_hours.py: its GPU jobs are the dry run's, and docs/paper-scale.md prints its table."""

from __future__ import annotations

import importlib.util
import re
import sys
from collections import defaultdict

import pytest
import yaml
from workflow_utils import REPO, copy_repo, snakemake

from isqaflow.spend.gpu_hours import rag_queries

DOC = REPO / "docs" / "paper-scale.md"
MARKER = "<!-- gpu-hours-table -->"


def load_script():
    spec = importlib.util.spec_from_file_location("gpu_hours", REPO / "benchmarks" / "gpu_hours.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def paper():
    return yaml.safe_load((REPO / "config" / "paper.yaml").read_text())


def test_gpu_jobs_equal_the_dry_runs(tmp_path, monkeypatch, paper):
    monkeypatch.setenv("OPENAI_API_KEY", "placeholder-for-a-dry-run")
    workdir = copy_repo(tmp_path / "paper")
    stub = workdir / "resources/local/scimrc/scimrc_train_dev.json"
    stub.parent.mkdir(parents=True)
    stub.write_text("[]\n")
    result = snakemake(
        workdir, "-n", "--cores", "2", "--configfile", "config/paper.yaml", timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    dry = defaultdict(list)
    for block in (result.stdout + result.stderr).split("\nrule ")[1:]:
        rule = block.split(":", 1)[0].strip()
        gpus = re.search(r"^\s*resources:.*\bgpu=(\d+)", block, re.MULTILINE)
        if gpus and int(gpus.group(1)):
            dry[rule].append(int(gpus.group(1)))
    script = {
        rule: sorted(job.gpus for job in jobs)
        for rule, jobs in load_script().gpu_jobs(paper).items()
    }
    assert script == {rule: sorted(gpus) for rule, gpus in dry.items()}
    # the GPU smoke job among them (one GPU): every other GPU job waits for it
    # Arena-Hard-Auto's 2 answerers: +2 GPU jobs, +3 GPUs
    assert sum(map(len, script.values())) == 96 and sum(map(sum, script.values())) == 131


def test_the_doc_prints_the_scripts_table(paper):
    text, _ = load_script().table(paper)
    doc = DOC.read_text()
    assert MARKER in doc
    block = doc.split(MARKER, 1)[1].lstrip("\n")
    lines = []
    for line in block.splitlines():
        if not line.startswith("|"):
            break
        lines.append(line)
    assert "\n".join(lines) + "\n" == text, "regenerate with: python benchmarks/gpu_hours.py"


def test_totals_add_up_the_rows(paper):
    script = load_script()
    text, totals = script.table(paper)
    rules = script.gpu_jobs(paper)
    assert totals["jobs"] == sum(map(len, rules.values()))
    assert totals["gpus"] == sum(j.gpus for jobs in rules.values() for j in jobs)
    jobs = [j for js in rules.values() for j in js]
    # GPU hours are GPUs x hours per job; a job's start-up counts on every GPU it holds
    assert totals["startup"] == pytest.approx(sum(j.gpus * j.startup_min / 60 for j in jobs))
    mixtral = next(j for j in rules["rag_answers"] if j.name.endswith("/mixtral-8x22b"))
    assert mixtral.gpus == 8 and mixtral.gpu_hours == pytest.approx(
        8 * (mixtral.hours + mixtral.startup_min / 60)
    )
    assert (
        mixtral.tokens
        == rag_queries(paper) * paper["arena"]["generation"]["max_new_tokens"]
        == 14020 * 512
    )
    assert "**total** | 96 | 131 GPUs" in text  # Arena-Hard-Auto's 2 answerers: +2 jobs, +3 GPUs


def test_every_gpu_hour_assumption_is_labelled_with_its_source(paper):
    """Each figure the estimate rests on says whether it was measured (on the CPU engine,
    scaled), published, or assumed; every row of the table says which its figure is."""
    from isqaflow.spend import gpu_hours

    constants = {
        name
        for name, value in vars(gpu_hours).items()
        if name.isupper()
        and isinstance(value, (int, float, dict, tuple))
        and name not in ("ASSUMPTIONS", "SOURCE_KINDS", "ORDER", "ANSWERING")
    }
    assert constants == set(gpu_hours.ASSUMPTIONS)
    assert set(gpu_hours.ASSUMPTIONS.values()) <= set(gpu_hours.SOURCE_KINDS)
    text, _ = gpu_hours.table(paper)
    rows = [line.split(" | ") for line in text.splitlines()[2:-1]]
    assert rows
    for row in rows:
        assert row[-1].startswith(gpu_hours.SOURCE_KINDS), row
    beams = [row for row in rows if "2 beams, " in row[4]]
    assert beams and all(row[-1].startswith("assumed: (c)") for row in beams)  # not measured yet
    assert "start-up assumed" in text.splitlines()[-1]


def test_gpus_idle_behind_api_feedback_calls_are_counted(paper):
    """The 12 ISQA runs with GPT-3.5 feedback hold their summarizer's GPU while the API answers:
    calls (steps x batch per paper) / concurrency x the assumed seconds a call, per GPU."""
    from isqaflow.spend import gpu_hours

    refine = paper["isqa"]["refine"]
    jobs = gpu_hours.gpu_jobs(paper)["isqa_refine"]
    idle = [j for j in jobs if j.idle[1]]
    assert len(idle) == 12  # the GPT-3.5 feedback runs; local feedback runs do not wait
    concurrency = paper["models"]["gpt35"]["concurrency"]
    for job in idle:
        dataset = job.name.split(" ", 1)[1].split("/")[0]
        calls = refine["steps"] * refine["batch_size"] * gpu_hours.papers(paper, dataset)
        low, high = gpu_hours.API_CALL_SECONDS
        assert job.idle == pytest.approx(
            (calls / concurrency * low / 3600, calls / concurrency * high / 3600)
        )
        assert job.gpu_hours_high - job.gpu_hours == pytest.approx(
            job.gpus * (job.idle[1] - job.idle[0])
        )
    _, totals = gpu_hours.table(paper)
    assert totals["idle_low"] == pytest.approx(sum(j.gpus * j.idle[0] for j in idle))
    assert totals["high"] - totals["low"] >= totals["idle_high"] - totals["idle_low"] > 0
