"""The OpenAI-compatible backend against a real local server and a scripted fake one.

* A real server: ``transformers serve MODEL_DIR --host 127.0.0.1 --port P`` on a copy of
  the tiny random-weight Llama (``tiny_causal``), offline.  The copy's
  ``generation_config.json`` sets ``do_sample: true`` and ``min_new_tokens: 4``:
  ``transformers serve`` samples only when the model's generation config asks for it
  (a request's ``temperature > 0`` alone does not), and the tiny model has tied
  embeddings, so greedy decoding just repeats the last prompt token -- the "\\n" that
  ends the chat template's generation prompt -- and the backend strips that to "".
  Sampling (with EOS held off for 4 tokens) gives non-empty text.
* A fake server (``http.server`` in a thread) answers with scripted statuses and
  records every request, for the retry, error and request-format tests.
"""

from __future__ import annotations

import http.server
import importlib.util
import json
import logging
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import types
import urllib.request
from pathlib import Path

import pytest

from isqaflow.models.api import openai as oa_mod
from isqaflow.models.base import GenerationParams
from isqaflow.models.cache import CachedModel
from isqaflow.models.registry import load_model

pytestmark = pytest.mark.server

SENTINEL = "sk-test-SENTINEL-1234"
KEY_ENV = "ISQAFLOW_TEST_KEY"
STARTUP_DEADLINE_S = 120.0
EMBEDDED_MODEL = (
    Path(__file__).resolve().parents[3] / "resources" / "models" / "smollm2-135m-instruct"
)


# ----------------------------------------------------------------------------- helpers


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get_json(url: str, timeout: float = 2.0):
    with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (localhost only)
        return resp.status, json.loads(resp.read().decode("utf-8"))


def transformers_cli() -> str | None:
    local = Path(sys.executable).parent / "transformers"
    if local.exists():
        return str(local)
    return shutil.which("transformers")


def assert_no_secret_in_files(root: Path, secret: str) -> list[Path]:
    """Every file under ``root`` (cache db, its -wal/-shm, logs) is free of ``secret``."""
    files = [p for p in root.rglob("*") if p.is_file()]
    for path in files:
        assert secret.encode() not in path.read_bytes(), f"secret found in {path}"
    return files


def assert_no_secret_in_logs(caplog, secret: str) -> None:
    assert secret not in caplog.text
    for record in caplog.records:
        assert secret not in record.getMessage()
        assert secret not in repr(record.args)


class Served(types.SimpleNamespace):
    port: int
    base_url: str
    model_id: str
    model_dir: Path
    log_path: Path

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def chat_posts(self) -> int:
        return self.log_text().count('"POST /v1/chat/completions HTTP/1.1" 200')

    def wait_for_posts(self, n: int, deadline_s: float = 10.0) -> int:
        """Poll the (unbuffered) access log until it shows ``n`` answered chat posts."""
        end = time.monotonic() + deadline_s
        while self.chat_posts() < n and time.monotonic() < end:
            time.sleep(0.05)
        return self.chat_posts()


def _start_server(cli: str, model_dir: Path, log_path: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    env = dict(
        os.environ,
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PYTHONUNBUFFERED="1",
        TOKENIZERS_PARALLELISM="false",
    )
    cmd = [
        cli,
        "serve",
        str(model_dir),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--device",
        "cpu",
        "--log-level",
        "info",
    ]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    return proc, port


def _stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=15)


def _wait_until_up(proc: subprocess.Popen, port: int, log_path: Path) -> str | None:
    """Poll /health until it answers; returns None when up, else the reason it is not."""
    end = time.monotonic() + STARTUP_DEADLINE_S
    while time.monotonic() < end:
        if proc.poll() is not None:
            return f"server exited with status {proc.returncode}"
        try:
            status, body = http_get_json(f"http://127.0.0.1:{port}/health", timeout=1.0)
            if status == 200 and body.get("status") == "ok":
                return None
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
    return f"server did not answer /health within {STARTUP_DEADLINE_S:.0f} s"


