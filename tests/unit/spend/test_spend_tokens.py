"""Prompt tokens of the spend plan (isqaflow.spend.tokens): OpenAI's encodings offline through the
optional bpe-openai package where the model is known, else characters / 4 -- the fallback, named.

The exact checks skip, with the reason, where bpe-openai is not installed (pyproject pins it; the
code runs without it, and an environment built before the pin lacks it).  With it, the plan's prompt tokens of every stage whose
texts were all read equal the tokens of the requests the stages really sent (counted by the
counting double's record of them), exactly."""

from __future__ import annotations

import importlib.util
import random
import re

import pytest
import yaml
from test_spend import ROOT, embedded_api, run_stages  # noqa: F401  (embedded_api: the fixture)

from isqaflow import spend
from isqaflow.spend import tokens

needs_bpe = pytest.mark.skipif(  # found, not imported: its import takes seconds (collection)
    importlib.util.find_spec("bpe_openai") is None,
    reason="bpe-openai is not installed (pinned in pyproject.toml); "
    "the plan counts chars/4 (fallback)",
)


def test_the_paper_configs_models_have_their_encodings_and_others_the_fallback():
    paper = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    names = {
        entry["model"]: tokens.encoding_name(entry["model"])
        for entry in paper["models"].values()
        if entry.get("backend") == "openai" and not entry.get("serve")
    }
    assert names == {
        "gpt-4-0314": "cl100k_base",
        "gpt-4-0125-preview": "cl100k_base",
        "gpt-4-1106-preview": "cl100k_base",
        "gpt-3.5-turbo-1106": "cl100k_base",
        "gpt-3.5-turbo-0125": "cl100k_base",
        "gpt-4-turbo-2024-04-09": "cl100k_base",
        "gpt-4o-2024-05-13": "o200k_base",
    }
    assert (
        tokens.encoding_name("gpt-4o-mini") == "o200k_base"
        and tokens.encoding_name("o3-mini") == "o200k_base"
    )
    assert tokens.encoding_name("gpt-4") == "cl100k_base"
    assert tokens.encoding_name("double") is None and tokens.encoding_name("llama3-8b") is None
    assert tokens.counter_for({"model": "double"}) is tokens.ESTIMATE
    assert tokens.ESTIMATE.name == "chars/4 (fallback)"


def test_without_bpe_openai_every_model_counts_by_the_fallback(monkeypatch):
    monkeypatch.setattr(tokens, "bpe_module", lambda: None)
    assert tokens.counter_for({"model": "gpt-4o-2024-05-13"}) is tokens.ESTIMATE
    paper = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    rows = [row for row in spend.plan(paper, root="/nonexistent") if row.calls is not None]
    assert {row.tokenizer for row in rows} == {"chars/4 (fallback)"}
    assert "prompt tokens by chars/4 (fallback)" in spend.table(paper, rows)


def test_a_placeholder_is_its_length_and_counts_as_chars_over_4_in_the_fallback():
    text = tokens.filler(2048, "api-a:q1:")
    assert len(text) == 2048 and text.startswith("api-a:q1: abc abc")
    assert tokens.filler(3, "long prefix") == "long prefix"
    assert tokens.ESTIMATE.text(text) == 512
    assert tokens.ESTIMATE([{"role": "user", "content": "x" * 10}]) == 3 + tokens.MESSAGE_TOKENS


@needs_bpe
@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_the_exact_counter_is_the_encoding_and_a_placeholder_its_bound(name):
    encoding = tokens.bpe_module().get_encoding(name)
    counter = tokens.Encoded(name)
    assert len(encoding.encode(tokens.FILLER_UNIT * 1000)) == 1000  # one token per unit
    text = "Does the summary state that the answer to: what is measured? is: the F1 score."
    assert counter.text(text) == len(encoding.encode(text))
    placeholder = tokens.filler(2048, "api-a:q1:")
    assert abs(counter.text(placeholder) - len(encoding.encode(placeholder))) <= 1
    assert counter.text(tokens.filler(4000)) == 1000  # not encoded: its characters / 4
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}]
    # OpenAI's cookbook: 3 per message + the role's and the content's tokens, 3 priming the reply
    assert counter(messages) == 3 + sum(
        3 + len(encoding.encode(m["role"])) + len(encoding.encode(m["content"])) for m in messages
    )


@needs_bpe
def test_the_plans_prompt_tokens_equal_the_sent_requests_tokens_exactly(embedded_api):  # noqa: F811
    config, root, double = embedded_api
    config["models"]["api"]["model"] = "gpt-4o"  # o200k_base; the double answers any model name
    run_stages(config, root, double)
    counter = tokens.Encoded("o200k_base")
    rows = [row for row in spend.plan(config, root) if row.calls is not None]
    assert {row.tokenizer for row in rows} == {"o200k_base"}
    exact = [
        row for row in rows if row.basis == "data" and row.rule != "rag_answers"
    ]  # rag: passages estimated
    assert {row.rule for row in exact} >= {
        "drfr_responses",
        "drfr_judge",
        "arena_judge",
        "arena_judge_checks",
        "drfr_summaries",
        "arena_summaries",
    }
    for row in exact:
        sent = double.jobs[row.job]
        assert (row.calls, row.input_tokens) == (
            len(sent),
            sum(counter(messages) for messages in sent),
        ), row.job


def test_the_filler_runs_are_the_regex_matches():
    """:func:`tokens.filler_runs` finds what the regex ``(?: abc){4,}`` finds (its specification,
    faster): runs of 4 units or more, left to right, each as long as it goes."""
    regex = re.compile(f"(?:{re.escape(tokens.FILLER_UNIT)}){{4,}}")
    rng = random.Random(0)
    parts = [tokens.FILLER_UNIT, " ab", "abc", " abcd", " ", "c", "\n", "é"]
    texts = [tokens.filler(2048, "api-a:q1:"), "", tokens.FILLER_UNIT * 3, tokens.FILLER_UNIT * 4]
    texts += [
        "".join(
            rng.choice(parts) * rng.choice([1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 300])
            for _ in range(rng.randint(0, 12))
        )
        for _ in range(5000)
    ]
    for text in texts:
        assert list(tokens.filler_runs(text)) == [m.span() for m in regex.finditer(text)], text
