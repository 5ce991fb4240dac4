"""The GPU smoke job (rule gpu_smoke): its plan from the config (isqaflow.models.planning.smoke)
and its steps (isqaflow.models.smoke) against ``tests/openai_double.py``, the vLLM 0.33.0 double
that refuses any flag and request field vLLM lacks, started through ``serve:`` as the real
server is (the real engine: docs/paper-scale.md, "The GPU smoke job")."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from isqaflow.models.planning import smoke as plan
from isqaflow.models.smoke import SmokeFailed, check_cuda, make_test_adapter, run_smoke

REPO = Path(__file__).resolve().parents[3]
DOUBLE = REPO / "tests" / "openai_double.py"
LORA = {"name": "tiny-lora", "r": 4, "alpha": 8, "target_modules": ["q_proj", "v_proj"]}


def paper() -> dict:
    return yaml.safe_load((REPO / "config/paper.yaml").read_text())


# ----------------------------------------------------------------------------- the plan


def test_the_paper_smoke_job_serves_the_smallest_adapter_model_and_the_smallest_in_process_one():
    config = paper()
    smoke = plan.plan_smoke(config)
    (server,) = smoke.servers  # one engine: vLLM
    # Llama-2-7B and Vicuna-7B are the smallest served models (6.74e9); Vicuna-7B serves the
    # fine-tuned adapter, so its one server start tries the LoRA path too
    assert (server.engine, server.name, server.adapter) == (
        "vllm",
        "vicuna-7b",
        "vicuna-7b-hotpotqa",
    )
    # the in-process question generator (T5-large, 0.74e9) is smaller than FLAN-T5-XXL; the
    # extractive reader (RoBERTa) does not load through the hf backend and is not a candidate
    assert smoke.in_process.name == "t5-large-qg"
    job = plan.plan_job(config, smoke)
    served = job.server_for("vicuna-7b")
    assert served.adapters == ["vicuna-7b-hotpotqa"]
    # the flags of the job that asks most of Vicuna-7B: the longest --max-model-len of its servers
    longest = max(
        s.max_model_len
        for job_plan in plan.gpu_plan.plan_grid(config).values()
        for s in job_plan.servers
        if "vicuna-7b" in s.names
    )
    assert served.max_model_len == longest
    assert job.gpus == 1 and "--gpu-memory-utilization" in served.args()


def test_without_an_adapter_the_smallest_served_model_and_one_server_per_engine():
    config = paper()
    config["isqa"]["feedback_models"] = {
        k: v for k, v in config["isqa"]["feedback_models"].items() if not v.get("adapter")
    }
    config["isqa"]["runs"] = [
        r for r in config["isqa"]["runs"] if r["feedback"] in config["isqa"]["feedback_models"]
    ]
    config["models"]["llama3-8b"]["serve"] = {
        **config["models"]["llama3-8b"]["serve"],
        "engine": "transformers",
    }
    smoke = plan.plan_smoke(config)
    assert [(s.engine, s.name, s.adapter) for s in smoke.servers] == [
        ("transformers", "llama3-8b", None),
        ("vllm", "llama2-7b-chat", None),  # 6.74e9 like Vicuna-7B: the name breaks the tie
    ]


def test_the_steps_run_one_after_another_so_the_job_asks_for_the_most_one_step_needs(tmp_path):
    """The rehearsal's 1 GB "GPUs": its server and its in-process model do not fit one together,
    but each step alone does, and the rehearsal runs GPU jobs with --resources gpu=1."""
    from rehearsal import reduce_data, rehearsal_config

    config = rehearsal_config(REPO, "http://127.0.0.1:9/v1", reduce_data(REPO, tmp_path))
    smoke = plan.plan_smoke(config)
    assert [(s.name, s.adapter) for s in smoke.servers] == [("smollm2", "smollm2-hotpotqa")]
    assert smoke.in_process.name == "smollm2-inproc"
    job = plan.plan_job(config, smoke)
    together = plan.gpu_plan.plan_job(plan.JOB, smoke.uses(), config)
    assert [step.gpus for step in job.steps] == [1, 1]
    assert job.gpus == 1 < together.gpus


def test_no_gpu_plan_section_leaves_the_servers_to_their_serve_command():
    config = paper()
    del config["gpu_plan"]
    assert plan.plan_job(config, plan.plan_smoke(config)) is None


def test_a_job_given_gpus_that_sees_no_device_fails_as_driver_cuda():
    report = {
        "torch": "2.13.0+cpu",
        "cuda_build": None,
        "cuda_available": False,
        "CUDA_VISIBLE_DEVICES": "0",
        "driver": None,
    }
    problem = check_cuda(report, 1, "auto")
    assert problem.startswith("driver/CUDA: the job was given 1 GPU(s)")
    assert "torch 2.13.0+cpu (CUDA build None) sees no CUDA device" in problem
    assert check_cuda(report, 1, "cpu") is None  # the entry runs on the CPU on purpose
    assert check_cuda(report, 0, "auto") is None
    assert check_cuda({**report, "cuda_available": True}, 1, "auto") is None


# ----------------------------------------------------------------------------- the steps


def test_the_test_adapter_loads_with_peft_onto_its_base(tiny_causal, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    path = make_test_adapter(
        str(tiny_causal),
        tmp_path / "adapter",
        r=LORA["r"],
        alpha=LORA["alpha"],
        target_modules=LORA["target_modules"],
    )
    config = json.loads((path / "adapter_config.json").read_text())
    assert config["r"] == 4 and sorted(config["target_modules"]) == ["q_proj", "v_proj"]
    base = AutoModelForCausalLM.from_pretrained(tiny_causal)
    model = PeftModel.from_pretrained(base, path)  # strict about names and shapes
    assert any("lora_A" in name for name, _ in model.named_parameters())


def served(tiny_causal, log: Path, *extra: str) -> dict:
    command = (
        f"{sys.executable} {DOUBLE} serve {{model}} --host {{host}} --port {{port}} --log {log}"
    )
    return {
        "backend": "hf",
        "model": str(tiny_causal),
        "serve": {
            "engine": "vllm",
            "command": " ".join([command, *extra]),
            "ready_timeout": 120,
            "lora_args": "--enable-lora --max-lora-rank 8 --lora-modules {adapter_name}={adapter}",
        },
        "server_plan": {
            "server": "tiny@auto",
            "args": ["--tensor-parallel-size", "1", "--max-model-len", "512"],
            "gpus": [0],
        },
    }


def logged(path: Path) -> list[dict]:
    return [json.loads(line)["body"] for line in path.read_text().splitlines()]


def test_one_server_answers_every_smoke_request_and_the_record_has_the_timings(
    tiny_causal, tmp_path
):
    requests = tmp_path / "requests.jsonl"
    out = tmp_path / "results/gpu_smoke.json"
    record = run_smoke(
        [
            {
                "engine": "vllm",
                "name": "tiny",
                "spec": served(tiny_causal, requests),
                "adapter": LORA,
            }
        ],
        {"name": "tiny-hf", "spec": {"backend": "hf", "model": str(tiny_causal), "device": "cpu"}},
        out,
        threads=1,
    )
    assert json.loads(out.read_text()) == json.loads(json.dumps(record))
    assert record["failures"] == []
    (server,) = record["servers"]
    assert server["startup_s"] > 0
    # the serve: command, its lora_args, then the GPU plan's flags
    assert server["command"][-4:] == server["gpu_plan_args"]
    assert server["gpu_plan_args"] == ["--tensor-parallel-size", "1", "--max-model-len", "512"]
    assert "--enable-lora" in server["command"]
    assert any(a.startswith("tiny-lora=") for a in server["command"])
    for key in ("greedy", "beams_2"):
        assert server[key]["new_tokens"] > 0 and server[key]["tokens_per_s"] > 0, key
    assert all(v <= 0 for v in server["prompt_logprobs"]["logprobs"])
    assert server["lora"]["adapter"] == "tiny-lora" and server["lora"]["new_tokens"] > 0
    assert record["in_process"]["device"] == "cpu" and record["in_process"]["request"]["new_tokens"]
    # what reached the server: the 2-beam request as vLLM's beam search, the judge's
    # prompt_logprobs with a token-id prompt, and a request for the adapter by its served name
    bodies = logged(requests)
    assert any(b.get("use_beam_search") and b.get("n") == 2 for b in bodies)
    assert any(b.get("prompt_logprobs") == 0 and isinstance(b["prompt"], list) for b in bodies)
    assert any(b["model"] == "tiny-lora" for b in bodies)


def test_a_server_that_cannot_start_fails_the_job_naming_the_step_and_writes_no_record(
    tiny_causal, tmp_path
):
    out = tmp_path / "gpu_smoke.json"
    spec = served(tiny_causal, tmp_path / "requests.jsonl", "--exit-after-start")
    with pytest.raises(SmokeFailed) as err:
        run_smoke([{"engine": "vllm", "name": "tiny", "spec": spec, "adapter": None}], None, out)
    assert "vllm server of tiny: server start: model tiny: the server exited with status 3" in str(
        err.value
    )
    assert not out.exists()


def test_a_refused_request_field_fails_naming_the_request_and_the_others_still_run(
    tiny_causal, tmp_path, monkeypatch
):
    """The double answers 400 for a field vLLM 0.33.0's CompletionRequest lacks, as a newer or
    older engine would for a field it does not know: the 2-beam step is named, the rest ran."""
    from isqaflow.models.served.model import ServedModel

    original = ServedModel._decoding_extras

    def extras(self, params):
        values = original(self, params)
        if params.num_beams > 1:
            values["beam_width"] = params.num_beams  # not a vLLM field
        return values

    monkeypatch.setattr(ServedModel, "_decoding_extras", extras)
    requests = tmp_path / "requests.jsonl"
    with pytest.raises(SmokeFailed) as err:
        run_smoke(
            [
                {
                    "engine": "vllm",
                    "name": "tiny",
                    "spec": served(tiny_causal, requests),
                    "adapter": None,
                }
            ],
            None,
            tmp_path / "gpu_smoke.json",
        )
    (failure,) = str(err.value).splitlines()[1:]
    assert failure.strip().startswith("vllm server of tiny: 2-beam request (use_beam_search, n=2):")
    assert "beam_width" in failure
    assert any(b.get("prompt_logprobs") == 0 for b in logged(requests))  # the next step ran
