"""API models checked before any request, and vLLM's answers read right (-9999, beam token counts)."""

from __future__ import annotations

import http.server
import json
import math
import threading
import types

import pytest

from isqaflow.models import usage
from isqaflow.models.api.openai import OpenAIModel
from isqaflow.models.registry import load_model
from isqaflow.models.served.model import ServedModel


class ModelList:
    """A local endpoint that lists some models and counts every request."""

    def __init__(self, models: list[str]) -> None:
        self.requests: list[str] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _send(self, status, body):
                payload = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self):
                owner.requests.append(f"GET {self.path}")
                self._send(
                    200,
                    {
                        "object": "list",
                        "data": [
                            {"id": m, "object": "model", "created": 0, "owned_by": "x"}
                            for m in models
                        ],
                    },
                )

            def do_POST(self):
                owner.requests.append(f"POST {self.path}")
                self._send(500, {"error": {"message": "no requests expected"}})

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def endpoint():
    server = ModelList(["gpt-4o-2024-08-06", "gpt-4o", "gpt-4.1"])
    yield server
    server.close()


def test_a_model_the_endpoint_does_not_serve_fails_before_any_request(endpoint, monkeypatch):
    monkeypatch.setenv("TEST_KEY", "sk-test")
    spec = {
        "backend": "openai",
        "model": "gpt-4o-2024-05-13",
        "base_url": endpoint.url,
        "api_key_env": "TEST_KEY",
        "check_model": True,
    }
    with pytest.raises(
        RuntimeError,
        match=r"model gpt4o: the endpoint http://127\.0\.0\.1:\d+/v1 does not serve "
        r"'gpt-4o-2024-05-13' \(the `model` of its config entry under models:.*"
        r"such as gpt-4o, gpt-4o-2024-08-06 .*docs/validity\.md",
    ):
        load_model(spec, name="gpt4o")
    assert endpoint.requests == ["GET /v1/models"]  # one listing, no generation request


def test_a_listed_model_passes_with_one_listing(endpoint, monkeypatch):
    monkeypatch.setenv("TEST_KEY", "sk-test")
    model = load_model(
        {
            "backend": "openai",
            "model": "gpt-4.1",
            "base_url": endpoint.url,
            "api_key_env": "TEST_KEY",
            "check_model": True,
        },
        name="judge",
    )
    model.close()
    assert endpoint.requests == ["GET /v1/models"]


def test_local_endpoints_are_not_listed_unless_asked(endpoint, monkeypatch):
    monkeypatch.setenv("TEST_KEY", "sk-test")
    OpenAIModel("anything", base_url=endpoint.url, api_key_env="TEST_KEY").close()
    assert endpoint.requests == []


def bare_served(engine: str = "vllm") -> ServedModel:
    from isqaflow.models.served.model import ServeSettings

    model = object.__new__(ServedModel)
    model.name = "m"
    model.settings = ServeSettings.from_config(
        {"engine": engine, "command": "x {model} {port}"}, "m"
    )
    model.usage = usage.ModelUsage("m", "served", "m")
    return model


def test_vllm_minus_9999_is_minus_infinity(monkeypatch):
    model = bare_served()
    table = [None, {"5": {"logprob": -1.5}}, {"7": {"logprob": -9999.0}}]
    response = types.SimpleNamespace(
        choices=[types.SimpleNamespace(prompt_logprobs=table, model_extra={})]
    )
    monkeypatch.setattr(model, "_send", lambda *a, **k: response)
    model.model, model.client = (
        "m",
        types.SimpleNamespace(completions=types.SimpleNamespace(create=None)),
    )
    assert model._prompt_logprob([1], [5, 7]) == -math.inf
    table[2] = {"7": {"logprob": -2.0}}
    assert model._prompt_logprob([1], [5, 7]) == pytest.approx(-3.5)
    # the top-logprobs reading: a listed -9999 is -inf, not a finite score
    assert model._read_top([("YES", -0.1), ("NO", -9999.0)], ["YES", "NO"], "") == [-0.1, -math.inf]


