"""Honoured or refused, never dropped: the generation-parameter table and the config check that uses it."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from pathlib import Path

import pytest
import yaml

from isqaflow.models import capabilities
from isqaflow.models.base import GenerationParams
from isqaflow.models.planning.servecheck import check_serving, stage_generations

REPO = Path(__file__).resolve().parents[3]
FIXTURE = json.loads((REPO / "tests/fixtures/vllm-0.33.0-interface.json").read_text())
TABLE5 = {
    "num_beams": 2,
    "no_repeat_ngram_size": 3,
    "max_new_tokens": 200,
    "min_new_tokens": 100,
    "max_input_tokens": 2048,
}


@pytest.fixture(scope="module")
def paper() -> dict:
    return yaml.safe_load((REPO / "config/paper.yaml").read_text())


def test_the_table_covers_every_generation_parameter_and_backend():
    fields = {f.name for f in dataclasses.fields(GenerationParams)} - {"return_logprobs"}
    assert set(capabilities.TABLE) == fields
    for row in capabilities.TABLE.values():
        assert set(row) == set(capabilities.BACKENDS)
        assert {status for status, _ in row.values()} <= {
            capabilities.HONOURED,
            capabilities.EMULATED,
            capabilities.REFUSED,
        }


def test_beam_search_ignored_fields_match_vllm():
    """The fields refused with beam search are exactly the stage parameters vLLM's beam search does not read."""
    reads = set(FIXTURE["requests"]["ChatCompletionRequest"]["beam_search_reads"])
    for param, field in capabilities.BEAM_IGNORED.items():
        assert (
            field in FIXTURE["requests"]["ChatCompletionRequest"]["fields"] and field not in reads
        ), param
    assert (
        "min_tokens" not in FIXTURE["beam_search_params"]
        and "stop" not in FIXTURE["beam_search_params"]
    )


def test_no_table5_parameter_is_silently_dropped_on_any_backend():
    """Each backend either honours Table 5's settings or the check names each one it cannot."""
    for backend in capabilities.BACKENDS:
        refused = capabilities.refusals(TABLE5, backend)
        applied = capabilities.applied(TABLE5, backend)
        for key in TABLE5:
            named = any(r.startswith(f"{key}=") for r in refused)
            assert named or applied[key]["status"] in (
                capabilities.HONOURED,
                capabilities.EMULATED,
            ), (backend, key)
    assert capabilities.refusals(TABLE5, "hf") == []
    vllm = capabilities.refusals(TABLE5, "vllm")
    assert vllm == [
        "no_repeat_ngram_size=3",
        "min_new_tokens=100 (with num_beams=2: vLLM's beam search ignores min_tokens)",
    ]
    assert {r.split("=")[0] for r in capabilities.refusals(TABLE5, "openai")} == {
        "num_beams",
        "no_repeat_ngram_size",
        "min_new_tokens",
        "max_input_tokens",
    }


def test_min_tokens_alone_is_honoured_by_vllm():
    assert capabilities.refusals({"max_new_tokens": 100, "min_new_tokens": 10}, "vllm") == []
    assert capabilities.refusals({"max_new_tokens": 100, "num_beams": 2}, "vllm") == []


def served(entry: dict, drop: bool) -> dict:
    entry = copy.deepcopy(entry)
    if drop:
        entry["serve"]["unsupported_decoding"] = "drop"
    else:
        entry["serve"].pop("unsupported_decoding", None)
    return entry


def test_a_stage_vllm_cannot_honour_fails_at_config_check_with_the_choices(paper):
    config = copy.deepcopy(paper)
    config["models"]["vicuna-7b"] = served(config["models"]["vicuna-7b"], drop=False)
    problems = dict(check_serving(config))
    message = problems["isqa.feedback_generation"]
    assert message.startswith(
        "model vicuna-7b (vllm) cannot honour no_repeat_ngram_size=3, "
        "min_new_tokens=10 (with num_beams=2: vLLM's beam search ignores min_tokens)"
    )
    assert "run model vicuna-7b with the hf backend for this stage (no serve:)" in message
    assert "drop min_new_tokens, no_repeat_ngram_size from isqa.feedback_generation" in message
    assert "models.vicuna-7b.serve.unsupported_decoding: drop" in message
    assert "isqa.summary_generation" in problems  # the summarizer too
    # the choices work: the hf backend, or the parameters dropped, or knowingly decoded without them
    hf = copy.deepcopy(config)
    hf["models"]["vicuna-7b"].pop("serve")
    assert "isqa.feedback_generation" not in dict(check_serving(hf))
    fewer = copy.deepcopy(config)
    for key in ("isqa",):
        for gen in ("summary_generation", "feedback_generation"):
            fewer[key][gen] = {
                k: v
                for k, v in fewer[key][gen].items()
                if k not in ("min_new_tokens", "no_repeat_ngram_size")
            }
    assert (
        dict(check_serving(fewer))
        .keys()
        .isdisjoint({"isqa.feedback_generation", "isqa.summary_generation"})
    )
    assert check_serving(paper) == []  # drop, as config/paper.yaml says


def test_api_model_refusals_and_drop(paper):
    config = copy.deepcopy(paper)
    config["models"]["gpt35"].pop("unsupported_decoding")
    ((path, message),) = check_serving(config)
    assert (
        path == "isqa.feedback_generation"
        and "model gpt35 (openai) cannot honour num_beams=2" in message
    )


def test_served_dtype_must_be_explicit_and_passed(paper):
    config = copy.deepcopy(paper)
    config["models"]["vicuna-7b"]["dtype"] = "auto"
    assert any(
        p == "models.vicuna-7b.dtype" and "vLLM takes auto as float16" in m
        for p, m in check_serving(config)
    )
    config = copy.deepcopy(paper)
    config["models"]["llama3-8b"]["serve"]["command"] = "vllm serve {model} --port {port}"
    assert any(p == "models.llama3-8b.serve.command" for p, _ in check_serving(config))


def test_every_stage_generation_is_checked(paper):
    paths = {path for path, _, _ in stage_generations(paper)}
    assert paths == {
        "isqa.summary_generation",
        "isqa.feedback_generation",
        "isqa.questions.generated.generation",
        "metrics.qg.generation",
        "finetune.vicuna-7b-hotpotqa.evaluation.generation",
        "drfr.generation",
        "arena.generation",
        "arena_hard.generation",
    }


def test_the_docs_hold_the_table():
    docs = (REPO / "docs/paper-scale.md").read_text()
    assert capabilities.markdown_table() in docs


def test_the_embedded_config_passes(paper):
    embedded = yaml.safe_load((REPO / "config/config.yaml").read_text())
    assert check_serving(embedded) == []
    assert not re.search(
        r"dtype: auto\s", (REPO / "config/paper.yaml").read_text().split("t5-large-qg")[0]
    )
