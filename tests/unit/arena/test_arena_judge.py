"""Tests for RAG-QA Arena's pairwise judge: prompt, verdict parsing, order combination, modes."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest

from isqaflow.arena.judging.judge import FEW_SHOT, SYSTEM_PROMPT, judge_pairs, pair_request
from isqaflow.arena.ratings.bootstrap import battles_from_verdicts
from isqaflow.arena.judging.verdicts import combine_orders, parse_verdict, position_consistency
from isqaflow.models.base import Generation, GenerationParams, LanguageModel, Request
from isqaflow.models.registry import load_model

ANSWER_TAGS = re.compile(
    r"<answer 1>\n(.*?)\n</answer 1>\n\n<answer 2>\n(.*?)\n</answer 2>", re.DOTALL
)


def make_pairs(n: int) -> list[dict]:
    """Pairs whose better answer says GOOD: system_a's for even i, system_b's for odd i."""
    pairs = []
    for i in range(n):
        good, poor = f"GOOD answer {i}.", f"poor answer {i}."
        pairs.append(
            {
                "pair_id": f"p{i}",
                "query": f"question number {i}",
                "system_a": "lfrqa",
                "answer_a": good if i % 2 == 0 else poor,
                "system_b": "llm",
                "answer_b": poor if i % 2 == 0 else good,
                "domain": "science",
            }
        )
    return pairs


def shown_answers(request: Sequence[dict]) -> tuple[str, str]:
    """(answer 1, answer 2) of the pair a request asks about (its last user turn)."""
    return ANSWER_TAGS.search(request[-1]["content"]).groups()


class FakeJudge(LanguageModel):
    """A fake judge that writes ``reply(request)``; records every generate call."""

    backend = "fake"

    def __init__(self, reply):
        self.reply = reply
        self.calls: list[list[Request]] = []

    def identity(self) -> dict:
        return {"backend": self.backend}

    def generate(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        self.calls.append(list(requests))
        return [Generation(text=self.reply(request)) for request in requests]


def prefers_good(request) -> str:
    first, _ = shown_answers(request)
    label = "1" if "GOOD" in first else "2"
    return f"<thinking>The GOOD one is complete.</thinking>\n<rating>{label}</rating>"


# ------------------------------------------------------------------- prompt
def test_pair_request_structure():
    messages = pair_request("who wrote Dracula", "Bram Stoker.", "Mary Shelley.")
    assert [m["role"] for m in messages] == ["system"] + ["user", "assistant"] * 3 + ["user"]
    assert messages[0]["content"] == SYSTEM_PROMPT
    assert shown_answers(messages) == ("Bram Stoker.", "Mary Shelley.")
    assert messages[-1]["content"].startswith("<query>\nwho wrote Dracula\n</query>\n\n")
    assert "<thinking>" in messages[-1]["content"]
    # the examples teach one of each label, in the reply format asked for
    assert [parse_verdict(m["content"]) for m in messages[2:7:2]] == ["1", "2", "tie"]
    assert all(m["content"].startswith("<thinking>") for m in messages[2:7:2])
    assert [shown_answers(messages[: k + 1]) for k in (1, 3, 5)] == [
        (example[1], example[2]) for example in FEW_SHOT
    ]


def test_pair_request_without_examples_or_thinking():
    plain = pair_request("q", "x", "y", few_shot=False)
    assert [m["role"] for m in plain] == ["system", "user"]
    rating_only = pair_request("q", "x", "y", with_thinking=False)
    assert all("<thinking>" not in m["content"] for m in rating_only)
    assert [m["content"] for m in rating_only[2:7:2]] == [
        "<rating>1</rating>",
        "<rating>2</rating>",
        "<rating>0</rating>",
    ]


# ------------------------------------------------------------------- parsing
@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("<thinking>A is complete</thinking><rating>1</rating>", "1"),
        ("<rating> 2 </rating>", "2"),
        ("<rating>0</rating>", "tie"),
        ("<THINKING>Both fine.</THINKING>\n< Rating >0</ rating >", "tie"),
        ("<rating>10</rating>", None),
        ("<rating>1 or 2</rating>", None),
        ("<rating>tie</rating>", None),
        ("<rating></rating>", None),
        ("I prefer answer 1.", None),
        ("", None),
        ("<thinking>Answer 2 cites the date.</thinking>\n<rating>2", "2"),
        ("<thinking>Answer 2 cites the date.</thinking>\n<rating>2\n", "2"),
        ("<rating>2\nbut answer 1 is also fine", None),
        ("<rating>1</rating> On reflection: <rating>2</rating>", "2"),
        ("<rating>1</rating> wait <rating>0", "tie"),
        # the paper's tie label (Table 15)
        ("<thinking>Equally good.</thinking><rating>3</rating>", "tie"),
        ("<rating> 3 \n", "tie"),
        ("<rating>2</rating> no: <rating>3</rating>", "tie"),
        ("<rating>4</rating>", None),
        ("<rating>30</rating>", None),
    ],
)
def test_parse_verdict(reply, verdict):
    assert parse_verdict(reply) == verdict


@pytest.mark.parametrize(
    ("first", "second", "combined"),
    [
        ("a", "a", "a"),
        ("b", "b", "b"),
        ("a", "b", "tie"),
        ("a", "tie", "tie"),
        ("tie", "b", "tie"),
        ("tie", "tie", "tie"),
        (None, "a", None),
        ("tie", None, None),
        (None, None, None),
    ],
)
def test_combine_orders(first, second, combined):
    assert combine_orders(first, second) == combined


def test_combine_orders_rejects_positional_labels():
    with pytest.raises(ValueError, match="'1'"):
        combine_orders("1", "a")


# ------------------------------------------------------------------- both orders
def test_position_biased_judge_gives_ties_and_inconsistency():
    pairs = make_pairs(3)
    model = FakeJudge(lambda request: "<thinking>First is best.</thinking><rating>1</rating>")
    records = judge_pairs(model, pairs, orders="both")
    assert len(model.calls) == 1 and len(model.calls[0]) == 6
    for k, pair in enumerate(pairs):
        assert shown_answers(model.calls[0][k]) == (pair["answer_a"], pair["answer_b"])
        assert shown_answers(model.calls[0][3 + k]) == (pair["answer_b"], pair["answer_a"])
    for pair, record in zip(pairs, records, strict=True):
        assert {key: record[key] for key in pair} == pair  # passed through
        assert record["order"] == "both"
        assert (record["verdict_ab"], record["verdict_ba"]) == ("a", "b")
        assert record["verdict"] == "tie"
        assert record["position_consistent"] is False
        assert record["raw_ab"] == record["raw_ba"] == model.reply(None)
        assert record["logprobs_ab"] is None and record["logprobs_ba"] is None
    assert position_consistency(records) == {
        "n_pairs": 3,
        "n_both_valid": 3,
        "n_consistent": 0,
        "rate": 0.0,
    }


def test_consistent_judge_maps_the_swapped_order_back():
    pairs = make_pairs(4)
    records = judge_pairs(FakeJudge(prefers_good), pairs, orders="both")
    assert [r["verdict"] for r in records] == ["1", "2", "1", "2"]
    assert [(r["verdict_ab"], r["verdict_ba"]) for r in records] == [("a", "a"), ("b", "b")] * 2
    assert all(r["position_consistent"] is True for r in records)
    battles, n_invalid = battles_from_verdicts(
        pd.DataFrame(records), system_1="system_a", system_2="system_b"
    )
    assert n_invalid == 0
    assert list(battles["winner"]) == ["model_a", "model_b", "model_a", "model_b"]  # GOOD wins
    assert list(battles["model_a"]) == ["lfrqa"] * 4


def test_an_invalid_order_makes_the_pair_invalid():
    def reply(request) -> str:
        first, _ = shown_answers(request)
        return "I like answer 1." if first == "poor answer 0." else prefers_good(request)

    records = judge_pairs(FakeJudge(reply), make_pairs(2), orders="both")
    assert (records[0]["verdict_ab"], records[0]["verdict_ba"]) == ("a", None)
    assert records[0]["verdict"] is None and records[0]["position_consistent"] is None
    assert records[1]["verdict"] == "2" and records[1]["position_consistent"] is True
    assert position_consistency(records) == {
        "n_pairs": 2,
        "n_both_valid": 1,
        "n_consistent": 1,
        "rate": 1.0,
    }


def test_judge_pairs_rejects_clashing_keys_and_bad_options():
    model = FakeJudge(prefers_good)
    with pytest.raises(ValueError, match="verdict"):
        judge_pairs(model, [{**make_pairs(1)[0], "verdict": "1"}])
    with pytest.raises(ValueError, match="orders"):
        judge_pairs(model, make_pairs(1), orders="swap")
    with pytest.raises(ValueError, match="mode"):
        judge_pairs(model, make_pairs(1), mode="vote")
    assert judge_pairs(model, []) == [] and model.calls == []


# ------------------------------------------------------------------- random order
def test_random_order_is_seeded_and_mapped_back():
    pairs = make_pairs(24)
    model = FakeJudge(prefers_good)
    first = judge_pairs(model, pairs, orders="random", seed=7)
    again = judge_pairs(model, pairs, orders="random", seed=7)
    other = judge_pairs(model, pairs, orders="random", seed=8)
    orders = [r["order"] for r in first]
    assert orders == [r["order"] for r in again]
    assert orders != [r["order"] for r in other]
    assert {"ab", "ba"} == set(orders)
    assert len(model.calls[0]) == 24  # one request per pair, in one call
    for pair, record, request in zip(pairs, first, model.calls[0], strict=True):
        shown = (pair["answer_a"], pair["answer_b"])
        assert shown_answers(request) == (shown if record["order"] == "ab" else shown[::-1])
        other_order = "ba" if record["order"] == "ab" else "ab"
        assert record[f"raw_{other_order}"] is None and record[f"verdict_{other_order}"] is None
        assert record["position_consistent"] is None
    assert [r["verdict"] for r in first] == ["1", "2"] * 12
    assert position_consistency(first)["n_both_valid"] == 0


# ------------------------------------------------------------------- logprob mode
class CountingModel(LanguageModel):
    """Forwards to a real model, counting score_batch calls."""

    backend = "counting"

    def __init__(self, inner: LanguageModel):
        self.inner = inner
        self.score_calls = 0

    def identity(self) -> dict:
        return self.inner.identity()

    def generate(self, requests, params):
        raise AssertionError("logprob mode must not generate")

    def score_batch(self, items):
        self.score_calls += 1
        return self.inner.score_batch(items)


def test_logprob_mode_picks_the_likeliest_label_on_the_tiny_model(tiny_causal):
    base = load_model({"backend": "hf", "model": str(tiny_causal)}, threads=1)
    model = CountingModel(base)
    pairs = make_pairs(3)
    records = judge_pairs(model, pairs, mode="logprob", orders="both")
    assert model.score_calls == 1
    # The same judgments again (now scored through the prefix store): equal labels and
    # verdicts, log-probabilities equal to float32 rounding -- on an Intel Xeon the second
    # pass differs by ~4e-6 nats (other GEMM shapes), on the AMD EPYC class by nothing.
    again = judge_pairs(model, pairs, mode="logprob", orders="both")
    assert len(again) == len(records)
    for first, second in zip(records, again):
        assert first.keys() == second.keys()
        for key, value in first.items():
            if isinstance(value, float):
                assert second[key] == pytest.approx(value, abs=1e-4), key
            elif isinstance(value, dict) and all(isinstance(v, float) for v in value.values()):
                assert second[key] == pytest.approx(value, abs=1e-4), key
            else:
                assert second[key] == value, key
    candidates = ["<rating>1", "<rating>2", "<rating>0"]
    to_side = {"ab": {"1": "a", "2": "b", "0": "tie"}, "ba": {"1": "b", "2": "a", "0": "tie"}}
    for pair, record in zip(pairs, records, strict=True):
        for order, (first, second) in {
            "ab": (pair["answer_a"], pair["answer_b"]),
            "ba": (pair["answer_b"], pair["answer_a"]),
        }.items():
            request = pair_request(pair["query"], first, second, with_thinking=False)
            (scores,) = base.score_batch([(request, candidates)])
            logprobs = record[f"logprobs_{order}"]
            assert list(logprobs) == ["1", "2", "0"]
            assert list(logprobs.values()) == pytest.approx(scores, abs=1e-4)
            best = ["1", "2", "0"][scores.index(max(scores))]
            assert record[f"verdict_{order}"] == to_side[order][best]
            assert record[f"raw_{order}"] == ""
        assert record["verdict"] in ("1", "2", "tie")
        assert record["position_consistent"] in (True, False)


class GoodSeekingScorer(LanguageModel):
    """A fake local judge: the label of the GOOD answer's position is likeliest; no GOOD: 0."""

    backend = "fake"

    def __init__(self):
        self.requests: list[Request] = []
        self.score_calls = 0

    def identity(self) -> dict:
        return {"backend": self.backend}

    def generate(self, requests, params):
        raise AssertionError("logprob mode must not generate")

    def score_batch(self, items):
        self.score_calls += 1
        rows = []
        for request, candidates in items:
            assert candidates == ["<rating>1", "<rating>2", "<rating>0"]
            self.requests.append(request)
            first, second = shown_answers(request)
            rows.append(
                [-1.0, -2.0, -3.0]
                if "GOOD" in first
                else [-2.0, -1.0, -3.0]
                if "GOOD" in second
                else [-2.0, -3.0, -0.5]
            )
        return rows