def test_beam_token_counts_are_the_best_beams():
    model = bare_served()
    beams = types.SimpleNamespace(
        usage=types.SimpleNamespace(completion_tokens=9),
        choices=[
            types.SimpleNamespace(token_ids=[1, 2, 3, 4]),
            types.SimpleNamespace(token_ids=[1, 2, 3, 4, 5]),
        ],
    )
    assert model._output_tokens(beams) == 4  # vLLM's completion_tokens sums both beams: 9
    no_ids = types.SimpleNamespace(
        usage=types.SimpleNamespace(completion_tokens=10),
        choices=[types.SimpleNamespace(model_extra={}), types.SimpleNamespace(model_extra={})],
    )
    assert model._output_tokens(no_ids) == 5
    one = types.SimpleNamespace(
        usage=types.SimpleNamespace(completion_tokens=7), choices=[types.SimpleNamespace()]
    )
    assert model._output_tokens(one) == 7


def test_the_run_checks_every_api_model_once_per_endpoint(endpoint):
    from isqaflow.models.api.model_lists import check_api_models

    models = {
        "judge": {
            "backend": "openai",
            "model": "gpt-4-0125-preview",
            "base_url": endpoint.url,
            "check_model": True,
        },
        "sub": {
            "backend": "openai",
            "model": "gpt-4.1",
            "base_url": endpoint.url,
            "check_model": True,
        },
        "local": {
            "backend": "openai",
            "model": "unlisted",
            "base_url": endpoint.url,
        },  # a local server: not asked
        "vicuna": {"backend": "hf", "model": "lmsys/vicuna-7b-v1.5"},
    }
    problems = check_api_models(models, environ={"OPENAI_API_KEY": "sk-test"})
    assert problems == [
        (
            f"models.judge.model: the endpoint {endpoint.url} does not serve 'gpt-4-0125-preview'; set a "
            "model it lists (a substitute judge: check it against the validity table, docs/validity.md)"
        )
    ]
    assert endpoint.requests == ["GET /v1/models"]


def test_an_endpoint_error_that_quotes_the_key_is_masked():
    """A 401 quotes the key it was sent ("Incorrect API key provided: sk-proj-..."): the onstart
    check's message printed it."""
    from isqaflow.models.api.model_lists import check_api_models

    key = "sk-proj-Zq8Xw2Vb5Nm1Lk4Jh7Gf0Ds3Ap6Oi9Uy2Tr5Ee8Ww1Qq4"

    class Refuse(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps(
                {
                    "error": {
                        "message": f"Incorrect API key provided: {self.headers['Authorization'][7:]}",
                        "type": "invalid_request_error",
                        "code": "invalid_api_key",
                    }
                }
            ).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        models = {
            "judge": {
                "backend": "openai",
                "model": "gpt-4o",
                "check_model": True,
                "api_key_env": "K",
                "base_url": f"http://127.0.0.1:{server.server_address[1]}/v1",
            }
        }
        problems = check_api_models(models, environ={"K": key})
    finally:
        server.shutdown()
        server.server_close()
    # the listing reports the status, not the body that quotes the key; masked all the same
    assert len(problems) == 1 and "HTTP 401" in problems[0]
    assert key not in problems[0] and key[8:20] not in problems[0]


def test_an_endpoint_that_cannot_be_listed_is_named_without_its_key(monkeypatch):
    from isqaflow.models.api import model_lists as api_models

    monkeypatch.setattr(api_models.time, "sleep", lambda s: None)
    closed = ModelList([])
    closed.close()  # nothing listens on its port any more
    models = {
        "judge": {
            "backend": "openai",
            "model": "gpt-4.1",
            "base_url": closed.url,
            "check_model": True,
        }
    }
    (problem,) = api_models.check_api_models(models, environ={"OPENAI_API_KEY": "sk-secret-value"})
    assert problem.startswith(
        f"cannot list the models of {closed.url} (key from OPENAI_API_KEY) to check gpt-4.1: "
    )
    assert "sk-secret-value" not in problem
