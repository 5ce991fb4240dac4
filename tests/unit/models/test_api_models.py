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
            f"models.judge.model: the endpoint {endpoint.url} does not serve 'gpt-4-0125-preview' "
            "(retired; the docs' substitute: 'gpt-4.1'); set a model it lists (a substitute judge: "
            "check it against the validity table, docs/validity.md)"
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


# ----------------------------------------------------------------------------- the dry run's check


def _paper_config_text() -> str:
    from pathlib import Path

    return (Path(__file__).resolve().parents[3] / "config/paper.yaml").read_text()


def _paper_api_models() -> dict:
    import yaml

    config = yaml.safe_load(_paper_config_text())
    return {k: e for k, e in config["models"].items() if e.get("backend") == "openai"}


def test_the_dry_run_names_every_retired_snapshot_of_the_paper_and_what_it_could_not_check():
    from isqaflow.models.api.model_lists import RETIRED, dry_run_report

    models = _paper_api_models()
    lines = dry_run_report(models, environ={})  # no key: nothing is sent anywhere
    retired = {k: e["model"] for k, e in models.items() if e["model"] in RETIRED}
    assert set(retired.values()) == set(RETIRED)  # each of the papers' retired snapshots is used
    for key, model in retired.items():
        assert (
            f"models.{key}.model: {model!r} is a retired OpenAI snapshot; the docs' substitute: "
            f"{RETIRED[model]!r} (a substitute judge: check it against the validity table, "
            "docs/validity.md)"
        ) in lines
    # the substitute is the one config/paper.yaml's comment on that entry names
    import re

    text = _paper_config_text()
    for model, substitute in RETIRED.items():
        assert re.search(
            rf"model: {re.escape(model)}  #.*substitute: {re.escape(substitute)}$", text, re.M
        )
    (unchecked,) = [line for line in lines if line.startswith("not checked")]
    assert unchecked.startswith(
        "not checked against the model list of https://api.openai.com/v1: OPENAI_API_KEY is not set ("
    )
    assert "gpt-4-turbo-2024-04-09" in unchecked  # every model of that endpoint named


def test_the_dry_run_checks_the_list_where_it_can_and_says_when_it_cannot(endpoint):
    from isqaflow.models.api.model_lists import dry_run_report

    def entry(model, url):
        return {"backend": "openai", "model": model, "base_url": url, "check_model": True}

    models = {
        "judge": entry("gpt-4-0125-preview", endpoint.url),
        "sub": entry("gpt-4.1", endpoint.url),
    }
    lines = dry_run_report(models, environ={"OPENAI_API_KEY": "sk-test"})
    assert lines == [
        f"models.judge.model: the endpoint {endpoint.url} does not serve 'gpt-4-0125-preview' "
        "(retired; the docs' substitute: 'gpt-4.1'); set a model it lists (a substitute judge: "
        "check it against the validity table, docs/validity.md)"
    ]
    assert endpoint.requests == ["GET /v1/models"]  # one listing
    lines = dry_run_report({"sub": models["sub"]}, environ={"OPENAI_API_KEY": "sk-test"})
    assert lines == [f"{endpoint.url} lists every model of the config (gpt-4.1)"]
    # no network (nothing listens): said, with the key masked, after one attempt
    closed = ModelList([])
    closed.close()
    (line,) = dry_run_report(
        {"sub": entry("gpt-4.1", closed.url)}, environ={"OPENAI_API_KEY": "sk-secret-value"}
    )
    assert line.startswith(f"not checked against the model list of {closed.url}: URLError")
    assert line.endswith("(gpt-4.1)") and "sk-secret-value" not in line


def test_the_dry_run_sends_no_listing_request_when_told_not_to(endpoint):
    """The tests' dry runs of config/paper.yaml set a placeholder key: before, each sent it to
    the provider's model list (and, offline, waited for a DNS failure)."""
    from isqaflow.models.api.model_lists import OFFLINE_ENV, dry_run_report

    entry = {"backend": "openai", "model": "gpt-4.1", "base_url": endpoint.url, "check_model": True}
    models = {"judge": entry}
    (line,) = dry_run_report(models, environ={"OPENAI_API_KEY": "sk-test", OFFLINE_ENV: "1"})
    assert (
        line == f"not checked against the model list of {endpoint.url}: {OFFLINE_ENV}=1 (gpt-4.1)"
    )
    assert endpoint.requests == []