def test_logprob_mode_maps_every_label_back():
    pairs = make_pairs(2) + [{**make_pairs(1)[0], "pair_id": "even", "answer_a": "same"}]
    model = GoodSeekingScorer()
    records = judge_pairs(model, pairs, mode="logprob", orders="both")
    assert model.score_calls == 1 and len(model.requests) == 6
    assert all("<thinking>" not in m["content"] for r in model.requests for m in r)
    assert [r["verdict"] for r in records] == ["1", "2", "tie"]
    assert [(r["verdict_ab"], r["verdict_ba"]) for r in records] == [
        ("a", "a"),
        ("b", "b"),
        ("tie", "tie"),
    ]
    assert records[1]["logprobs_ab"] == {"1": -2.0, "2": -1.0, "0": -3.0}
    assert records[1]["logprobs_ba"] == {"1": -1.0, "2": -2.0, "0": -3.0}
    assert [r["position_consistent"] for r in records] == [True, True, True]


# ------------------------------------------------------------------- calibrated rule
class Scorer(LanguageModel):
    """A fake local judge: ``logprobs(answer_1, answer_2)`` gives the labels' [1, 2, 0] log-probs."""

    backend = "fake"

    def __init__(self, logprobs):
        self.logprobs = logprobs

    def identity(self) -> dict:
        return {"backend": self.backend}

    def generate(self, requests, params):
        raise AssertionError("logprob mode must not generate")

    def score_batch(self, items):
        return [list(self.logprobs(*shown_answers(request))) for request, _ in items]