@pytest.fixture(scope="module")
def served(tiny_causal, tmp_path_factory):
    """A real ``transformers serve`` on localhost serving a copy of the tiny model."""
    cli = transformers_cli()
    if cli is None:
        pytest.skip("the `transformers` CLI is not installed")
    missing = [m for m in ("fastapi", "uvicorn") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"`transformers serve` needs {missing} (pip install transformers[serving])")

    model_dir = tmp_path_factory.mktemp("served-tiny") / "tiny-llama"
    shutil.copytree(tiny_causal, model_dir)
    gen_path = model_dir / "generation_config.json"
    gen = json.loads(gen_path.read_text())
    gen.update(do_sample=True, min_new_tokens=4)  # see the module docstring
    gen_path.write_text(json.dumps(gen))

    log_dir = tmp_path_factory.mktemp("server-log")
    candidates = [model_dir] + ([EMBEDDED_MODEL] if EMBEDDED_MODEL.is_dir() else [])
    failures = []
    for candidate in candidates:
        log_path = log_dir / f"serve-{candidate.name}.log"
        proc, port = _start_server(cli, candidate, log_path)
        try:
            problem = _wait_until_up(proc, port, log_path)
            if problem is None:
                _, listing = http_get_json(f"http://127.0.0.1:{port}/v1/models")
                ids = [m["id"] for m in listing.get("data", [])]
                if str(candidate) not in ids:
                    problem = f"/v1/models lists {ids}, not {candidate}"
        except BaseException:
            _stop_server(proc)
            raise
        if problem is None:
            break
        _stop_server(proc)
        failures.append(
            f"{candidate}: {problem}\n--- server log ---\n{log_path.read_text(errors='replace')[-6000:]}"
        )
    else:
        pytest.fail(
            "could not start `transformers serve`:\n" + "\n\n".join(failures), pytrace=False
        )

    try:
        yield Served(
            port=port,
            base_url=f"http://127.0.0.1:{port}/v1",
            model_id=str(candidate),
            model_dir=candidate,
            log_path=log_path,
        )
    finally:
        _stop_server(proc)


@pytest.fixture
def key_env(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SENTINEL)
    return SENTINEL


def openai_spec(model: str, base_url: str | None, **extra) -> dict:
    spec = {
        "backend": "openai",
        "model": model,
        "base_url": base_url,
        "api_key_env": KEY_ENV,
        "timeout": 60,
        "max_retries": 2,
    }
    spec.update(extra)
    return spec


def count_calls(monkeypatch, cached: CachedModel) -> list:
    """Wrap the inner backend's ``_call`` (one per server request) with a recorder."""
    calls = []
    inner_call = cached.inner._call

    def recording(request, params):
        calls.append(request)
        return inner_call(request, params)

    monkeypatch.setattr(cached.inner, "_call", recording)
    return calls


CHATS = [
    [{"role": "user", "content": "What does the model read?"}],
    [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "Is the fox quick?"},
    ],
    [{"role": "user", "content": "What does the model read?"}],  # duplicate of the first
    [{"role": "user", "content": "Facts and non-facts help the summarizer."}],
]
PROMPT = "The quick brown fox jumps over the lazy dog. Question:"
SAMPLED = GenerationParams(max_new_tokens=12, do_sample=True, temperature=1.0, seed=3)


# ------------------------------------------------------------------- real server tests


