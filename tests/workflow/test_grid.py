"""One grid (isqaflow.grid): Snakemake's DAG and the grid list the same model-stage jobs.

Dry runs (``-n --forceall``, nothing computed) of a few config variations: the embedded
default (with its file-based answerer, responder and summaries), the paper grid
(config/paper.yaml, with the SciMRC stub and a placeholder API key as in
tests/workflow/test_paper_grid.py), the paper grid with an ISQA run narrowed to one dataset and one
summarizer and an arena run with ``answerers: []``, and the embedded default with
``answerers: []``.  For each, the jobs of every model-stage rule of the DAG (rule, wildcards,
first output) equal :func:`isqaflow.grid.jobs`, and the GPU plan's jobs
(:func:`isqaflow.models.planning.gpu_plan.grid_jobs`, what the serving check plans) are the same jobs.
Then unit tests of the grid on constructed configs (no Snakemake).
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from pathlib import Path

import pytest
import yaml
from workflow_utils import REPO, copy_repo, snakemake

from isqaflow import grid
from isqaflow.models.planning.gpu_plan import grid_jobs, plan_grid

EMBEDDED = yaml.safe_load((REPO / "config/config.yaml").read_text())
PAPER = yaml.safe_load((REPO / "config/paper.yaml").read_text())


def narrowed(config: dict) -> dict:
    """The paper grid with its ISQA run of generated questions and the LoRA feedback model on one
    dataset and one summarizer and its last arena run without answerers (the two live
    mismatches of issue 27)."""
    config = copy.deepcopy(config)
    config["isqa"]["runs"][1].update(datasets=["qasper"], summarizers=["vicuna-7b"])
    config["arena"]["runs"][-1]["answerers"] = []
    return config


def no_answerers(config: dict) -> dict:
    config = copy.deepcopy(config)
    config["arena"]["runs"][0]["answerers"] = []
    return config


VARIATIONS = {
    "embedded": EMBEDDED,
    "embedded-no-answerers": no_answerers(EMBEDDED),
    "paper": PAPER,
    "paper-narrowed": narrowed(PAPER),
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    workdir = copy_repo(tmp_path_factory.mktemp("grid"))
    stub = workdir / "resources/local/scimrc/scimrc_train_dev.json"
    stub.parent.mkdir(parents=True)
    stub.write_text("[]\n")
    for name, config in VARIATIONS.items():
        (workdir / f"config/grid-{name}.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return workdir


def dag_jobs(workdir: Path, configfile: str) -> set[tuple[str, frozenset, str]]:
    """(rule, wildcards, first output) of every job of a model-stage rule in the dry run."""
    result = snakemake(
        workdir, "-n", "--forceall", "--cores", "2", "--configfile", configfile, timeout=300
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    jobs = set()
    for block in re.split(r"\n(?:local)?rule ", result.stdout + result.stderr)[1:]:
        rule = block.split(":", 1)[0].strip()
        if rule not in grid.MODEL_RULES:
            continue
        output = re.search(r"^\s+output: ([^,\n]+)", block, re.MULTILINE).group(1)
        found = re.search(r"^\s+wildcards: (.*)$", block, re.MULTILINE)
        wildcards = (
            frozenset(tuple(item.split("=", 1)) for item in found.group(1).split(", "))
            if found
            else frozenset()
        )
        jobs.add((rule, wildcards, output))
    return jobs


@pytest.mark.parametrize("name", list(VARIATIONS))
def test_the_dag_and_the_grid_list_the_same_model_jobs(workdir, monkeypatch, name):
    monkeypatch.setenv("OPENAI_API_KEY", "placeholder-for-a-dry-run")
    config = VARIATIONS[name]
    dag = dag_jobs(workdir, f"config/grid-{name}.yaml")
    listed = grid.jobs(config)
    assert len(listed) == len({job.label for job in listed})  # no two jobs share a label
    ours = {(job.rule, frozenset(job.wildcards), job.output) for job in listed}
    assert sorted(dag - ours) == [] and sorted(ours - dag) == []
    # the GPU plan sizes exactly these jobs, rule by rule
    planned = Counter(label.split(" ", 1)[0] for label in grid_jobs(config))
    assert planned == Counter(rule for rule, _, _ in dag)


def test_narrowed_isqa_runs_and_runs_without_answerers_are_planned_as_the_rules_make_them():
    """Issue 27's two mismatches, on the plan itself: one isqa_refine job (not six) for the
    narrowed run; no rag_answers job for the run without answerers."""
    before, after = plan_grid(PAPER), plan_grid(narrowed(PAPER))
    refine = [
        job for job in after if job.startswith("isqa_refine ") and job.endswith("/lora-generated")
    ]
    assert refine == ["isqa_refine qasper/vicuna-7b/lora-generated"]
    assert [job for job in after if job.startswith("rag_answers dense-k5/")] == []
    assert (
        len([job for job in before if job.startswith("rag_answers dense-k5/")]) == 4
    )  # gpt4o by API: 0 GPUs


# ----------------------------------------------------------------------------- the grid, unit


def small_config(**changes) -> dict:
    config = {
        "models": {"m": {"model": "x/m"}, "api": {"backend": "openai", "model": "gpt"}},
        "isqa": {
            "datasets": ["d1", "d2"],
            "summarizers": ["m", "api"],
            "feedback_models": {"fb": {"model": "m", "adapter": "a"}},
            "runs": [
                {"feedback": "fb", "questions": "human"},
                {
                    "feedback": "fb",
                    "questions": "generated",
                    "datasets": ["d2"],
                    "summarizers": ["m"],
                },
            ],
        },
        "drfr": {
            "datasets": ["ifb"],
            "responders": {"m": {"model": "m"}, "mine": {"file": "r.json"}},
            "judges": {"j": {"model": "api"}},
        },
        "arena": {
            "answerers": {"m": {"model": "m"}, "mine": {"file": "a.jsonl"}},
            "runs": [
                {"retriever": "bm25", "k": 5},
                {"retriever": "dense", "k": 3, "answerers": []},
            ],
            "judges": {"j": {"model": "api"}},
        },
        "validity": {"arena": {"controls": ["swap"], "per_domain": 2}},
        "datasets": {"rag": {}},
    }
    config.update(changes)
    return config


def by_rule(config: dict) -> Counter:
    return Counter(job.rule for job in grid.jobs(config))


def test_the_jobs_of_a_small_config():
    assert by_rule(small_config()) == {
        "baseline_summaries": 4,
        "generic_feedback": 4,
        "isqa_refine": 4 + 1,  # the first run on every pair, the second narrowed to d2/m
        "drfr_responses": 1,  # the file-based responder holds no model
        "drfr_judge": 1,
        "drfr_summaries": 4,
        "rag_answers": 1,  # bm25: the model answerer (the file one is imported); dense: none
        "arena_judge": 2,
        "arena_judge_checks": 1,
        "arena_summaries": 4,
    }


def test_a_job_names_its_wildcards_models_and_output():
    listed = grid.jobs(small_config())
    job = grid.find(
        listed,
        "isqa_refine",
        {"dataset": "d2", "summarizer": "m", "feedback": "fb", "questions": "generated"},
    )
    assert job.label == "isqa_refine d2/m/fb-generated"
    assert job.output == "results/summaries/d2/m/isqa-fb-generated.steps.jsonl"
    assert job.models == (
        grid.ModelRef("summarizer", "m", "isqa.summary_generation"),
        grid.ModelRef("feedback", "m", "isqa.feedback_generation", "a"),
    )
    answers = grid.find(listed, "rag_answers", {"retriever": "bm25", "k": 5, "answerer": "m"})
    assert (
        answers.wildcard("k") == "5" and answers.output == "results/arena/answers/bm25-k5/m.jsonl"
    )
    with pytest.raises(KeyError, match="no isqa_refine job with wildcards"):
        grid.find(
            listed,
            "isqa_refine",
            {"dataset": "d1", "summarizer": "m", "feedback": "fb", "questions": "generated"},
        )


def test_judged_file_summaries_and_the_checks_follow_the_config():
    config = small_config()
    config["isqa"]["file_summaries"] = {
        "own": {"file": "s.jsonl", "dataset": "d1"},
        "other": {"file": "t.jsonl", "dataset": "d2"},
    }
    assert by_rule(config)["drfr_summaries"] == 4 + 2
    config["isqa"]["judged_systems"] = ["baseline_2", "own"]
    judged = [job.label for job in grid.jobs(config) if job.rule == "arena_summaries"]
    assert "arena_summaries d1/own.j" in judged and "arena_summaries d2/other.j" not in judged
    config["validity"]["arena"]["controls"] = []
    assert by_rule(config)["arena_judge_checks"] == 0
    config["datasets"]["rag"]["human_labels"] = "labels.csv"  # the job also judges the human pairs
    assert by_rule(config)["arena_judge_checks"] == 1


def test_an_empty_config_makes_no_job():
    assert grid.jobs({}) == []


def test_setting_reads_a_dotted_path():
    config = {"isqa": {"summary_generation": {"max_new_tokens": 5}}}
    assert grid.setting(config, "isqa.summary_generation") == {"max_new_tokens": 5}
    assert grid.setting(config, "drfr.generation") is None
    assert grid.setting(config, None) is None


def test_the_serving_check_checks_only_the_models_of_the_grids_jobs():
    """An answerer that no arena run lists makes no job: its decoding is not checked (the check
    named the API answerers before, and a config failed over jobs that never run)."""
    from isqaflow.models.planning.servecheck import check_serving

    config = copy.deepcopy(PAPER)
    config["arena"]["generation"]["no_repeat_ngram_size"] = 3  # neither vLLM nor an API honours it
    api = {"gpt4o", "gpt4-turbo", "gpt4-0125"}
    flagged = {m.split()[1] for p, m in check_serving(config) if p == "arena.generation"}
    assert api < flagged
    every = list(config["arena"]["answerers"])
    for run in config["arena"]["runs"]:
        run["answerers"] = [a for a in run.get("answerers", every) if a not in api]
    flagged = {m.split()[1] for p, m in check_serving(config) if p == "arena.generation"}
    assert flagged == {a for a in every if a not in api}