def quality(answer: str) -> float:
    return 1.0 if "GOOD" in answer else 0.0


def biased_good_seeker(bias: float):
    """Prefers GOOD by 0.5 nats, plus a constant preference of ``bias`` nats for answer 1."""
    return lambda first, second: (
        -1.0 + 0.5 * quality(first) + bias,
        -1.0 + 0.5 * quality(second),
        -3.0,
    )


def test_calibration_removes_a_constant_position_preference():
    pairs = make_pairs(4)  # GOOD is system_a's for even i, system_b's for odd i
    model = Scorer(biased_good_seeker(bias=2.0))  # position 1 always wins the raw label
    raw = judge_pairs(model, pairs, mode="logprob", orders="both", rule="raw")
    calibrated = judge_pairs(model, pairs, mode="logprob", orders="both", rule="calibrated")
    assert [r["verdict"] for r in raw] == ["tie"] * 4
    assert [r["verdict_raw"] for r in calibrated] == ["tie"] * 4
    assert [r["verdict"] for r in calibrated] == ["1", "2", "1", "2"]
    assert [r["verdict_calibrated"] for r in raw] == ["1", "2", "1", "2"]  # stored under raw too
    assert [r["rule"] for r in calibrated] == ["calibrated"] * 4 and raw[0]["rule"] == "raw"
    for record in calibrated:
        assert abs(record["margin"]) == pytest.approx(0.5)
        # order ab: answer 1 is system_a; order ba: answer 2 is system_a
        assert record["margin_ab"] == pytest.approx(
            record["logprobs_ab"]["1"] - record["logprobs_ab"]["2"]
        )
        assert record["margin_ba"] == pytest.approx(
            record["logprobs_ba"]["2"] - record["logprobs_ba"]["1"]
        )
        assert record["margin"] == pytest.approx((record["margin_ab"] + record["margin_ba"]) / 2)
        assert record["position_consistent"] is False  # the labels flip with the order
        assert record["position_consistent_calibrated"] is False  # +2.5 vs -1.5
    assert position_consistency(calibrated)["rate"] == 0.0
    assert position_consistency(calibrated, "position_consistent_calibrated")["rate"] == 0.0


