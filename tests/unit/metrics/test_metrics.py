"""QA-based metrics: QAGS, QuestEval, the shared question pipeline, QAGS's candidate pool,
QuestEval's query weights, the known-answer controls (ROUGE: tests/unit/text/test_text_rouge.py;
the QA models: tests/unit/qa/test_qa_models.py).

Model outputs are scripted wherever a value is checked by hand; the tiny random
model only checks that the prompted answerer runs end to end and stays in range.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from isqaflow.metrics.qa_metrics import QAMetricSettings, score_summaries
from isqaflow.qa.answering import QAResult
from isqaflow.metrics.qags import Question, filter_questions, qags_score
from isqaflow.metrics.questeval import QuestEvalSettings, harmonic, questeval_scores
from isqaflow.models.base import LanguageModel
from isqaflow.text.candidates import Candidate

NAN = float("nan")


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


# ----------------------------------------------------------------------------- QAGS


def test_filter_questions_marks_invalid_and_duplicates():
    qs = [
        Question("What did Marta train?", "the parser"),
        Question("Marta trained the parser.", "the parser"),  # no question mark
        Question("Who trained?", "Marta"),  # two words
        Question("what did  Marta train ?", "the parser"),  # same after normalization
        Question("Who trained the parser", "Marta Lind"),  # no question mark: not remembered
        Question("Who trained the parser?", "Marta Lind"),  # so this is not a duplicate
        Question("who trained THE parser ?", "Marta"),  # duplicate of the previous one
    ]
    filter_questions(qs)
    assert [q.valid for q in qs] == [True, False, False, True, False, True, True]
    assert [q.duplicate for q in qs] == [False, False, False, True, False, False, True]
    assert [q.usable for q in qs] == [True, False, False, False, False, True, False]


def _answered(question, candidate, on_summary, on_source, valid=True, duplicate=False):
    q = Question(question, candidate, valid=valid, duplicate=duplicate)
    q.on_summary = None if on_summary is None else QAResult(on_summary, 1.0, 0.0)
    q.on_source = None if on_source is None else QAResult(on_source, 0.9, 0.0)
    return q


def _qags_questions():
    return [
        # summary gives back "parser" = the candidate after normalization; F1(parser, neural parser) = 2/3
        _answered("What was trained?", "the parser", "Parser", "the neural parser"),
        # F1("3000 annotated sentences", "3000 sentences") = 0.8 < 1 (kept only with min 0.8);
        # against the source's "3,000 sentences" also 0.8
        _answered(
            "How many sentences?", "3,000 sentences", "3,000 annotated sentences", "3,000 sentences"
        ),
        # invalid, or the same question as one kept before: not kept though the summary answer matches
        _answered("Who", "Marta", "Marta", "Marta", valid=False),
        _answered("What was trained?", "the parser", "the parser", "the parser", duplicate=True),
        # kept; unanswerable on the source -> F1 0
        _answered("Who trained the parser?", "Marta Lind", "Marta Lind", ""),
        # never answered on the summary: not kept
        _answered("Where was it trained?", "Elmford", None, "Elmford"),
    ]


def test_qags_score_keeps_questions_whose_summary_answer_is_the_candidate():
    qs = _qags_questions()
    score, kept = qags_score(qs, candidate_min_f1=1.0)
    assert kept == 2
    assert [q.kept for q in qs] == [True, False, False, False, True, False]
    assert score == pytest.approx((2 / 3 + 0.0) / 2)

    qs = _qags_questions()
    score, kept = qags_score(qs, candidate_min_f1=0.8)  # F1 exactly 0.8 passes (>=)
    assert kept == 3
    assert [q.kept for q in qs] == [True, True, False, False, True, False]
    assert score == pytest.approx((2 / 3 + 0.8 + 0.0) / 3)


def test_of_two_questions_with_one_text_the_one_that_gives_back_its_candidate_is_kept():
    """A question asked for two candidates has one answer: the duplicate filter keeps the
    instance whose candidate that answer is, not simply the first."""
    from isqaflow.metrics.qags import share_duplicate_answers

    first = _answered("What was the study on?", "UCL", "Latch-R", "LatchRank")
    second = _answered(
        "What was the study on?", "Latch-R", None, None, duplicate=True
    )  # never asked
    share_duplicate_answers([first, second])
    assert second.on_summary is first.on_summary and second.on_source is first.on_source
    score, kept = qags_score([first, second], candidate_min_f1=1.0)
    assert (first.kept, second.kept, kept) == (False, True, 1)
    assert score == pytest.approx(0.0)  # "Latch-R" against the source's "LatchRank"


def test_qags_score_is_nan_when_no_question_is_kept():
    qs = [
        _answered("What was trained?", "the parser", "a tokenizer", "the parser"),
        _answered("Who", "Marta", "Marta", "Marta", valid=False),
    ]
    score, kept = qags_score(qs, 1.0)
    assert math.isnan(score) and kept == 0
    assert not any(q.kept for q in qs)
    score, kept = qags_score([], 1.0)
    assert math.isnan(score) and kept == 0


def test_question_as_dict():
    q = _answered("What was trained?", "the parser", "Parser", None)
    q.kept = True
    assert q.as_dict() == {
        "question": "What was trained?",
        "candidate": "the parser",
        "valid": True,
        "duplicate": False,
        "kept": True,
        "padded": 0,
        "round": 1,
        "weight": 1.0,
        "probability": 0.0,
        "on_summary": {"answer": "Parser", "answerability": 1.0, "copies_excluded": 0},
        "on_source": None,
    }


# ----------------------------------------------------------------------------- QuestEval


def _qe_summary_questions():
    # answered on the source; precision = F1(on_source, candidate)
    q1 = Question("What was trained?", "the parser")
    q1.on_source = QAResult("parser", 0.9, 0.0)  # F1 1
    q2 = Question("Who trained it?", "Marta Lind")
    q2.on_source = QAResult("Lind", 0.5, 0.0)  # F1 2/3
    return [q1, q2]


def _qe_source_questions():
    # answered on the summary; recall = answerability, recall_f1 = F1(on_summary, candidate)
    s1 = Question("When was the bridge opened?", "1932")
    s1.on_summary = QAResult("1932", 0.8, 0.0)  # F1 1
    s2 = Question("Where is the bridge?", "Elmford")
    s2.on_summary = QAResult("", 0.2, 0.0)  # F1 0
    return [s1, s2]


def test_questeval_scores_by_hand():
    got = questeval_scores(_qe_summary_questions(), _qe_source_questions())
    precision, recall = (1 + 2 / 3) / 2, (0.8 + 0.2) / 2
    assert got["questeval_precision"] == pytest.approx(5 / 6)
    assert got["precision_answerability"] == pytest.approx(0.7)
    assert got["questeval_recall"] == pytest.approx(0.5)
    assert got["recall_f1"] == pytest.approx(0.5)
    assert got["questeval"] == pytest.approx(2 * precision * recall / (precision + recall))
    assert got["questeval"] == pytest.approx(0.625)
    assert got["questeval_v024"] == pytest.approx((5 / 6 + 0.7 + 0.5 + 0.5) / 4)


def test_questeval_nan_when_one_side_has_no_questions():
    """Option ``empty_side: drop``: a side without questions is left out (NaN)."""
    no_summary = questeval_scores([], _qe_source_questions(), "drop")
    assert math.isnan(no_summary["questeval_precision"]) and math.isnan(
        no_summary["precision_answerability"]
    )
    assert math.isnan(no_summary["questeval"])
    assert no_summary["questeval_recall"] == pytest.approx(0.5)
    assert no_summary["questeval_v024"] == pytest.approx(
        (0.5 + 0.5) / 2
    )  # mean of the parts present

    no_source = questeval_scores(_qe_summary_questions(), [], "drop")
    assert math.isnan(no_source["questeval_recall"]) and math.isnan(no_source["recall_f1"])
    assert math.isnan(no_source["questeval"])
    assert no_source["questeval_v024"] == pytest.approx((5 / 6 + 0.7) / 2)

    nothing = questeval_scores([], [], "drop")
    assert all(math.isnan(v) for v in nothing.values())


def test_harmonic():
    assert harmonic(0.0, 0.0) == 0.0
    assert harmonic(1.0, 0.0) == 0.0
    assert harmonic(0.5, 0.5) == pytest.approx(0.5)
    assert harmonic(1.0, 0.5) == pytest.approx(2 / 3)
    assert math.isnan(harmonic(NAN, 0.5)) and math.isnan(harmonic(0.5, NAN))


# ----------------------------------------------------------------------------- the shared pipeline

SOURCE = (
    "The bridge was opened in 1932 by the mayor of Elmford. It crosses the river Lund. "
    "The bridge is 300 metres long."
)
SUMMARY_1 = "The mayor opened the bridge in 1932."
SUMMARY_2 = "Elmford's bridge opened in 1933."


def _cand(text: str, sentence: str) -> Candidate:
    return Candidate(text, "entity", "X", sentence)


CANDIDATES = {
    SUMMARY_1: [
        _cand("1932", SUMMARY_1),
        _cand("the mayor", SUMMARY_1),
        _cand("Elmford", "S1 where"),
    ],
    SUMMARY_2: [_cand("1933", SUMMARY_2), _cand("Elmford", SUMMARY_2)],
    SOURCE: [_cand("1932", "source year"), _cand("the mayor of Elmford", "source who")],
}
# the question the fake generator writes for each (sentence, answer)
QUESTIONS = {
    (SUMMARY_1, "1932"): "When was the bridge opened?",
    (SUMMARY_1, "the mayor"): "Who opened the bridge?",
    ("S1 where", "Elmford"): "Where?",  # invalid: fewer than three words
    (SUMMARY_2, "1933"): "When was the bridge opened?",
    (SUMMARY_2, "Elmford"): "Which town has the bridge?",
    ("source year", "1932"): "In which year was the bridge opened?",
    ("source who", "the mayor of Elmford"): "Who opened the bridge in 1932?",
}
# (question, summary) -> (answer, answerability when asked for)
ON_SUMMARY = {
    ("When was the bridge opened?", SUMMARY_1): ("1932", 1.0),
    ("Who opened the bridge?", SUMMARY_1): ("the mayor", 1.0),
    ("When was the bridge opened?", SUMMARY_2): ("1933", 1.0),  # the summary's own candidate
    ("Which town has the bridge?", SUMMARY_2): ("Elmford", 1.0),
    ("In which year was the bridge opened?", SUMMARY_1): ("1932", 0.9),
    ("Who opened the bridge in 1932?", SUMMARY_1): ("the mayor", 0.6),
    ("In which year was the bridge opened?", SUMMARY_2): ("1933", 0.4),
    ("Who opened the bridge in 1932?", SUMMARY_2): ("", 0.1),
}
# question -> (answer on the source, answerability)
ON_SOURCE = {
    "When was the bridge opened?": ("1932", 0.8),
    "Who opened the bridge?": ("the mayor of Elmford", 0.6),
    "Which town has the bridge?": ("Elmford", 0.5),
}


class FakeGenerator:
    def __init__(self):
        self.calls: list[list[tuple[str, str]]] = []

    def generate(self, items):
        self.calls.append(list(items))
        return [QUESTIONS[item] for item in items]


class FakeAnswerer:
    def __init__(self):
        self.answer_calls: list[tuple[list[tuple[str, str]], Any]] = []
        self.long_calls: list[tuple[list[str], list[str]]] = []

    def answer(self, items, answerability=None, exclude_question_copies=False):
        self.answer_calls.append((list(items), answerability))
        out = []
        for item in items:
            text, p = ON_SUMMARY[item]
            out.append(QAResult(text, 1.0 if answerability is False else p, 0.0))
        return out

    def answer_long(self, questions, documents, exclude_question_copies=False):
        self.long_calls.append((list(questions), list(documents)))
        return [QAResult(*ON_SOURCE[q], 0.0) for q in questions]


# the pipeline as it was before QAGS's padding and order and QuestEval v0.2.4's choices became
# the defaults: the tests below check that behaviour, still available as options
LEGACY = dict(
    exclude_question_copies=False,
    pad_to_k=False,
    order="candidate",
    questeval=QuestEvalSettings(
        candidates="sampled", filters=True, empty_side="drop", answerability="odds"
    ),
)


@pytest.fixture
def scripted_candidates(monkeypatch):
    calls = []

    def fake(text, k, settings):
        calls.append((text, k))
        return list(CANDIDATES[text])

    monkeypatch.setattr("isqaflow.metrics.qa_metrics.candidates_for", fake)
    return calls


def test_score_summaries_by_hand(scripted_candidates):
    qg, qa = FakeGenerator(), FakeAnswerer()
    settings = QAMetricSettings(questions_per_summary=7, source_questions=5, **LEGACY)
    s1, s2 = score_summaries([(SUMMARY_1, SOURCE), (SUMMARY_2, SOURCE)], qg, qa, settings)

    # Summary 1: kept "When..." (1932 = candidate; source 1932 -> F1 1) and "Who opened the bridge?"
    # ("the mayor" = candidate; F1(mayor, mayor of elmford) = 0.5); "Where?" is invalid.
    assert s1.qags == pytest.approx((1.0 + 0.5) / 2)
    assert s1.qags_questions == 2
    assert s1.questions_generated == 3
    # QuestEval precision over the usable questions: F1(on source, candidate) = 1 and 0.5
    assert s1.questeval_precision == pytest.approx(0.75)
    assert s1.precision_answerability == pytest.approx((0.8 + 0.6) / 2)
    # recall: the source's questions answered on summary 1 (answerability 0.9 and 0.6)
    assert s1.questeval_recall == pytest.approx(0.75)
    assert s1.recall_f1 == pytest.approx(
        (1.0 + 0.5) / 2
    )  # "1932" vs "1932", "the mayor" vs "the mayor of Elmford"
    assert s1.questeval == pytest.approx(0.75)
    assert s1.questeval_v024 == pytest.approx((0.75 + 0.7 + 0.75 + 0.75) / 4)

    # Summary 2: "When..." answered "1933" on the summary = its candidate "1933", kept; on the
    # source "1932" -> F1 0.  "Which town..." kept with F1(Elmford, Elmford) = 1.
    assert s2.qags == pytest.approx((0.0 + 1.0) / 2)
    assert s2.qags_questions == 2
    assert s2.questions_generated == 2
    # precision: F1("1932", "1933") = 0, F1("Elmford", "Elmford") = 1
    assert s2.questeval_precision == pytest.approx(0.5)
    assert s2.precision_answerability == pytest.approx((0.8 + 0.5) / 2)
    assert s2.questeval_recall == pytest.approx((0.4 + 0.1) / 2)
    assert s2.recall_f1 == pytest.approx(0.0)
    assert s2.questeval == pytest.approx(2 * 0.5 * 0.25 / 0.75)
    assert s2.questeval_v024 == pytest.approx((0.5 + 0.65 + 0.25 + 0.0) / 4)

    # details: every question of the summary with its answers; the source's questions per summary
    d1 = s1.details["summary_questions"]
    assert [q["question"] for q in d1] == [
        "When was the bridge opened?",
        "Who opened the bridge?",
        "Where?",
    ]
    assert [q["kept"] for q in d1] == [True, True, False]
    assert d1[2]["valid"] is False and d1[2]["on_summary"] is None and d1[2]["on_source"] is None
    src1 = s1.details["source_questions"]
    src2 = s2.details["source_questions"]
    assert (
        [q["question"] for q in src1]
        == [q["question"] for q in src2]
        == ["In which year was the bridge opened?", "Who opened the bridge in 1932?"]
    )
    assert [q["on_summary"]["answerability"] for q in src1] == [0.9, 0.6]
    assert [q["on_summary"]["answerability"] for q in src2] == [0.4, 0.1]


def test_score_summaries_generates_source_questions_once_and_batches_calls(scripted_candidates):
    qg, qa = FakeGenerator(), FakeAnswerer()
    settings = QAMetricSettings(questions_per_summary=7, source_questions=5, **LEGACY)
    score_summaries([(SUMMARY_1, SOURCE), (SUMMARY_2, SOURCE)], qg, qa, settings)

    # candidates: each summary with K = questions_per_summary, the shared source once with source_questions
    assert sorted(scripted_candidates, key=str) == sorted(
        [(SUMMARY_1, 7), (SUMMARY_2, 7), (SOURCE, 5)], key=str
    )
    # two QG calls: all summaries' candidates, then the source's candidates once (not once per summary)
    assert len(qg.calls) == 2
    assert qg.calls[0] == [
        (SUMMARY_1, "1932"),
        (SUMMARY_1, "the mayor"),
        ("S1 where", "Elmford"),
        (SUMMARY_2, "1933"),
        (SUMMARY_2, "Elmford"),
    ]
    assert qg.calls[1] == [("source year", "1932"), ("source who", "the mayor of Elmford")]

    # two answer calls: the summaries' own usable questions without answerability, then the
    # source's questions on every summary with it
    assert len(qa.answer_calls) == 2
    own, own_flag = qa.answer_calls[0]
    assert own_flag is False
    assert own == [
        ("When was the bridge opened?", SUMMARY_1),
        ("Who opened the bridge?", SUMMARY_1),
        ("When was the bridge opened?", SUMMARY_2),
        ("Which town has the bridge?", SUMMARY_2),
    ]
    recall, recall_flag = qa.answer_calls[1]
    assert recall_flag is None
    assert recall == [
        ("In which year was the bridge opened?", SUMMARY_1),
        ("Who opened the bridge in 1932?", SUMMARY_1),
        ("In which year was the bridge opened?", SUMMARY_2),
        ("Who opened the bridge in 1932?", SUMMARY_2),
    ]
    # one answer_long call, with the source text (not the summary) for every usable summary question,
    # each distinct question once per source
    assert len(qa.long_calls) == 1
    questions, documents = qa.long_calls[0]
    assert questions == [
        "When was the bridge opened?",
        "Who opened the bridge?",
        "Which town has the bridge?",
    ]
    assert documents == [SOURCE] * 3


@pytest.mark.parametrize("copies", [1, 4])
def test_score_summaries_call_count_does_not_grow_with_summaries(scripted_candidates, copies):
    qg, qa = FakeGenerator(), FakeAnswerer()
    items = [(SUMMARY_1, SOURCE), (SUMMARY_2, SOURCE)] * copies
    scores = score_summaries(items, qg, qa, QAMetricSettings(**LEGACY))
    assert len(scores) == 2 * copies
    assert [s.qags for s in scores] == pytest.approx([0.75, 0.5] * copies)
    assert (len(qg.calls), len(qa.answer_calls), len(qa.long_calls)) == (2, 2, 1)
    assert len(qg.calls[1]) == 2  # the one source's questions, generated once
    assert [text for text, _ in scripted_candidates].count(SOURCE) == 1


def test_score_summaries_with_no_usable_question(monkeypatch):
    monkeypatch.setattr(
        "isqaflow.metrics.qa_metrics.candidates_for",
        lambda text, k, settings: [_cand("Elmford", "S1 where")] if text == SUMMARY_1 else [],
    )
    qg, qa = FakeGenerator(), FakeAnswerer()
    (score,) = score_summaries([(SUMMARY_1, SOURCE)], qg, qa, QAMetricSettings(**LEGACY))
    assert math.isnan(score.qags) and score.qags_questions == 0
    assert math.isnan(score.questeval) and math.isnan(score.questeval_v024)
    assert score.questions_generated == 1


class EchoQG:
    def __init__(self):
        self.items = []

    def generate(self, items):
        self.items += list(items)
        return [f"Which item is {answer}?" for _, answer in items]


class EchoQA:
    """Answers "Which item is X?" with X, anywhere."""

    def answer(self, items, answerability=None, exclude_question_copies=False):
        return [
            QAResult(re.fullmatch(r"Which item is (.*)\?", q).group(1), 0.5, 0.0) for q, _ in items
        ]

    def answer_long(self, questions, documents, exclude_question_copies=False):
        return self.answer(list(zip(questions, documents)))


def test_score_summaries_with_real_candidates():
    source = (
        "Marta Lind trained the parser on 3,000 annotated sentences in Oslo. The parser was released "
        "by the University of Elmford in 2019. It reads German and Norwegian text."
    )
    summaries = [
        "Marta Lind trained a parser in Oslo.",
        "The University of Elmford released the parser in 2019.",
    ]
    qg = EchoQG()
    settings = QAMetricSettings(questions_per_summary=2, source_questions=3, **LEGACY)
    scores = score_summaries([(s, source) for s in summaries], qg, EchoQA(), settings)
    assert [s.questions_generated for s in scores] == [2, 2]
    assert len(qg.items) == 2 + 2 + 3  # the source's candidates once
    for sentence, answer in qg.items:
        assert answer in sentence
    for s in scores:
        assert s.qags == pytest.approx(1.0) and s.qags_questions == 2
        assert s.questeval_precision == pytest.approx(1.0) and s.questeval_recall == pytest.approx(
            0.5
        )
        assert s.questeval == pytest.approx(2 / 3)
    # candidates are sampled with a seed derived from the text: the same every run
    again = EchoQG()
    score_summaries([(s, source) for s in summaries], again, EchoQA(), settings)
    assert again.items == qg.items


def test_settings_reject_unknown_keys():
    assert QAMetricSettings.from_dict({"seed": 3}).seed == 3
    with pytest.raises(ValueError, match="unknown"):
        QAMetricSettings.from_dict({"questions": 3})


# ----------------------------------------------------------------------------- QAGS's candidate pool


def test_qags_keeps_at_most_k_passing_questions_in_order():
    qs = [_answered(f"Question {i} here?", "x", "x" if i != 1 else "y", "x") for i in range(5)]
    score, kept = qags_score(qs, 1.0, max_kept=3)
    assert kept == 3 and score == 1.0
    assert [q.kept for q in qs] == [True, False, True, True, False]


def test_score_summaries_tries_further_candidates_for_qags(monkeypatch):
    summary = "S"
    first = [_cand("1932", summary), _cand("the mayor", summary)]
    more = [_cand("Elmford", summary), _cand("bridge", summary), _cand("river", summary)]
    monkeypatch.setattr(
        "isqaflow.metrics.qa_metrics.candidates_for",
        lambda text, k, settings: first if text == summary else [],
    )
    calls = []

    def further(text, taken, k, settings):
        calls.append((text, list(taken), k))
        return more[:k]

    monkeypatch.setattr("isqaflow.metrics.qa_metrics.further_candidates_for", further)
    qg = EchoQG()

    class PickyQA(EchoQA):
        """Gives back the candidate only for Elmford and river (the others fail QAGS's filter)."""

        def answer(self, items, answerability=None, exclude_question_copies=False):
            out = super().answer(items, answerability)
            return [
                r if r.answer in ("Elmford", "river") else QAResult("something", 1.0, 0.0)
                for r in out
            ]

        def answer_long(self, questions, documents, exclude_question_copies=False):
            self.asked_on_source = list(questions)
            return super().answer(list(zip(questions, documents)))

    qa = PickyQA()
    settings = QAMetricSettings(
        questions_per_summary=2, source_questions=1, candidate_pool=5, **LEGACY
    )
    (score,) = score_summaries([(summary, "SRC")], qg, qa, settings)
    # round 1 (1932, the mayor): nothing passes; round 2 (Elmford, bridge): one; round 3 (river): a second
    assert calls == [(summary, first, 3)]
    assert [it[1] for it in qg.items] == ["1932", "the mayor", "Elmford", "bridge", "river"]
    assert score.qags_questions == 2 and score.qags == 1.0 and score.questions_generated == 5
    rounds = [(q["candidate"], q["round"], q["kept"]) for q in score.details["summary_questions"]]
    assert rounds == [
        ("1932", 1, False),
        ("the mayor", 1, False),
        ("Elmford", 2, True),
        ("bridge", 2, False),
        ("river", 3, True),
    ]
    # on the source: round 1 (QuestEval precision) and the later rounds' passing questions only
    assert qa.asked_on_source == [
        "Which item is 1932?",
        "Which item is the mayor?",
        "Which item is Elmford?",
        "Which item is river?",
    ]
    # QuestEval precision uses round 1 only: F1("something"... on the source EchoQA gives the candidate back)
    assert score.questeval_precision == 1.0
    with pytest.raises(ValueError, match="candidate_pool"):
        QAMetricSettings(questions_per_summary=3, candidate_pool=2)


def test_further_candidates_are_seeded_and_disjoint():
    from isqaflow.metrics.qa_metrics import candidates_for, further_candidates_for

    text = (
        "Marta Lind trained the parser on 3,000 annotated sentences in Oslo. The parser was released "
        "by the University of Elmford in 2019. It reads German and Norwegian text."
    )
    settings = QAMetricSettings(questions_per_summary=2, candidate_pool=6)
    first = candidates_for(text, 2, settings)
    more = further_candidates_for(text, first, 4, settings)
    assert len(more) == 4 and not set(more) & set(first)
    assert further_candidates_for(text, first, 4, settings) == more


# ----------------------------------------------------------------------------- QuestEval's query weights


def test_questeval_recall_with_query_weights_by_hand():
    summary_qs = _qe_summary_questions()
    s1, s2 = _qe_source_questions()  # answerability 0.8 (F1 1) and 0.2 (F1 0)
    s1.weight, s2.weight = 0.9, 0.3
    got = questeval_scores(summary_qs, [s1, s2])
    # the paper: sum(W * answerability) / sum(W)
    assert got["questeval_recall"] == pytest.approx((0.9 * 0.8 + 0.3 * 0.2) / 1.2)
    assert got["recall_f1"] == pytest.approx(0.9 / 1.2)
    precision, recall = 5 / 6, (0.9 * 0.8 + 0.3 * 0.2) / 1.2
    assert got["questeval"] == pytest.approx(2 * precision * recall / (precision + recall))
    # v0.2.4: each recall score times W, averaged without renormalizing
    assert got["questeval_v024"] == pytest.approx(
        (5 / 6 + 0.7 + (0.72 + 0.06) / 2 + (0.9 + 0.0) / 2) / 4
    )
    # all weights 0: recall undefined
    s1.weight = s2.weight = 0.0
    assert math.isnan(questeval_scores(summary_qs, [s1, s2])["questeval_recall"])


class WeighterModel(LanguageModel):
    backend = "scripted"

    def __init__(self):
        self.items = []

    def identity(self):
        return {}

    def count_tokens(self, text):
        return len(text.split())

    def truncate_text(self, text, max_tokens):
        words = text.split()
        return " ".join(words[:max_tokens]), max(0, len(words) - max_tokens)

    def generate(self, requests, params):
        raise AssertionError

    def score_batch(self, items):
        self.items += list(items)
        return [
            [math.log(0.25)] if cands == ["true"] else [math.log(0.6), math.log(0.2)]
            for _, cands in items
        ]


def test_query_weighter_modes():
    """A stand-in weighter whose first output token is "true" with probability 0.25: v0.2.4 reads
    1 - softmax[true] (0.75), v0.1.1 reads P(true) (0.25); each with its own input layout."""
    from isqaflow.metrics.questeval import QueryWeighter

    model = WeighterModel()
    source = " ".join(f"w{i}" for i in range(100))
    v024 = QueryWeighter(model, "questeval_v024", max_input_tokens=40)
    assert v024.weigh([("When was it opened?", "1932", source)]) == [pytest.approx(0.75)]
    request, candidates = model.items[-1]
    # v0.2.4's input layout, the source cut to the budget
    assert (
        request.startswith("1932 </s> When was it opened? </s> w0 w1")
        and len(request.split()) <= 40
    )
    assert candidates == ["true"]
    v011 = QueryWeighter(model, "questeval_v011", max_input_tokens=40)
    assert v011.weigh([("When was it opened?", "1932", source)], sentence_indices=[3]) == [
        pytest.approx(0.25)
    ]
    request, candidates = model.items[-1]
    assert request.startswith("3 </s> 1932 </s> When was it opened? </s> w0 w1") and candidates == [
        "true"
    ]
    prompted = QueryWeighter(model, "prompted")
    assert prompted.weigh([("When was it opened?", "1932", "The bridge opened in 1932.")]) == [
        pytest.approx(0.75)
    ]
    request, candidates = model.items[-1]
    assert candidates == ["Yes", "No"] and "Question: When was it opened?" in request[-1]["content"]
    assert prompted.weigh([]) == []
    with pytest.raises(ValueError, match="query-weighter mode"):
        QueryWeighter(model, "trained")
    with pytest.raises(ValueError, match="ambiguous.*questeval_v024.*questeval_v011"):
        QueryWeighter(model, "questeval")


def test_score_summaries_weights_the_source_questions_once(scripted_candidates):
    class FixedWeighter:
        def __init__(self):
            self.calls = []

        def weigh(self, items, sentence_indices=None):
            self.calls.append(list(items))
            return [0.5 if "year" in q else 1.0 for q, _, _ in items]

    weighter = FixedWeighter()
    s1, s2 = score_summaries(
        [(SUMMARY_1, SOURCE), (SUMMARY_2, SOURCE)],
        FakeGenerator(),
        FakeAnswerer(),
        QAMetricSettings(questions_per_summary=7, source_questions=5, **LEGACY),
        weighter=weighter,
    )
    assert (
        len(weighter.calls) == 1 and len(weighter.calls[0]) == 2
    )  # the shared source's questions, once
    assert weighter.calls[0][0] == ("In which year was the bridge opened?", "1932", SOURCE)
    # summary 1: answerability 0.9 (weight 0.5) and 0.6 (weight 1)
    assert s1.questeval_recall == pytest.approx((0.5 * 0.9 + 0.6) / 1.5)
    assert [q["weight"] for q in s2.details["source_questions"]] == [0.5, 1.0]


# ----------------------------------------------------------------------------- known-answer controls


def _paper(pid: str, abstract: str, body: str = "Body text."):
    from isqaflow.data.schema import Paper

    return Paper(
        id=pid,
        dataset="qasper",
        title=pid,
        abstract=abstract,
        sections=[{"name": "Intro", "paragraphs": [f"{body} ({pid})"]}] if body else [],
    )


def test_derangement_has_no_fixed_points_and_is_seeded():
    import numpy as np

    from isqaflow.metrics.controls import derangement

    for n in (2, 3, 7):
        for seed in range(20):
            perm = derangement(n, np.random.default_rng(seed))
            assert sorted(perm) == list(range(n)) and all(i != p for i, p in enumerate(perm))
    assert derangement(5, np.random.default_rng(3)) == derangement(5, np.random.default_rng(3))
    with pytest.raises(ValueError, match="at least 2"):
        derangement(1, np.random.default_rng(0))


def test_control_pairs_are_deterministic_and_capped():
    from isqaflow.metrics.controls import control_pairs

    papers = [_paper(f"p{i}", f"Abstract {i}.") for i in range(6)] + [
        _paper("blank", " "),
        _paper("nobody", "A.", ""),
    ]
    pairs = control_pairs(papers, seed=13, scope="qasper")
    assert [p.id for p, _ in pairs] == [
        f"p{i}" for i in range(6)
    ]  # no abstract or no body: left out
    assert all(p.id != o.id for p, o in pairs) and sorted(o.id for _, o in pairs) == [
        f"p{i}" for i in range(6)
    ]
    assert [(p.id, o.id) for p, o in control_pairs(papers[::-1], seed=13, scope="qasper")] == [
        (p.id, o.id) for p, o in pairs
    ]  # same seed, same pairs, whatever the input order
    capped = control_pairs(papers, seed=13, max_papers=3, scope="qasper")
    assert len(capped) == 3 and {o.id for _, o in capped} == {p.id for p, _ in capped}
    with pytest.raises(ValueError, match="at least 2 papers"):
        control_pairs(papers[:1], seed=13, scope="qasper")
    with pytest.raises(ValueError, match="at least 2"):
        control_pairs(papers, seed=13, max_papers=1, scope="qasper")


class WordOverlapMetric:
    """A stand-in for score_summaries: the score is the share of the summary's words found in the source."""

    def __init__(self, undefined: str | None = None):
        self.items, self.undefined = [], undefined

    def __call__(self, items, generator, answerer, settings, weighter=None):
        from isqaflow.metrics.qa_metrics import SummaryScore

        self.items += list(items)
        out = []
        for summary, source in items:
            words = summary.lower().split()
            share = sum(w in source.lower() for w in words) / len(words)
            qags = NAN if self.undefined and self.undefined in summary else share
            out.append(
                SummaryScore(
                    qags=qags,
                    qags_questions=0 if qags != qags else 2,
                    questeval=share,
                    questeval_precision=share,
                    questeval_recall=share,
                    questeval_v024=0.5,
                    precision_answerability=1.0,
                    recall_f1=share,
                    questions_generated=3,
                )
            )
        return out


def test_metric_control_records(monkeypatch):
    from isqaflow.metrics import controls

    metric = WordOverlapMetric(undefined="gamma")
    monkeypatch.setattr(controls, "score_summaries", metric)
    papers = [
        _paper("a", "alpha words", "alpha words here"),
        _paper("b", "beta words", "beta words here"),
        _paper("c", "gamma words", "gamma words here"),
    ]
    records = controls.run_metric_controls(
        papers, None, None, controls.MetricControls("qasper", seed=13)
    )
    pairs = controls.control_pairs(papers, 13, scope="qasper")
    # exactly the real scoring path: own and other abstract against the paper's body
    assert metric.items == [(t, p.body()) for p, o in pairs for t in (p.abstract, o.abstract)]
    assert len(records) == 3 * 3  # papers x (QAGS, QuestEval, QuestEval v0.2.4)
    keys = {
        "instrument",
        "name",
        "scope",
        "control",
        "rule",
        "item",
        "expected",
        "outcome",
        "correct",
        "chance",
        "baseline_correct",
        "detail",
    }
    assert all(set(r) == keys for r in records)
    other_of = {p.id: o.id for p, o in pairs}
    by = {(r["item"].rsplit(":", 1)[0], r["name"]): r for r in records}
    assert {r["item"] for r in records} == {f"qasper:{p}:{o}" for p, o in other_of.items()}
    questeval = by[("qasper:a", "questeval")]
    assert questeval["instrument"] == "QuestEval" and questeval["control"] == "other_abstract"
    assert (
        questeval["rule"] == "raw" and questeval["chance"] == 0.5 and questeval["expected"] == "own"
    )
    assert questeval["correct"] is True and questeval["outcome"] == "own"
    assert (
        questeval["detail"]["own"] == 1.0 and questeval["detail"]["other"] == 0.5
    )  # "words" is in every body
    # equal scores: a tie, not correct
    tie = by[("qasper:a", "questeval_v024")]
    assert tie["outcome"] == "tie" and tie["correct"] is False
    # a NaN score (QAGS undefined for the gamma abstract, own or other): invalid, correct None, kept
    gamma_items = {f"qasper:{p.id}" for p, o in pairs if "gamma" in (p.abstract + o.abstract)}
    for item in gamma_items:
        assert by[(item, "qags")]["correct"] is None and by[(item, "qags")]["outcome"] == "invalid"
    assert by[("qasper:c", "qags")]["detail"]["own"] is None
    with pytest.raises(ValueError, match="unknown metric control"):
        controls.MetricControls("qasper", 13, controls=["swap"])
    assert (
        controls.run_metric_controls(
            papers, None, None, controls.MetricControls("qasper", 13, controls=[])
        )
        == []
    )


def test_metric_controls_job_from_the_rules_params():
    """MetricControls (metric_controls' settings object): validity.metrics, the seed and the metric
    settings parsed once from the rule's params; the dataset wildcard is the scope."""
    from types import SimpleNamespace

    from isqaflow.metrics import controls
    from isqaflow.metrics.scorers import MetricModels

    params = SimpleNamespace(
        qg={"model": "t5"},
        qa={"model": "t5", "mode": "prompted"},
        settings={"questions_per_summary": 5},
        weighter=None,
        controls=["other_abstract"],
        papers=4,
        others=None,
        seed=7,
    )
    job = controls.MetricControls.from_rule(params, SimpleNamespace(dataset="qasper"))
    assert (job.scope, job.seed, job.controls, job.max_papers, job.others) == (
        "qasper",
        7,
        ("other_abstract",),
        4,
        None,
    )
    # the metrics' models and settings: the same settings object as rule score_summaries'
    assert job.models == MetricModels(
        qg={"model": "t5"},
        qa={"model": "t5", "mode": "prompted"},
        settings=QAMetricSettings.from_dict({"questions_per_summary": 5}),
    )
    assert job.models == MetricModels.from_rule(params)
    with pytest.raises(ValueError, match="unknown QAGS/QuestEval setting"):
        controls.MetricControls.from_rule(
            SimpleNamespace(**{**vars(params), "settings": {"qags": 5}}),
            SimpleNamespace(dataset="qasper"),
        )


def test_every_ordered_pair_scores_each_own_abstract_once(monkeypatch):
    """others=None: 3 papers give 6 (paper, other) items, enough for the exact test to pass."""
    from isqaflow.metrics import controls

    metric = WordOverlapMetric()
    monkeypatch.setattr(controls, "score_summaries", metric)
    papers = [_paper(x, f"{x}lpha words", f"{x}lpha words here") for x in "abc"]
    pairs = controls.control_pairs(papers, 13, scope="qasper", others=None)
    assert sorted((p.id, o.id) for p, o in pairs) == [
        (p, o) for p in "abc" for o in "abc" if p != o
    ]
    records = controls.run_metric_controls(
        papers, None, None, controls.MetricControls("qasper", seed=13, others=None)
    )
    assert len(records) == 6 * 3
    assert len(metric.items) == 3 + 6  # own abstracts once each, then every other abstract
    assert sorted(metric.items) == sorted(
        {(p.abstract, p.body()) for p in papers} | {(o.abstract, p.body()) for p, o in pairs}
    )
    assert all(r["correct"] is True for r in records if r["name"] != "questeval_v024")
    # k others per paper: k distinct others, each abstract used k times, seeded
    many = [_paper(f"p{i}", f"Abstract {i}.") for i in range(6)]
    two = controls.control_pairs(many, 13, scope="qasper", others=2)
    assert two == controls.control_pairs(many[::-1], 13, scope="qasper", others=2)
    assert all(p.id != o.id for p, o in two) and len({(p.id, o.id) for p, o in two}) == 12
    from collections import Counter

    assert set(Counter(o.id for _, o in two).values()) == {2}
    assert len(controls.control_pairs(many, 13, scope="qasper", others=99)) == 6 * 5  # capped: all
    with pytest.raises(ValueError, match="at least 1"):
        controls.control_pairs(many, 13, scope="qasper", others=0)


def test_metric_controls_score_a_blind_metric_at_or_below_chance(monkeypatch):
    from isqaflow.metrics import controls
    from isqaflow.metrics.qa_metrics import SummaryScore

    def blind(items, *args, **kwargs):  # the same score whatever the text
        return [SummaryScore(0.5, 1, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 1) for _ in items]

    monkeypatch.setattr(controls, "score_summaries", blind)
    papers = [_paper(f"p{i}", f"Abstract {i}.") for i in range(5)]
    records = controls.run_metric_controls(
        papers, None, None, controls.MetricControls("qasper", seed=1)
    )
    assert records and all(r["correct"] is False for r in records)  # all ties: never credited


@pytest.mark.parametrize("mode", ["questeval_v024", "questeval_v011", "prompted"])
def test_query_weighter_on_tiny_models(mode, tiny_causal, tiny_seq2seq, tmp_path):
    """Real scoring: QuestEval's layout on a seq2seq model (as the released T5 weighter), a chat prompt on a causal one."""
    from isqaflow.metrics.questeval import QueryWeighter
    from isqaflow.models.registry import load_model

    path = tiny_seq2seq if mode.startswith("questeval") else tiny_causal
    model = load_model(
        {"backend": "hf", "model": str(path)}, cache=tmp_path / "calls.sqlite", threads=1
    )
    weighter = QueryWeighter(model, mode, max_input_tokens=64)
    source = "The model reads a paper and writes a summary of its results. " * 20
    weights = weighter.weigh(
        [
            ("What does the model write?", "a summary", source),
            ("What does the model read?", "a paper", source),
        ]
    )
    assert len(weights) == 2 and all(0.0 < w <= 1.0 for w in weights)
    assert (
        weighter.weigh([("What does the model write?", "a summary", source)]) == weights[:1]
    )  # cached, stable


def test_released_weighter_readings_on_a_t5_stand_in(tiny_seq2seq, tmp_path):
    """The weight against the T5's own softmax for the reply "true" (for the released weighter one
    token, id 1176, at the first step): v0.2.4 = 1 - P(true), v0.1.1 = P(true)."""
    import torch
    from transformers import AutoTokenizer, T5ForConditionalGeneration

    from isqaflow.metrics.questeval import QueryWeighter
    from isqaflow.models.registry import load_model

    model = load_model(
        {"backend": "hf", "model": str(tiny_seq2seq)}, cache=tmp_path / "calls.sqlite", threads=1
    )
    tok = AutoTokenizer.from_pretrained(tiny_seq2seq)
    net = T5ForConditionalGeneration.from_pretrained(tiny_seq2seq).eval()
    true_ids = torch.tensor([tok("true", add_special_tokens=False)["input_ids"]])
    item = (
        "What does the model write?",
        "a summary",
        "The model reads a paper and writes a summary.",
    )

    def p_true(text):
        enc = tok(text, return_tensors="pt")
        with torch.inference_mode():
            logp = net(**enc, labels=true_ids).logits[0].float().log_softmax(-1)
        return float(torch.exp(logp.gather(-1, true_ids[0][:, None]).sum()))

    (v024,) = QueryWeighter(model, "questeval_v024", max_input_tokens=64).weigh([item])
    (v011,) = QueryWeighter(model, "questeval_v011", max_input_tokens=64).weigh(
        [item], sentence_indices=[0]
    )
    q, a, src = item
    expected = p_true(f"{a} </s> {q} </s> {src}")
    assert 0.0 < expected < 1.0
    assert v024 == pytest.approx(1 - expected, abs=1e-5)
    assert v011 == pytest.approx(p_true(f"0 </s> {a} </s> {q} </s> {src}"), rel=1e-3)
    assert 1 - v024 == pytest.approx(expected, rel=1e-3)  # the two readings are complements
