"""The paper-scale grid (config/paper.yaml) plans the job counts its experiments imply.

A dry run: nothing is downloaded or computed.  The one dataset no rule can fetch
(SciMRC, hosted where no script reaches) is faked by an empty stub at its path, and
the API models' key variable by a placeholder (the workflow refuses to plan a run
whose API key is unset).
"""

from __future__ import annotations

import re

import pytest
from workflow_utils import copy_repo, dry_run_jobs

DATASETS, SUMMARIZERS, ISQA_RUNS = 2, 3, 5
DOMAINS, RETRIEVERS = 6, 2  # BM25 and MiniLM through rule retrieve; ColBERTv2 through its own rules
EXPECTED = {
    # data: 12 pinned files (QASPER archive, 2 HotpotQA files, InFoBench, 6 LFRQA files,
    # LoTTE and FiQA archives); 8 archive members (2 QASPER splits, 5 LoTTE domains, FiQA)
    "download": 18,  # 14 data files (2 of Arena-Hard-Auto) + 4 published judge-prompt files
    "extract": 8,
    "convert_papers": DATASETS,
    "convert_qa_train": 2,
    "convert_instructions": 1,
    "convert_rag": DOMAINS,
    # Hub weights, one fetch per local model the run uses: the 3 ISQA summarizers (Vicuna-7B
    # also the feedback model's base), the QG and QA metric models, the 2 InFoBench-only
    # responders, the arena's 8 open answerers (the QuestEval weighter is off) and ColBERTv2
    "fetch_weights": 16,
    # feedback model
    "finetune_feedback": 1,
    "evaluate_feedback": 1,
    # one server per serving engine and one in-process model, before every GPU job
    "gpu_smoke": 1,
    # ISQA: per dataset x summarizer; 5 (feedback model, question source) runs each
    "generate_questions": DATASETS,
    "baseline_summaries": DATASETS * SUMMARIZERS,
    "generic_feedback": DATASETS * SUMMARIZERS,
    "isqa_refine": DATASETS * SUMMARIZERS * ISQA_RUNS,
    "score_summaries": DATASETS * SUMMARIZERS,
    "metric_controls": DATASETS,  # QAGS/QuestEval known-answer controls, one job per dataset
    "human_eval_sheets": DATASETS * SUMMARIZERS,
    "isqa_tables": 1,
    # InFoBench: 8 responders (the paper's 4 that are not retired or closed elsewhere + 4), 1 judge;
    # the judge also reads every ISQA summary set
    "drfr_responses": 8,
    "drfr_judge": 1,
    "drfr_summaries": DATASETS * SUMMARIZERS,
    "drfr_tables": 1,
    # RAG-QA Arena: 6 domains x 3 retrievers; answers: the paper's 11 (colbert, k5: the paper's
    # setting) + its top 3 (colbert, k10: Table 10) + 4 (bm25, k5) + 4 (dense, k5)
    "retrieve": DOMAINS * RETRIEVERS,
    "colbert_index": DOMAINS,  # one PLAID index per domain
    "retrieve_colbert": DOMAINS,
    "rag_answers": 11 + 3 + 4 + 4,
    "arena_judge": 4,
    "arena_judge_checks": 1,  # the GPT-4 judge's known-answer controls
    "arena_summaries": DATASETS * SUMMARIZERS,
    "arena_tables": 1,
    # Arena-Hard-Auto v0.1: 2 open answerers, the GPT-4-Turbo judge (its controls in its job)
    "arena_hard_answers": 2,
    "arena_hard_judge": 1,
    "arena_hard_style_counts": 1,  # style control's token counts (llama3-8b's tokenizer)
    "arena_hard_browser": 1,  # every judgment on a page
    "arena_hard_tables": 1,
    "validity_table": 1,
    "leaderboard": 1,  # one table across the suites (no file-based system: no check_systems job)
    # every judgment on a page per judged suite; the paired tests between systems; every table's
    # Markdown as HTML for the report, all 30 pages in one job (7 ISQA + 4 DRFR + 9 arena tables,
    # the leaderboard, the validity table, the paired tests and their matrix, and the 6 judges'
    # audit tables; tests/workflow/test_workflow.py checks every page of the embedded run)
    "arena_browser": 1,
    "drfr_browser": 1,
    "paired_tests": 1,
    "table_html": 1,
    "judge_audit": 1,  # self-preference, judge noise, canaries, the panel
    "manifest": 1,
    "all": 1,
}


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "placeholder-for-a-dry-run")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    workdir = copy_repo(tmp_path_factory.mktemp("paper"))
    stub = workdir / "resources/local/scimrc/scimrc_train_dev.json"
    stub.parent.mkdir(parents=True)
    stub.write_text("[]\n")
    return workdir


