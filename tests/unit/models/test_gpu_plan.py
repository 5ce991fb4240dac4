"""The GPU plan (isqaflow.models.planning.gpu_plan) over the paper grid and on constructed jobs: no GPU needed."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from isqaflow.models.planning.gpu_plan import (
    GPUPlanError,
    ModelUse,
    grid_jobs,
    plan_grid,
    plan_job,
    plan_table,
)

REPO = Path(__file__).resolve().parents[3]
FIXTURE = json.loads((REPO / "tests/fixtures/vllm-0.33.0-interface.json").read_text())


@pytest.fixture(scope="module")
def paper() -> dict:
    return yaml.safe_load((REPO / "config/paper.yaml").read_text())


def with_gpu(config: dict, memory_gb: float) -> dict:
    config = copy.deepcopy(config)
    config["gpu_plan"]["gpu_memory_gb"] = memory_gb
    return config


def test_every_isqa_refine_job_of_the_paper_grid_fits(paper):
    plans = plan_grid(paper)
    refine = {job: plan for job, plan in plans.items() if job.startswith("isqa_refine ")}
    assert len(refine) == 30
    both_local = [
        p
        for p in refine.values()
        if len(p.servers) + len(p.in_process) == 2 or any(len(s.uses) == 2 for s in p.servers)
    ]
    assert len(both_local) == 18  # the 12 GPT-3.5 feedback runs hold the summarizer only
    for job, plan in refine.items():
        assert plan.gpus == 1, (job, plan.row())


def test_vicuna_summarizer_and_its_lora_feedback_share_one_server(paper):
    plans = plan_grid(paper)
    plan = plans["isqa_refine qasper/vicuna-7b/lora-human"]
    (server,) = plan.servers
    assert server.uses == ["summarizer", "feedback"] and server.adapters == ["vicuna-7b-hotpotqa"]
    assert server.max_model_len == 2048 + 200  # the summaries' longest input + output
    # a different summarizer next to the Vicuna feedback model: two servers on the one GPU
    two = plans["isqa_refine qasper/llama2-7b-chat/lora-human"]
    assert [s.names for s in two.servers] == [["llama2-7b-chat"], ["vicuna-7b"]]
    assert all(s.gpus == (0,) for s in two.servers)
    # Flan-T5-XXL in-process next to a served feedback model
    t5 = plans["isqa_refine qasper/flan-t5-11b/lora-human"]
    assert [m.name for m in t5.in_process] == ["flan-t5-11b"] and len(t5.servers) == 1


def test_fractions_per_gpu_never_exceed_the_total(paper):
    for memory in (40, 80, 141):
        config = with_gpu(paper, memory)
        try:
            plans = plan_grid(config)
        except GPUPlanError:
            assert memory == 40
            continue
        for job, plan in plans.items():
            for share in plan.per_gpu_utilization():
                assert share <= config["gpu_plan"]["max_utilization"] + 1e-9, (job, plan.row())
            for server in plan.servers:
                assert 0 < server.gpu_memory_utilization <= 0.90
                need = server.need_per_gpu() / memory
                assert server.gpu_memory_utilization >= need - 1e-3, (
                    job,
                    "a server got less than it needs",
                )


def test_mixtral_gets_two_gpus_of_80_gb_and_one_of_141(paper):
    for memory, gpus in ((80, 2), (141, 1)):
        plans = plan_grid(with_gpu(paper, memory))
        mixtral = [
            p
            for job, p in plans.items()
            if job.endswith("/mixtral-8x7b") or job.endswith(" mixtral-8x7b")
        ]
        # rag_answers colbert-k5, bm25-k5, dense-k5, drfr_responses and arena_hard_answers
        assert len(mixtral) == 5
        for plan in mixtral:
            (server,) = plan.servers
            assert (plan.gpus, server.tensor_parallel, server.gpus) == (
                gpus,
                gpus,
                tuple(range(gpus)),
            ), plan.row()
    drfr = plan_grid(paper)["drfr_responses infobench/mixtral-8x7b"]
    assert drfr.gpus == 2


def test_api_jobs_need_no_gpu(paper):
    plans = plan_grid(paper)
    assert (
        plans["arena_judge colbert-k5/gpt4"].gpus == 0
        and plans["drfr_judge infobench/gpt4"].gpus == 0
    )
    assert (
        plans["drfr_responses infobench/gpt35-1106"].gpus == 0
        and plans["drfr_responses infobench/gpt4-1106"].gpus == 0
    )


def test_server_flags_exist_in_vllm(paper):
    flags = set(FIXTURE["cli_flags"])
    for plan in plan_grid(paper).values():
        for server in plan.servers:
            assert {a for a in server.args() if a.startswith("--")} <= flags


def test_a_job_that_cannot_fit_fails_naming_job_models_and_memory(paper):
    config = with_gpu(paper, 24)
    config["gpu_plan"]["max_gpus"] = 2
    uses = grid_jobs(config)["rag_answers bm25-k5/mixtral-8x7b"]
    with pytest.raises(
        GPUPlanError,
        match=r"job rag_answers bm25-k5/mixtral-8x7b: its models need 8 GPUs of 24 GB, "
        r"more than max_gpus 2 \(mistralai/Mixtral-8x7B-Instruct-v0\.1 "
        r"\(mixtral-8x7b\): 93\.4 GB weights \+ 4\.8 GB KV for 8 x 4608 tokens",
    ):
        plan_job("rag_answers bm25-k5/mixtral-8x7b", uses, config)
    with pytest.raises(
        GPUPlanError, match=r"model mixtral-8x7b does not fit 8 GPUs of 12 GB at 0\.9 utilization"
    ):
        plan_job("rag_answers bm25-k5/mixtral-8x7b", uses, with_gpu(config, 12))
    config = with_gpu(paper, 80)
    config["gpu_plan"]["max_gpus"] = 1
    # the first job of the grid that needs more than one GPU: InFoBench's Llama-2-70B-chat
    with pytest.raises(
        GPUPlanError,
        match=r"job drfr_responses infobench/llama2-70b-chat: its models need 4 GPUs of 80 GB, "
        r"more than max_gpus 1",
    ):
        plan_grid(config)


def test_two_servers_that_do_not_share_a_gpu_get_their_own(paper):
    entry = dict(paper["models"]["llama3-8b"])
    other = {**entry, "model": "other/llama3-8b-finetune"}
    config = with_gpu(paper, 40)  # 16 GB of weights + 2 + KV each: two do not fit 36 GB
    uses = [
        ModelUse("summarizer", "a", entry, 8000, 192),
        ModelUse("feedback", "b", other, 8000, 192),
    ]
    plan = plan_job("job", uses, config)
    assert plan.gpus == 2 and [s.gpus for s in plan.servers] == [(0,), (1,)]
    assert [s.cuda_visible_devices("4,6") for s in plan.servers] == ["4", "6"]
    assert [s.cuda_visible_devices() for s in plan.servers] == ["0", "1"]


def test_a_model_without_sizes_is_named(paper):
    entry = {k: v for k, v in paper["models"]["llama3-8b"].items() if k != "gpu"}
    with pytest.raises(
        GPUPlanError, match=r"model x: the GPU plan needs models\.x\.gpu\.parameters"
    ):
        plan_job("job", [ModelUse("answerer", "x", entry, 100, 10)], paper)


def test_the_table_lists_every_gpu_job(paper):
    plans = plan_grid(paper)
    table = plan_table(plans)
    assert sum(1 for p in plans.values() if p.gpus) == len(table.splitlines()) - 1
    assert (
        "isqa_refine qasper/vicuna-7b/lora-human\t1\tvicuna-7b-v1.5+vicuna-7b-hotpotqa [summarizer,feedback]"
        in table
    )


def test_the_manifest_records_the_plan(paper):
    from isqaflow.report.manifest import gpu_plan_record

    record = gpu_plan_record(paper)
    # 100 GPUs: the papers' larger open models (Mixtral-8x22B 8, Llama-2-70B, Llama-3-70B,
    # Command R+ and Qwen1.5-110B 4 each, Command R 2); Arena-Hard's two answerers 1 + 2
    assert len(record) == 65 and sum(job["gpus"] for job in record) == 100
    shared = next(job for job in record if job["job"] == "isqa_refine qasper/vicuna-7b/lora-human")
    assert shared["servers"][0]["uses"] == ["summarizer", "feedback"]
    assert gpu_plan_record(yaml.safe_load((REPO / "config/config.yaml").read_text())) is None


def test_max_model_len_is_the_stage_bound_or_the_context(paper):
    """A stage that cuts its requests (max_input_tokens) bounds the server; one that does not gets the
    model's context, so vLLM never refuses a long prompt the stage sends."""
    plans = plan_grid(paper)
    (feedback,) = [
        s
        for s in plans["isqa_refine qasper/llama2-7b-chat/lora-human"].servers
        if "feedback" in s.uses
    ]
    assert feedback.max_model_len == 512 + 100
    assert plans["rag_answers bm25-k5/llama3-8b"].servers[0].max_model_len == 8192
    mixtral = plans["drfr_responses infobench/mixtral-8x7b"].servers[0]
    assert mixtral.max_model_len == 32768 and mixtral.typical_len == 2048 + 1024
    assert mixtral.kv_gb == pytest.approx(2 * 32 * 8 * 128 * 2 * max(8 * 3072, 32768) / 1e9)