def test_generate_chat_batch_and_prompt_through_call_cache(served, key_env, tmp_path, monkeypatch):
    cache_path = tmp_path / "calls.sqlite"
    model = load_model(openai_spec(served.model_id, served.base_url), cache=cache_path)
    assert isinstance(model, CachedModel)
    assert model.backend == "openai"
    calls = count_calls(monkeypatch, model)
    requests = [*CHATS, PROMPT]
    posts_before = served.chat_posts()

    first = model.generate(requests, SAMPLED)

    assert len(first) == 5
    assert len(calls) == 4  # the duplicate chat was sent once
    assert served.wait_for_posts(posts_before + 4) == posts_before + 4
    for gen in first:
        assert isinstance(gen.text, str) and gen.text.strip() == gen.text != ""
        assert 4 <= gen.n_new_tokens <= SAMPLED.max_new_tokens  # usage is reported by this server
        assert gen.n_input_tokens > 0
        assert gen.finish_reason in {"stop", "length"}
    assert first[2].as_dict() == first[0].as_dict()
    # the system turn makes the second conversation's prompt longer than the first
    assert first[1].n_input_tokens > first[0].n_input_tokens

    rows = (
        sqlite3.connect(cache_path)
        .execute("SELECT kind, model, request, params, response FROM calls")
        .fetchall()
    )
    assert len(rows) == 4 == len(model.cache)
    assert {r[0] for r in rows} == {"generate"}
    assert {json.loads(r[1])["model"] for r in rows} == {served.model_id}
    stored_requests = [json.loads(r[2]) for r in rows]
    assert PROMPT in stored_requests
    for chat in (CHATS[0], CHATS[1], CHATS[3]):
        assert chat in stored_requests
    for r in rows:
        assert json.loads(r[3]) == SAMPLED.as_dict()
    by_request = {json.dumps(json.loads(r[2]), sort_keys=True): json.loads(r[4]) for r in rows}
    assert by_request[json.dumps(PROMPT)] == first[4].as_dict()

    # the identical call again: answered from the cache, no server request at all
    second = model.generate(requests, SAMPLED)
    assert [g.as_dict() for g in second] == [g.as_dict() for g in first]
    assert len(calls) == 4
    assert served.chat_posts() == posts_before + 4
    # the in-batch duplicate counts as a hit the first time
    assert (model.cache.hits, model.cache.misses) == (1 + 5, 4)

    # a fresh process (new model, same cache file) also makes no request
    again = load_model(openai_spec(served.model_id, served.base_url), cache=cache_path)
    again_calls = count_calls(monkeypatch, again)
    assert [g.as_dict() for g in again.generate(requests, SAMPLED)] == [g.as_dict() for g in first]
    assert again_calls == []
    # a changed parameter is a new call
    changed = again.generate([PROMPT], SAMPLED.replace(max_new_tokens=6))
    assert len(again_calls) == 1 and 4 <= changed[0].n_new_tokens <= 6
    assert served.wait_for_posts(posts_before + 5) == posts_before + 5
    model.close()
    again.close()