def test_paper_grid_job_counts(workdir):
    assert dry_run_jobs(workdir, "--configfile", "config/paper.yaml") == EXPECTED


def test_paper_grid_requests_gpus_for_model_stages_only(workdir):
    from workflow_utils import snakemake

    result = snakemake(
        workdir, "-n", "--cores", "2", "--configfile", "config/paper.yaml", timeout=300
    )
    text = result.stdout + result.stderr
    blocks = text.split("\nrule ")[1:] + text.split("\nlocalrule ")[1:]
    gpu = {}
    for block in blocks:
        rule = block.split(":", 1)[0].strip()
        resources = next(
            (line for line in block.splitlines() if line.strip().startswith("resources:")), ""
        )
        gpu.setdefault(rule, set()).add("gpu=1" in resources)
        inputs = next(
            (line for line in block.splitlines() if line.strip().startswith("input:")), ""
        )
        # every GPU job waits for the GPU smoke job, and only GPU jobs do
        if rule not in ("gpu_smoke", "all"):
            assert ("results/gpu_smoke.json" in inputs) == bool(
                re.search(r"\bgpu=[1-9]", resources)
            ), (rule, resources, inputs)
    assert gpu["gpu_smoke"] == {True}
    assert gpu["finetune_feedback"] == {True}
    assert gpu["baseline_summaries"] == {True}
    assert gpu["isqa_refine"] == {True}  # every run has a local model on board
    assert gpu["drfr_judge"] == {False}  # GPT-4 behind the API
    assert gpu["drfr_responses"] == {True, False}  # local pool models and GPT-3.5
    assert gpu["retrieve"] == {True, False}  # dense embeds on a GPU, BM25 does not
    assert gpu["colbert_index"] == gpu["retrieve_colbert"] == {True}  # ColBERTv2 encodes on a GPU
    for rule in (
        "download",
        "convert_papers",
        "isqa_tables",
        "drfr_tables",
        "arena_tables",
        "manifest",
    ):
        assert gpu[rule] == {False}, rule


def test_the_dry_run_names_the_retired_snapshots_and_what_it_could_not_check(workdir):
    """Before any job: the paper's retired snapshots by name, with the docs' substitute, and the
    model list it could not read (a placeholder key: OpenAI refuses it, or there is no network)."""
    from workflow_utils import snakemake

    from isqaflow.models.api.model_lists import RETIRED

    result = snakemake(
        workdir, "-n", "--cores", "2", "--configfile", "config/paper.yaml", timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    block = result.stderr.split("API models (isqaflow.models.api.model_lists):\n", 1)[1]
    lines = [line.strip() for line in block.splitlines()]
    for model, substitute in RETIRED.items():
        assert any(
            f"{model!r} is a retired OpenAI snapshot; the docs' substitute: {substitute!r}" in line
            for line in lines
        ), model
    assert any(
        line.startswith("not checked against the model list of https://api.openai.com/v1: ")
        for line in lines
    )
    assert "placeholder-for-a-dry-run" not in result.stderr