def test_systems_read_from_files_hold_no_model_and_need_no_plan(paper):
    """A user's own answerer and responder (issue 22) next to the paper grid's models: they
    generate nothing, so the plan and the serving check pass over them."""
    from isqaflow.models.planning.servecheck import check_serving

    config = copy.deepcopy(paper)
    config["arena"]["answerers"]["my-rag"] = {"file": "outputs/my-rag.jsonl"}
    config["drfr"]["responders"]["my-model"] = {
        "file": "outputs/model_outputs.json",
        "format": "alpaca_eval",
    }
    jobs = grid_jobs(config)
    assert not [job for job in jobs if "my-rag" in job or "my-model" in job]
    assert set(jobs) == set(grid_jobs(paper))
    assert plan_grid(config).keys() == plan_grid(paper).keys()
    assert check_serving(config) == check_serving(paper)


def test_evaluate_feedback_serves_its_base_and_adapter_from_one_planned_server(paper):
    """Rule evaluate_feedback (before and after fine-tuning): one server of Vicuna-7B with the
    adapter beside it, the plan's flags; the whole context, as its prompts may pass the budget
    (the gold paragraphs always go in)."""
    from isqaflow.models.planning.gpu_plan import plan_evaluation, plan_evaluations

    plan = plan_evaluation(paper, "vicuna-7b-hotpotqa")
    (server,) = plan.servers
    assert (plan.gpus, server.uses, server.adapters) == (
        1,
        ["base", "feedback"],
        ["vicuna-7b-hotpotqa"],
    )
    assert server.max_model_len == paper["models"]["vicuna-7b"]["gpu"]["context"]
    flags = [a for a in server.args() if a.startswith("--")]
    assert flags and all(flag in FIXTURE["cli_flags"] for flag in flags)
    assert set(plan_evaluations(paper)) == {"evaluate_feedback vicuna-7b-hotpotqa"}
    assert "evaluate_feedback vicuna-7b-hotpotqa\t1\t" in plan_table(plan_evaluations(paper))