def test_greedy_generation_matches_the_local_model(served, key_env, tmp_path):
    """Through the server, greedy decoding gives what the same weights give locally."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    model = load_model(
        openai_spec(served.model_id, served.base_url), cache=tmp_path / "calls.sqlite"
    )
    params = GenerationParams(max_new_tokens=8)  # do_sample=False -> temperature 0 -> greedy
    out = model.generate([PROMPT, CHATS[1]], params)

    tok = AutoTokenizer.from_pretrained(served.model_dir)
    lm = AutoModelForCausalLM.from_pretrained(served.model_dir)
    config = GenerationConfig.from_pretrained(served.model_dir)
    config.do_sample = False
    for request, gen in zip([[{"role": "user", "content": PROMPT}], CHATS[1]], out, strict=True):
        enc = tok.apply_chat_template(
            request, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        with torch.no_grad():
            ids = lm.generate(**enc, generation_config=config, max_new_tokens=8)
        new = ids[0, enc["input_ids"].shape[1] :]
        assert gen.n_input_tokens == enc["input_ids"].shape[1]
        assert gen.n_new_tokens == len(new) == 8
        assert gen.text == tok.decode(new, skip_special_tokens=True).strip()
        assert gen.finish_reason == "length"
    model.close()


def test_api_key_never_stored_logged_or_in_identity(served, key_env, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    work = tmp_path / "job"
    model = load_model(openai_spec(served.model_id, served.base_url), cache=work / "calls.sqlite")
    out = model.generate([CHATS[0], PROMPT], SAMPLED.replace(seed=11))
    assert all(g.text for g in out)
    (work / "outputs.json").write_text(json.dumps([g.as_dict() for g in out]))
    (work / "identity.json").write_text(json.dumps(model.identity()))

    identity = model.identity()
    assert identity == {"backend": "openai", "model": served.model_id, "base_url": served.base_url}
    assert SENTINEL not in json.dumps(identity)
    assert SENTINEL not in json.dumps(model.inner.identity())
    assert any(r.name == "isqaflow.models.api.openai" for r in caplog.records)
    assert_no_secret_in_logs(caplog, SENTINEL)
    model.close()
    model.cache.close()
    files = assert_no_secret_in_files(work, SENTINEL)
    assert {p.name for p in files} >= {"calls.sqlite", "outputs.json", "identity.json"}
    assert SENTINEL not in served.log_text()


# --------------------------------------------------------------- fake server tests

CHAT_OK = {
    "id": "chatcmpl-fake",
    "object": "chat.completion",
    "created": 0,
    "model": "fake-model",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "  YES, it is.  \n"},
            "finish_reason": "stop",
            "logprobs": None,
        }
    ],
    "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
}


class FakeOpenAI:
    """Scripted chat.completions server: ``script`` holds the statuses of the first
    requests (an int, or ``"hang"`` to wait without answering); later requests get
    ``default`` (200 with :data:`CHAT_OK`)."""

    def __init__(self, script=(), default=200, body=None, respond=None):
        self.respond = respond  # request body -> response body (recorded responses by request)
        self.script = list(script)
        self.default = default
        self.body = body or CHAT_OK
        self.requests: list[dict] = []
        self.release = threading.Event()
        self.lock = threading.Lock()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                with fake.lock:
                    fake.requests.append(
                        {
                            "path": self.path,
                            "headers": {k.lower(): v for k, v in self.headers.items()},
                            "body": json.loads(raw or b"null"),
                        }
                    )
                    action = fake.script.pop(0) if fake.script else fake.default
                if action == "hang":
                    fake.release.wait(30)
                    return
                if action == 200:
                    body = fake.respond(fake.requests[-1]["body"]) if fake.respond else fake.body
                    payload = json.dumps(body).encode()
                else:
                    payload = json.dumps(
                        {
                            "error": {
                                "message": f"scripted {action}",
                                "type": "server_error",
                                "code": None,
                            }
                        }
                    ).encode()
                try:
                    self.send_response(action)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass

            def log_message(self, *args):
                pass

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def fake_server():
    servers = []

    def make(*args, **kwargs):
        srv = FakeOpenAI(*args, **kwargs)
        servers.append(srv)
        return srv

    yield make
    for srv in servers:
        srv.close()


@pytest.fixture
def sleeps(monkeypatch):
    """Record the backoff delays instead of sleeping (only inside isqaflow.models.api.openai)."""
    delays: list[float] = []
    fake_time = types.SimpleNamespace(sleep=delays.append, monotonic=time.monotonic, time=time.time)
    monkeypatch.setattr(oa_mod, "time", fake_time)
    return delays


@pytest.mark.parametrize("failures", [(500, 500), (429, 503)])
def test_retries_with_growing_backoff_then_succeeds(
    fake_server, sleeps, key_env, tmp_path, caplog, failures
):
    caplog.set_level(logging.DEBUG)
    fake = fake_server(script=failures)
    model = load_model(
        openai_spec("fake-model", fake.url, backoff=0.5), cache=tmp_path / "calls.sqlite"
    )
    out = model.generate(["Is the fox quick?"], GenerationParams(max_new_tokens=5))

    assert len(fake.requests) == 3  # two failures, success on the 3rd attempt
    assert out[0].text == "YES, it is."
    assert (out[0].n_input_tokens, out[0].n_new_tokens, out[0].finish_reason) == (7, 3, "stop")
    assert len(sleeps) == 2
    assert 0.5 <= sleeps[0] < 1.0 <= sleeps[1] < 2.0  # backoff * 2**attempt * (1 + jitter)
    assert sleeps[1] > sleeps[0]
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.name == "isqaflow.models.api.openai" and r.levelno == logging.WARNING
    ]
    assert len(warnings) == 2 and "retry 1/2" in warnings[0] and "retry 2/2" in warnings[1]
    # every attempt carried the key from the environment; nothing else holds it
    assert {r["headers"].get("authorization") for r in fake.requests} == {f"Bearer {SENTINEL}"}
    assert_no_secret_in_logs(caplog, SENTINEL)
    model.close()
    model.cache.close()
    assert_no_secret_in_files(tmp_path, SENTINEL)


def test_always_failing_server_gives_up_after_max_retries(
    fake_server, sleeps, key_env, tmp_path, caplog
):
    caplog.set_level(logging.DEBUG)
    fake = fake_server(default=500)
    model = load_model(
        openai_spec("fake-model", fake.url, max_retries=3, backoff=0.25),
        cache=tmp_path / "calls.sqlite",
    )
    with pytest.raises(RuntimeError) as info:
        model.generate(["Is the fox quick?"], GenerationParams(max_new_tokens=5))

    assert len(fake.requests) == 4  # max_retries + 1 attempts
    assert len(sleeps) == 3
    assert all(0.25 * 2**k <= d < 0.25 * 2 ** (k + 1) for k, d in enumerate(sleeps))
    message = str(info.value)
    assert "fake-model" in message and "4 attempts" in message and "InternalServerError" in message
    assert SENTINEL not in message and SENTINEL not in repr(info.value.__cause__)
    assert len(model.cache) == 0  # a failed call is not cached
    assert_no_secret_in_logs(caplog, SENTINEL)


def test_connection_refused_is_retried_and_bounded(sleeps, key_env):
    port = free_port()  # nothing listens there
    model = load_model(
        openai_spec("fake-model", f"http://127.0.0.1:{port}/v1", max_retries=2, timeout=5)
    )
    with pytest.raises(
        RuntimeError, match=r"model fake-model: request failed after 3 attempts: APIConnectionError"
    ):
        model.generate(["hi"], GenerationParams(max_new_tokens=2))
    assert len(sleeps) == 2


def test_timeout_is_retried(fake_server, sleeps, key_env):
    fake = fake_server(script=["hang"])
    model = load_model(openai_spec("fake-model", fake.url, timeout=0.5, max_retries=1))
    out = model.generate(["hi"], GenerationParams(max_new_tokens=2))
    assert out[0].text == "YES, it is."
    assert len(fake.requests) == 2 and len(sleeps) == 1


@pytest.mark.parametrize(
    ("status", "error"),
    [(400, "BadRequestError"), (401, "AuthenticationError"), (404, "NotFoundError")],
)
def test_client_errors_are_not_retried(fake_server, sleeps, key_env, tmp_path, status, error):
    import openai

    fake = fake_server(default=status)
    model = load_model(
        openai_spec("fake-model", fake.url, max_retries=3), cache=tmp_path / "calls.sqlite"
    )
    with pytest.raises(openai.APIStatusError) as info:
        model.generate(["hi"], GenerationParams(max_new_tokens=2))
    assert type(info.value).__name__ == error
    assert info.value.status_code == status
    assert len(fake.requests) == 1 and sleeps == []
    assert SENTINEL not in str(info.value)
    assert len(model.cache) == 0


def test_request_format(fake_server, key_env):
    body = json.loads(json.dumps(CHAT_OK))
    body["choices"][0]["logprobs"] = {
        "content": [
            {"token": "YES", "logprob": -0.5, "bytes": None, "top_logprobs": []},
            {"token": ",", "logprob": -0.25, "bytes": None, "top_logprobs": []},
        ]
    }
    fake = fake_server(body=body)
    model = load_model(openai_spec("fake-model", fake.url))

    greedy = GenerationParams(
        max_new_tokens=9, temperature=0.7, top_p=0.8, stop=("\n\n",), seed=5, return_logprobs=True
    )
    out = model.generate(["A plain prompt."], greedy)
    assert out[0].logprob == pytest.approx(-0.75)
    sent = fake.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["body"] == {
        "model": "fake-model",
        "messages": [{"role": "user", "content": "A plain prompt."}],
        "max_tokens": 9,
        "temperature": 0.0,
        "top_p": 1.0,
        "seed": 5,
        "stop": ["\n\n"],
        "logprobs": True,
    }

    sampled = GenerationParams(max_new_tokens=4, do_sample=True, temperature=0.7, top_p=0.8)
    out = model.generate([CHATS[1]], sampled)
    assert out[0].logprob is None
    assert fake.requests[1]["body"] == {
        "model": "fake-model",
        "messages": CHATS[1],
        "max_tokens": 4,
        "temperature": 0.7,
        "top_p": 0.8,
        "seed": 0,
    }


def test_missing_key_without_base_url_is_a_clear_error(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(
        RuntimeError, match=rf"model gpt-test: environment variable {KEY_ENV} holds no API key"
    ):
        load_model(openai_spec("gpt-test", None))


def test_missing_key_with_local_base_url_sends_a_placeholder(fake_server, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    fake = fake_server()
    model = load_model(openai_spec("fake-model", fake.url))
    assert model.generate(["hi"], GenerationParams(max_new_tokens=2))[0].text == "YES, it is."
    assert fake.requests[0]["headers"]["authorization"] == "Bearer unused"


@pytest.mark.parametrize("base_url", [None, "http://127.0.0.1:9/v1"])
def test_empty_key_variable_is_treated_as_missing(monkeypatch, base_url):
    monkeypatch.setenv(KEY_ENV, "")
    if base_url is None:
        with pytest.raises(RuntimeError, match=f"environment variable {KEY_ENV} holds no API key"):
            load_model(openai_spec("gpt-test", None))
    else:
        model = load_model(openai_spec("gpt-test", base_url))
        assert model.identity()["base_url"] == base_url


def test_negative_max_retries_is_rejected(key_env):
    with pytest.raises(ValueError, match="max_retries"):
        model = load_model(openai_spec("fake-model", "http://127.0.0.1:9/v1", max_retries=-1))
        model.generate(["hi"], GenerationParams(max_new_tokens=2))


def test_beam_search_falls_back_to_greedy_with_a_warning(fake_server, key_env, caplog):
    from isqaflow.models import usage

    # The warning is once per model and setting in a process (the usage ledger): another
    # test of "fake-model" in the same pytest-xdist worker must not have warned already.
    usage.reset()
    caplog.set_level(logging.WARNING, logger="isqaflow.models.api.openai")
    fake = fake_server()
    model = load_model(openai_spec("fake-model", fake.url))
    out = model.generate(["hi", "ho"], GenerationParams(max_new_tokens=3, num_beams=4))
    assert [g.text for g in out] == ["YES, it is."] * 2
    assert len(fake.requests) == 2
    warnings = [r.getMessage() for r in caplog.records if "cannot apply" in r.getMessage()]
    assert warnings == ["fake-model: the API cannot apply num_beams=4; decoding without it"]
    assert model.usage.dropped_decoding == ["num_beams=4"]
    model.generate(
        ["hu"], GenerationParams(max_new_tokens=3, num_beams=4)
    )  # warned once per setting
    assert len([r for r in caplog.records if "cannot apply" in r.getMessage()]) == 1


# ------------------------------------------------------------ log-probabilities and usage
# Recorded responses in the OpenAI chat format with logprobs (the shape OpenAI and vLLM
# return): `transformers serve` ignores logprobs, so the parsing is tested against this
# scripted server, not a real one.


def logprob_response(top, content="YES"):
    body = json.loads(json.dumps(CHAT_OK))
    body["choices"][0]["message"]["content"] = content
    body["choices"][0]["logprobs"] = {
        "content": [
            {
                "token": content,
                "logprob": top[0][1] if top else 0.0,
                "bytes": None,
                "top_logprobs": [{"token": t, "logprob": lp, "bytes": None} for t, lp in top],
            }
        ]
    }
    body["usage"] = {"prompt_tokens": 30, "completion_tokens": 1, "total_tokens": 31}
    return body


JUDGE_CHAT = [{"role": "user", "content": "Generated Text: a cat. Question: Is it about a dog?"}]


def test_top_logprobs_scoring_reads_each_candidate(fake_server, key_env, tmp_path):
    from isqaflow.models import usage

    usage.reset()
    top = [("NO", -0.2), ("YES", -1.9), ("Yes", -2.5), ("No", -3.0)]
    fake = fake_server(body=logprob_response(top, "NO"))
    model = load_model(
        openai_spec("fake-model", fake.url), cache=tmp_path / "calls.sqlite", name="judge"
    )
    scores = model.score_batch([(JUDGE_CHAT, ["YES", "NO"]), ("A plain prompt.", ["NO", "Yes"])])
    assert scores == [[-1.9, -0.2], [-0.2, -2.5]]
    assert model.score(JUDGE_CHAT, ["YES", "NO"]) == [-1.9, -0.2]  # from the call cache
    assert len(fake.requests) == 2
    sent = sorted(
        (r["body"] for r in fake.requests), key=lambda body: body["messages"][0]["content"]
    )
    assert sent[1] == {
        "model": "fake-model",
        "messages": JUDGE_CHAT,
        "max_tokens": 1,
        "temperature": 0.0,
        "seed": 0,
        "logprobs": True,
        "top_logprobs": 20,
    }
    assert sent[0]["messages"] == [{"role": "user", "content": "A plain prompt."}]
    (entry,) = usage.snapshot()
    assert (entry["name"], entry["requests"], entry["input_tokens"], entry["output_tokens"]) == (
        "judge",
        2,
        60,
        2,
    )
    assert entry["scoring"] == {"items": 2, "absent_candidates": 0, "items_without_candidates": 0}


def test_absent_candidates_get_the_floor_and_are_counted(fake_server, key_env, caplog):
    from isqaflow.models import usage

    usage.reset()
    fake = fake_server(body=logprob_response([("The", -0.1), ("YES", -2.0), ("It", -4.5)], "The"))
    model = load_model(openai_spec("fake-model", fake.url, top_logprobs=3), name="judge")
    assert model.score(JUDGE_CHAT, ["YES", "NO"]) == [-2.0, -4.5]  # NO is not listed: the floor
    assert fake.requests[0]["body"]["top_logprobs"] == 3
    assert model.score(JUDGE_CHAT, ["1", "2"]) == [
        -4.5,
        -4.5,
    ]  # neither listed: both at the floor, counted
    assert usage.snapshot()[0]["scoring"] == {
        "items": 2,
        "absent_candidates": 3,
        "items_without_candidates": 1,
    }
    assert any("none of the candidates ['1', '2']" in r.getMessage() for r in caplog.records)


def test_server_without_logprobs_fails_naming_model_and_mode(fake_server, key_env, tmp_path):
    from isqaflow.models.api.openai import LogprobsUnavailable

    fake = fake_server()  # CHAT_OK: "logprobs": null, as `transformers serve` answers
    model = load_model(
        openai_spec("fake-model", fake.url), cache=tmp_path / "calls.sqlite", name="judge"
    )
    with pytest.raises(
        LogprobsUnavailable,
        match=r"model judge: the server returned no log-probabilities .*"
        r"\(logprobs: top_logprobs\)",
    ):
        model.score_batch([(JUDGE_CHAT, ["YES", "NO"])])
    assert len(model.cache) == 0


def test_unsupported_logprob_settings_fail_before_any_request(fake_server, key_env, tmp_path):
    from isqaflow.models.api.openai import LogprobsUnavailable

    fake = fake_server(body=logprob_response([("1", -0.1)]))
    model = load_model(openai_spec("fake-model", fake.url), name="gpt4")
    # "<rating>1" vs "<rating>2": the shared prefix needs an assistant prefill the API lacks
    with pytest.raises(
        LogprobsUnavailable, match=r"model gpt4: the candidates share the prefix '<rating>'"
    ):
        model.score_batch([(JUDGE_CHAT, ["<rating>1", "<rating>2", "<rating>0"])])
    off = load_model(openai_spec("fake-model", fake.url, logprobs="none"), name="gpt4")
    with pytest.raises(
        LogprobsUnavailable,
        match=r"model gpt4: log-probability scoring is switched off "
        r"\(logprobs: none\)",
    ):
        off.score(JUDGE_CHAT, ["YES", "NO"])
    with pytest.raises(
        LogprobsUnavailable,
        match=r"model gpt4: logprobs: prompt_logprobs needs the model's "
        r"tokenizer",
    ):
        load_model(openai_spec("fake-model", fake.url, logprobs="prompt_logprobs"), name="gpt4")
    with pytest.raises(
        ValueError, match="logprobs must be one of top_logprobs, prompt_logprobs, none"
    ):
        load_model(openai_spec("fake-model", fake.url, logprobs="yes"), name="gpt4")
    assert fake.requests == []


def test_split_candidates():
    from isqaflow.models.api.openai import split_candidates

    assert split_candidates(["<rating>1", "<rating>2", "<rating>0"]) == (
        "<rating>",
        ["1", "2", "0"],
    )
    assert split_candidates(["YES", "NO"]) == ("", ["YES", "NO"])
    assert split_candidates(["YES", "YES NO"]) == (
        "YE",
        ["S", "S NO"],
    )  # every rest keeps a character
    assert split_candidates(["YES"]) == ("", ["YES"])
    with pytest.raises(ValueError, match="empty candidate"):
        split_candidates(["YES", ""])


def test_rate_limiter_holds_requests_and_tokens_per_minute():
    from isqaflow.models.api.rate_limit import RateLimiter

    now = [0.0]
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        now[0] += seconds

    limiter = RateLimiter(
        requests_per_minute=2, tokens_per_minute=100, clock=lambda: now[0], sleep=sleep
    )
    first = limiter.acquire(30)
    now[0] = 10.0
    limiter.acquire(30)
    assert slept == []
    limiter.acquire(10)  # a third request in the minute waits until the first leaves the window
    assert slept == [pytest.approx(50.0)] and now[0] == pytest.approx(60.0)
    limiter.settle(first, 5)  # (already out of the window)
    now[0] = 75.0
    limiter.acquire(
        95
    )  # 10 tokens booked at 60 s: 95 more exceed 100 until that booking leaves at 120 s
    assert slept[-1] == pytest.approx(45.0) and now[0] == pytest.approx(120.0)
    assert [b[1] for b in limiter._booked] == [95.0]
    alone = RateLimiter(tokens_per_minute=50, clock=lambda: now[0], sleep=sleep)
    alone.acquire(500)  # larger than the limit: passes once the window is empty
    with pytest.raises(ValueError, match="requests_per_minute must be at least 1"):
        RateLimiter(requests_per_minute=0)


def test_rate_limit_books_reported_tokens(fake_server, key_env):
    fake = fake_server()
    model = load_model(
        openai_spec("fake-model", fake.url, requests_per_minute=100, tokens_per_minute=10_000)
    )
    model.generate(["one two three", "four"], GenerationParams(max_new_tokens=50))
    assert sorted(b[1] for b in model.limiter._booked) == [
        10.0,
        10.0,
    ]  # usage 7 + 3, not the estimate


def test_usage_is_written_beside_the_job_outputs(fake_server, key_env, tmp_path):
    from isqaflow import runtime
    from isqaflow.models import usage

    usage.reset()
    fake = fake_server()
    out = tmp_path / "results" / "judged.jsonl"
    smk = types.SimpleNamespace(
        log=[str(tmp_path / "job.log")],
        threads=1,
        rule="arena_judge",
        wildcards={"judge": "gpt4"},
        output=[str(out)],
    )
    with runtime.job(smk):
        model = load_model(
            openai_spec("gpt-4-test", fake.url),
            cache=runtime.current_job().cache_path(),
            name="gpt4",
        )
        model.generate(["a", "b", "a"], GenerationParams(max_new_tokens=4))
    record = json.loads((tmp_path / "results" / "judged.jsonl.usage.json").read_text())
    assert record["rule"] == "arena_judge" and record["wildcards"] == {"judge": "gpt4"}
    (entry,) = record["models"]
    assert {
        k: entry[k]
        for k in ("name", "backend", "model", "requests", "input_tokens", "output_tokens")
    } == {
        "name": "gpt4",
        "backend": "openai",
        "model": "gpt-4-test",
        "requests": 2,
        "input_tokens": 14,
        "output_tokens": 6,
    }
    assert SENTINEL not in json.dumps(record)


def test_a_dropped_setting_is_recorded_once_by_concurrent_threads():
    """Check and add under one lock: two threads that drop the same setting at once get it
    back as new once between them (the beam-search warning above was logged twice, now and
    then, when two requests raced between the check and the add)."""
    import threading

    from isqaflow.models.usage import ModelUsage

    for _ in range(50):
        ledger, barrier, got = ModelUsage("m", "openai", "m"), threading.Barrier(8), []

        def drop(ledger=ledger, barrier=barrier, got=got):
            barrier.wait()
            got.append(ledger.note_dropped(["num_beams=4"]))

        threads = [threading.Thread(target=drop) for _ in range(8)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        assert sorted(got, key=len) == [[]] * 7 + [["num_beams=4"]]
        assert ledger.dropped_decoding == ["num_beams=4"]