def test_calibrated_consistency_when_margins_share_the_sign():
    model = Scorer(biased_good_seeker(bias=0.2))  # the content outweighs the position
    records = judge_pairs(model, make_pairs(2), mode="logprob", rule="calibrated")
    assert [r["verdict"] for r in records] == ["1", "2"]
    assert [r["position_consistent_calibrated"] for r in records] == [True, True]
    stats = position_consistency(records, "position_consistent_calibrated")
    assert stats == {"n_pairs": 2, "n_both_valid": 2, "n_consistent": 2, "rate": 1.0}


def test_calibrated_margin_is_antisymmetric_under_swapping_the_systems():
    rng = np.random.default_rng(0)
    table = {}

    def arbitrary(first, second):  # any fixed log-probs per shown (answer 1, answer 2)
        return table.setdefault((first, second), tuple(rng.normal(-2.0, 1.0, 3)))

    pairs = make_pairs(6)
    swapped = [
        {
            **p,
            "system_a": p["system_b"],
            "answer_a": p["answer_b"],
            "system_b": p["system_a"],
            "answer_b": p["answer_a"],
        }
        for p in pairs
    ]
    model = Scorer(arbitrary)
    forward = judge_pairs(model, pairs, mode="logprob", rule="calibrated")
    backward = judge_pairs(model, swapped, mode="logprob", rule="calibrated")
    flip = {"1": "2", "2": "1", "tie": "tie"}
    for f, b in zip(forward, backward, strict=True):
        assert b["margin"] == -f["margin"]  # exactly
        assert (b["margin_ab"], b["margin_ba"]) == (-f["margin_ba"], -f["margin_ab"])
        assert b["verdict"] == flip[f["verdict"]]


def test_tie_band_and_identical_answers():
    def fixed(first, second):  # answer-1 label 0.3 nats likelier for "x" first, mirrored otherwise
        return (
            (-1.0, -1.3, -2.0)
            if first == "x" and second == "y"
            else ((-1.3, -1.0, -2.0) if first == "y" and second == "x" else (-0.5, -4.0, -2.0))
        )

    pair = {
        "pair_id": "p",
        "query": "q",
        "system_a": "A",
        "answer_a": "x",
        "system_b": "B",
        "answer_b": "y",
    }
    model = Scorer(fixed)
    verdict = lambda band, p=pair: judge_pairs(  # noqa: E731
        model, [p], mode="logprob", rule="calibrated", tie_band=band
    )[0]
    assert verdict(0.0)["margin"] == pytest.approx(0.3)
    assert verdict(0.0)["verdict"] == "1"
    assert verdict(0.29)["verdict"] == "1"
    assert verdict(0.3 + 1e-9)["verdict"] == "tie"
    assert verdict(1.0)["verdict"] == "tie" and verdict(1.0)["tie_band"] == 1.0
    mirrored = {**pair, "answer_a": "y", "answer_b": "x"}
    assert verdict(0.1, mirrored)["verdict"] == "2"
    # identical answers: both orders are the same request, the margin is exactly 0
    same = {**pair, "answer_b": "x"}
    record = verdict(0.0, same)
    assert record["margin"] == 0.0 and record["verdict"] == "tie"
    assert record["verdict_raw"] == "tie"  # position 1 wins in both orders: a disagreement


def test_nan_margin_is_invalid_not_a_tie():
    model = Scorer(lambda first, second: (float("-inf"), float("-inf"), 0.0))
    (record,) = judge_pairs(model, make_pairs(1), mode="logprob", rule="calibrated")
    assert record["verdict"] is None and record["verdict_calibrated"] is None


def test_calibrated_rule_needs_logprobs_of_both_orders():
    model = FakeJudge(prefers_good)
    with pytest.raises(ValueError, match="rule 'calibrated' needs the label log-probabilities"):
        judge_pairs(model, make_pairs(1), mode="text", rule="calibrated")
    with pytest.raises(ValueError, match="orders"):
        judge_pairs(
            Scorer(biased_good_seeker(0.0)),
            make_pairs(1),
            mode="logprob",
            orders="random",
            rule="calibrated",
        )
    with pytest.raises(ValueError, match="rule must be one of"):
        judge_pairs(model, make_pairs(1), rule="mean")
    with pytest.raises(ValueError, match="tie_band"):
        judge_pairs(model, make_pairs(1), tie_band=-0.1)


def test_check_verdict_rule_names_the_judge():
    from isqaflow.arena.judging.verdicts import check_verdict_rule

    with pytest.raises(ValueError, match=r"^arena\.judges\.gpt4: rule 'calibrated'.*mode 'text'"):
        check_verdict_rule("arena.judges.gpt4", mode="text", rule="calibrated")
    check_verdict_rule("arena.judges.local", mode="logprob", rule="calibrated", tie_band=0.0)
    check_verdict_rule("arena.judges.gpt4", mode="text", rule="raw")


def test_text_mode_records_have_no_calibrated_verdict():
    records = judge_pairs(FakeJudge(prefers_good), make_pairs(2), orders="both")
    assert [r["verdict"] for r in records] == [r["verdict_raw"] for r in records] == ["1", "2"]
    assert all(r["verdict_calibrated"] is None and r["margin"] is None for r in records)
    assert all(r["position_consistent_calibrated"] is None for r in records)
