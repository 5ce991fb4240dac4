"""QA-based metrics and ROUGE: QAGS, QuestEval, the shared question pipeline, the QA models.

Model outputs are scripted wherever a value is checked by hand; the tiny random
model only checks that the prompted answerer runs end to end and stays in range.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from isqaflow.metrics.qa_metrics import QAMetricSettings, score_summaries
from isqaflow.qa.answering import ExtractiveQA, QAResult, QuestionAnswerer, is_no_answer, windows
from isqaflow.qa.generation import QuestionGenerator, valid_question
from isqaflow.metrics.qags import Question, filter_questions, qags_score
from isqaflow.metrics.questeval import QuestEvalSettings, harmonic, questeval_scores
from isqaflow.text.rouge import mean_rouge, rouge
from isqaflow.models.base import Generation, GenerationParams, LanguageModel
from isqaflow.models.cache import CallCache
from isqaflow.text.candidates import Candidate

NAN = float("nan")


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


# ----------------------------------------------------------------------------- ROUGE

ROUGE_PAIRS = [
    ("the cat sat on the mat", "the cat lay on the mat"),
    ("running dogs", "dogs run"),
    ("The model writes a summary of the paper's results.", "A summary of results is written by the model."),
    ("Facts and non-facts help the summarizer.", "The summarizer is helped by facts."),
    ("completely unrelated words", "nothing in common here"),
]


@pytest.mark.parametrize(("prediction", "reference"), ROUGE_PAIRS)
def test_rouge_equals_rouge_score_with_stemming(prediction, reference):
    from rouge_score import rouge_scorer

    expected = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True).score(reference, prediction)
    got = rouge(prediction, reference)
    assert set(got) == {"rouge1", "rouge2", "rougeL", "rouge"}
    for name in ("rouge1", "rouge2", "rougeL"):
        assert got[name] == pytest.approx(expected[name].fmeasure)
    assert got["rouge"] == pytest.approx((got["rouge1"] + got["rouge2"] + got["rougeL"]) / 3)


def test_rouge_by_hand():
    # prediction: the cat sat on the mat / reference: the cat lay on the mat (6 tokens each)
    # unigrams in common: the x2, cat, on, mat = 5 -> P = R = 5/6
    # bigrams (5 each) in common: "the cat", "on the", "the mat" = 3 -> P = R = 3/5
    # LCS: the cat on the mat = 5 -> 5/6
    got = rouge("the cat sat on the mat", "the cat lay on the mat")
    assert got["rouge1"] == pytest.approx(5 / 6)
    assert got["rouge2"] == pytest.approx(3 / 5)
    assert got["rougeL"] == pytest.approx(5 / 6)
    assert got["rouge"] == pytest.approx((5 / 6 + 3 / 5 + 5 / 6) / 3)
    # stemming: "running dogs" -> run dog; "dogs run" -> dog run; both unigrams shared,
    # no bigram shared, LCS of length 1 over 2 tokens
    stemmed = rouge("running dogs", "dogs run")
    assert (stemmed["rouge1"], stemmed["rouge2"], stemmed["rougeL"]) == pytest.approx((1.0, 0.0, 0.5))
    assert stemmed["rouge"] == pytest.approx(0.5)


def test_rouge_of_empty_prediction_is_zero():
    assert rouge("", "the cat lay on the mat") == {"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0, "rouge": 0.0}


def test_mean_rouge():
    preds = ["the cat sat on the mat", "running dogs"]
    refs = ["the cat lay on the mat", "dogs run"]
    got = mean_rouge(preds, refs)
    assert got["rouge1"] == pytest.approx((5 / 6 + 1.0) / 2)
    assert got["rouge2"] == pytest.approx((3 / 5 + 0.0) / 2)
    assert got["rouge"] == pytest.approx(((5 / 6 + 3 / 5 + 5 / 6) / 3 + 0.5) / 2)
    assert all(math.isnan(v) for v in mean_rouge([], []).values())
    with pytest.raises(ValueError):
        mean_rouge(["a"], [])


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
        _answered("How many sentences?", "3,000 sentences", "3,000 annotated sentences", "3,000 sentences"),
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
    second = _answered("What was the study on?", "Latch-R", None, None, duplicate=True)  # never asked
    share_duplicate_answers([first, second])
    assert second.on_summary is first.on_summary and second.on_source is first.on_source
    score, kept = qags_score([first, second], candidate_min_f1=1.0)
    assert (first.kept, second.kept, kept) == (False, True, 1)
    assert score == pytest.approx(0.0)  # "Latch-R" against the source's "LatchRank"


def test_qags_score_is_nan_when_no_question_is_kept():
    qs = [_answered("What was trained?", "the parser", "a tokenizer", "the parser"),
          _answered("Who", "Marta", "Marta", "Marta", valid=False)]
    score, kept = qags_score(qs, 1.0)
    assert math.isnan(score) and kept == 0
    assert not any(q.kept for q in qs)
    score, kept = qags_score([], 1.0)
    assert math.isnan(score) and kept == 0


def test_question_as_dict():
    q = _answered("What was trained?", "the parser", "Parser", None)
    q.kept = True
    assert q.as_dict() == {
        "question": "What was trained?", "candidate": "the parser", "valid": True, "duplicate": False,
        "kept": True, "padded": 0, "round": 1, "weight": 1.0, "probability": 0.0,
        "on_summary": {"answer": "Parser", "answerability": 1.0, "copies_excluded": 0}, "on_source": None,
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
    assert math.isnan(no_summary["questeval_precision"]) and math.isnan(no_summary["precision_answerability"])
    assert math.isnan(no_summary["questeval"])
    assert no_summary["questeval_recall"] == pytest.approx(0.5)
    assert no_summary["questeval_v024"] == pytest.approx((0.5 + 0.5) / 2)  # mean of the parts present

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

SOURCE = ("The bridge was opened in 1932 by the mayor of Elmford. It crosses the river Lund. "
          "The bridge is 300 metres long.")
SUMMARY_1 = "The mayor opened the bridge in 1932."
SUMMARY_2 = "Elmford's bridge opened in 1933."


def _cand(text: str, sentence: str) -> Candidate:
    return Candidate(text, "entity", "X", sentence)


CANDIDATES = {
    SUMMARY_1: [_cand("1932", SUMMARY_1), _cand("the mayor", SUMMARY_1), _cand("Elmford", "S1 where")],
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
LEGACY = dict(exclude_question_copies=False, pad_to_k=False, order="candidate",
              questeval=QuestEvalSettings(candidates="sampled", filters=True, empty_side="drop", answerability="odds"))


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
    assert s1.recall_f1 == pytest.approx((1.0 + 0.5) / 2)  # "1932" vs "1932", "the mayor" vs "the mayor of Elmford"
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
    assert [q["question"] for q in d1] == ["When was the bridge opened?", "Who opened the bridge?", "Where?"]
    assert [q["kept"] for q in d1] == [True, True, False]
    assert d1[2]["valid"] is False and d1[2]["on_summary"] is None and d1[2]["on_source"] is None
    src1 = s1.details["source_questions"]
    src2 = s2.details["source_questions"]
    assert [q["question"] for q in src1] == [q["question"] for q in src2] == [
        "In which year was the bridge opened?", "Who opened the bridge in 1932?"]
    assert [q["on_summary"]["answerability"] for q in src1] == [0.9, 0.6]
    assert [q["on_summary"]["answerability"] for q in src2] == [0.4, 0.1]


def test_score_summaries_generates_source_questions_once_and_batches_calls(scripted_candidates):
    qg, qa = FakeGenerator(), FakeAnswerer()
    settings = QAMetricSettings(questions_per_summary=7, source_questions=5, **LEGACY)
    score_summaries([(SUMMARY_1, SOURCE), (SUMMARY_2, SOURCE)], qg, qa, settings)

    # candidates: each summary with K = questions_per_summary, the shared source once with source_questions
    assert sorted(scripted_candidates, key=str) == sorted(
        [(SUMMARY_1, 7), (SUMMARY_2, 7), (SOURCE, 5)], key=str)
    # two QG calls: all summaries' candidates, then the source's candidates once (not once per summary)
    assert len(qg.calls) == 2
    assert qg.calls[0] == [(SUMMARY_1, "1932"), (SUMMARY_1, "the mayor"), ("S1 where", "Elmford"),
                           (SUMMARY_2, "1933"), (SUMMARY_2, "Elmford")]
    assert qg.calls[1] == [("source year", "1932"), ("source who", "the mayor of Elmford")]

    # two answer calls: the summaries' own usable questions without answerability, then the
    # source's questions on every summary with it
    assert len(qa.answer_calls) == 2
    own, own_flag = qa.answer_calls[0]
    assert own_flag is False
    assert own == [("When was the bridge opened?", SUMMARY_1), ("Who opened the bridge?", SUMMARY_1),
                   ("When was the bridge opened?", SUMMARY_2), ("Which town has the bridge?", SUMMARY_2)]
    recall, recall_flag = qa.answer_calls[1]
    assert recall_flag is None
    assert recall == [("In which year was the bridge opened?", SUMMARY_1), ("Who opened the bridge in 1932?", SUMMARY_1),
                      ("In which year was the bridge opened?", SUMMARY_2), ("Who opened the bridge in 1932?", SUMMARY_2)]
    # one answer_long call, with the source text (not the summary) for every usable summary question,
    # each distinct question once per source
    assert len(qa.long_calls) == 1
    questions, documents = qa.long_calls[0]
    assert questions == ["When was the bridge opened?", "Who opened the bridge?", "Which town has the bridge?"]
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
    monkeypatch.setattr("isqaflow.metrics.qa_metrics.candidates_for",
                        lambda text, k, settings: [_cand("Elmford", "S1 where")] if text == SUMMARY_1 else [])
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
        return [QAResult(re.fullmatch(r"Which item is (.*)\?", q).group(1), 0.5, 0.0) for q, _ in items]

    def answer_long(self, questions, documents, exclude_question_copies=False):
        return self.answer(list(zip(questions, documents)))


def test_score_summaries_with_real_candidates():
    source = ("Marta Lind trained the parser on 3,000 annotated sentences in Oslo. The parser was released "
              "by the University of Elmford in 2019. It reads German and Norwegian text.")
    summaries = ["Marta Lind trained a parser in Oslo.", "The University of Elmford released the parser in 2019."]
    qg = EchoQG()
    settings = QAMetricSettings(questions_per_summary=2, source_questions=3, **LEGACY)
    scores = score_summaries([(s, source) for s in summaries], qg, EchoQA(), settings)
    assert [s.questions_generated for s in scores] == [2, 2]
    assert len(qg.items) == 2 + 2 + 3  # the source's candidates once
    for sentence, answer in qg.items:
        assert answer in sentence
    for s in scores:
        assert s.qags == pytest.approx(1.0) and s.qags_questions == 2
        assert s.questeval_precision == pytest.approx(1.0) and s.questeval_recall == pytest.approx(0.5)
        assert s.questeval == pytest.approx(2 / 3)
    # candidates are sampled with a seed derived from the text: the same every run
    again = EchoQG()
    score_summaries([(s, source) for s in summaries], again, EchoQA(), settings)
    assert again.items == qg.items


def test_settings_reject_unknown_keys():
    assert QAMetricSettings.from_dict({"seed": 3}).seed == 3
    with pytest.raises(ValueError, match="unknown"):
        QAMetricSettings.from_dict({"questions": 3})


# ----------------------------------------------------------------------------- windows and helpers

class WordModel:
    """count_tokens = number of words."""

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def _sentences_of(window: str) -> list[str]:
    from isqaflow.text.sentences import split_sentences

    return split_sentences(window)


def test_windows_cover_every_sentence_with_one_sentence_overlap():
    from isqaflow.text.sentences import split_sentences

    sizes = [3, 5, 2, 6, 4, 3, 7, 2, 4]
    # sentence i: "Topic<i>" then n - 1 words; Punkt would take a one-letter "w." for an initial
    text = " ".join(f"Topic{i} " + " ".join(["data"] * (n - 2) + ["ends."]) if n > 1 else f"Topic{i}."
                    for i, n in enumerate(sizes))
    sentences = split_sentences(text)
    assert len(sentences) == len(sizes)
    out = windows(text, WordModel(), max_tokens=12)
    assert len(out) > 1
    for window in out:
        assert WordModel().count_tokens(window) <= 12
    parts = [_sentences_of(w) for w in out]
    for part in parts:  # each window is a run of consecutive sentences
        start = sentences.index(part[0])
        assert part == sentences[start:start + len(part)]
    for prev, nxt in zip(parts, parts[1:]):
        assert nxt[0] == prev[-1]  # overlap by exactly one sentence
        assert nxt[1:] and nxt[1] not in prev
    covered = [s for part in parts for s in part]
    assert set(covered) == set(sentences)
    assert parts[0][0] == sentences[0] and parts[-1][-1] == sentences[-1]


def test_windows_edge_cases():
    model = WordModel()
    assert windows("", model, 10) == []
    assert windows("   \n ", model, 10) == []
    assert windows("One short sentence.", model, 10) == ["One short sentence."]
    # a sentence longer than the budget is a window of its own
    long = "Long " + "data " * 20 + "ends."
    out = windows(f"Start here. {long} End here.", model, 8)
    assert long in out
    assert out[0] == "Start here." and out[-1].endswith("End here.")
    # everything fits: one window
    assert windows("One two. Three four.", model, 100) == ["One two. Three four."]


def test_windows_every_window_adds_a_new_sentence():
    text = "One two three four. Five six seven eight. A b c d e f g h."
    out = windows(text, WordModel(), 10)
    # today: ['One two three four. Five six seven eight.', 'Five six seven eight.', 'A b c d e f g h.']
    for prev, nxt in zip(out, out[1:]):
        assert not set(_sentences_of(nxt)) <= set(_sentences_of(prev))


def test_valid_question():
    assert valid_question("What is it?")
    assert valid_question("  What is it?  ")
    assert not valid_question("What is it")
    assert not valid_question("Why is?")  # two words
    assert not valid_question("?")
    assert not valid_question("")
    assert valid_question("Why is?", min_words=2)


def test_is_no_answer():
    for text in ("", "  ", "Unanswerable", "unanswerable.", "Unanswerable: the text says nothing", "None.",
                 "Unknown", "No answer", "not mentioned", "Not stated.", "the"):
        assert is_no_answer(text), text
    for text in ("1932", "the mayor", "None of the above is wrong", "not mentioned anywhere here", "no"):
        assert not is_no_answer(text), text


def test_is_no_answer_recognizes_n_slash_a():
    assert is_no_answer("N/A")


# ----------------------------------------------------------------------------- prompted QA / QG

class ScriptedModel(LanguageModel):
    """A chat model whose QA replies and answerability scores are scripted per (question, context)."""

    backend = "scripted"

    def __init__(self, replies: dict, scores: dict):
        self.replies, self.scores = replies, scores
        self.generate_calls: list[list[Any]] = []
        self.score_calls: list[list[Any]] = []
        self.params: list[GenerationParams] = []

    def identity(self):
        return {"backend": self.backend}

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def generate(self, requests, params):
        self.generate_calls.append(list(requests))
        self.params.append(params)
        out = []
        for request in requests:
            m = re.fullmatch(r"Text: (.*)\n\nQuestion: (.*)\nGive a short answer\.", request[-1]["content"], re.S)
            text, logprob, n = self.replies.get((m.group(2), m.group(1)), ("Unanswerable", -1.0, 1))
            out.append(Generation(text, n_new_tokens=n, logprob=logprob))
        return out

    def score_batch(self, items):
        self.score_calls.append(list(items))
        out = []
        for request, candidates in items:
            assert request[0]["role"] == "system" and candidates[1] == "unanswerable"
            m = re.fullmatch(r"Text: (.*)\nQuestion: (.*)", request[-1]["content"], re.S)
            out.append(list(self.scores.get((m.group(2), m.group(1)), (-5.0, -1.0))))
        return out


DOC = "Alpha words are here. Beta words are here. Gamma words are here. Delta words are here."
W0, W1, W2 = ("Alpha words are here. Beta words are here.", "Beta words are here. Gamma words are here.",
              "Gamma words are here. Delta words are here.")


def test_answer_long_keeps_the_best_answerable_answer_over_windows():
    assert windows(DOC, WordModel(), 10) == [W0, W1, W2]
    qa_year, qa_who, qa_none = "When was it built?", "Who built it?", "What colour is it?"
    replies = {
        # year: no answer in window 0, "red fox" at -1.0/token in window 1, "blue bird" at -0.3/token in 2
        (qa_year, W0): ("Unanswerable", -0.1, 1),
        (qa_year, W1): ("red fox", -2.0, 2),
        (qa_year, W2): ("blue bird\nsecond line ignored", -0.9, 3),
        # who: the earlier window wins on per-token score
        (qa_who, W0): ("Marta Lind", -0.2, 2),
        (qa_who, W2): ("Someone else", -3.0, 2),
        # qa_none: unanswerable everywhere (the default reply)
    }
    scores = {(qa_year, W2): (-1.0, -2.0), (qa_year, W1): (-3.0, -1.0), (qa_who, W0): (-0.5, -0.5)}
    model = ScriptedModel(replies, scores)
    answerer = QuestionAnswerer(model, "prompted", window_tokens=10, spans="free")
    year, who, none = answerer.answer_long([qa_year, qa_who, qa_none], [DOC, DOC, DOC])

    assert year == QAResult("blue bird", pytest.approx(sigmoid(-1.0 - -2.0)), pytest.approx(-0.3), 2)
    assert who == QAResult("Marta Lind", pytest.approx(0.5), pytest.approx(-0.1), 0)
    assert none.answer == "" and none.answerability == 0.0 and none.score == float("-inf")
    # one batched generation and one scoring call for 3 questions x 3 windows
    assert len(model.generate_calls) == 1 and len(model.generate_calls[0]) == 9
    assert len(model.score_calls) == 1 and len(model.score_calls[0]) == 9
    assert model.params[0].return_logprobs is True


def test_answer_without_answerability_skips_scoring():
    model = ScriptedModel({("Who built it?", "Marta built it."): ("Marta", -1.0, 1)}, {})
    answerer = QuestionAnswerer(model, "prompted", spans="free")
    found, missing = answerer.answer([("Who built it?", "Marta built it."), ("Why?", "Marta built it.")],
                                     answerability=False)
    assert found == QAResult("Marta", 1.0, -1.0)
    assert missing == QAResult("", 0.0, float("-inf"))
    assert model.score_calls == []
    assert answerer.answer([]) == []


def test_answerer_and_generator_reject_unknown_modes():
    with pytest.raises(ValueError):
        QuestionAnswerer(ScriptedModel({}, {}), "generative")
    with pytest.raises(ValueError):
        QuestionGenerator(ScriptedModel({}, {}), "free")


class EchoModel(LanguageModel):
    backend = "echo"

    def __init__(self):
        self.requests = []

    def identity(self):
        return {}

    def generate(self, requests, params):
        self.requests += list(requests)
        return [Generation(f"  Question {i}?\nextra line") for i in range(len(requests))]


def test_question_generator_requests_and_first_line():
    model = EchoModel()
    hl = QuestionGenerator(model, "highlight")
    assert hl.request("The bridge opened in 1932.", "1932") == "generate question: The bridge opened in <hl> 1932 <hl>."
    assert hl.request("No match here.", "1932") == "generate question: No match here. <hl> 1932 <hl>"
    assert hl.generate([("The bridge opened in 1932.", "1932"), ("Marta won.", "Marta")]) == [
        "Question 0?", "Question 1?"]
    prompted = QuestionGenerator(model, "prompted").request("Marta won.", "Marta")
    assert [m["role"] for m in prompted] == ["user", "assistant", "user", "assistant", "user"]
    assert "Sentence: Marta won.\nAnswer: Marta" in prompted[-1]["content"]


@pytest.fixture(scope="module")
def tiny_qa_model(tiny_causal):
    from isqaflow.models.registry import load_model

    return load_model({"backend": "hf", "model": str(tiny_causal), "batch_size": 4}, threads=1)


def test_prompted_answerer_on_the_tiny_model(tiny_qa_model):
    answerer = QuestionAnswerer(tiny_qa_model, "prompted", GenerationParams(max_new_tokens=6), window_tokens=48,
                                spans="free")
    items = [("What does the fox jump over?", "The quick brown fox jumps over the lazy dog."),
             ("What does the model write?", "The model reads a paper and writes a summary of its results."),
             ("Who helps the summarizer?", "Facts and non-facts help the summarizer.")]
    results = answerer.answer(items)
    assert len(results) == len(items)
    for r in results:
        assert isinstance(r, QAResult)
        assert 0.0 <= r.answerability <= 1.0
        assert (r.answer == "") == (r.score == float("-inf"))
        if r.answer:
            assert not is_no_answer(r.answer) and "\n" not in r.answer
    assert answerer.answer(items) == results  # greedy: deterministic

    doc = " ".join(s for _, s in items) * 3
    long = answerer.answer_long([q for q, _ in items], [doc] * len(items))
    n_windows = len(windows(doc, tiny_qa_model, 48))
    assert n_windows > 1
    assert len(long) == len(items)
    for r in long:
        assert 0.0 <= r.answerability <= 1.0 and 0 <= r.window < n_windows


class FixedReplyModel(LanguageModel):
    """The tiny model's scoring, with a fixed reply (a random model's replies are mostly empty)."""

    backend = "hf"

    def __init__(self, inner):
        self.inner = inner

    def identity(self):
        return self.inner.identity()

    def encode_request(self, request):
        return self.inner.encode_request(request)

    def count_tokens(self, text):
        return self.inner.count_tokens(text)

    def generate(self, requests, params):
        return [Generation("the lazy dog", n_new_tokens=3, logprob=-1.5) for _ in requests]

    def score_batch(self, items):
        return self.inner.score_batch(items)


def test_prompted_answerability_from_the_tiny_models_scores(tiny_qa_model):
    model = FixedReplyModel(tiny_qa_model)
    answerer = QuestionAnswerer(model, "prompted", window_tokens=48, spans="free")
    question, context = "What does the fox jump over?", "The quick brown fox jumps over the lazy dog."
    (result,) = answerer.answer([(question, context)])
    a, u = tiny_qa_model.score_batch([(answerer._answerability_request(question, context),
                                       ["the lazy dog", "unanswerable"])])[0]
    assert math.isfinite(a) and math.isfinite(u) and a != u
    assert result.answer == "the lazy dog"
    assert result.answerability == pytest.approx(sigmoid(a - u))
    assert 0.0 < result.answerability < 1.0
    assert result.score == pytest.approx(-0.5)


# ----------------------------------------------------------------------------- extractive QA

def _tiny_extractive_model(path):
    """A tiny random-weight BERT span model with a word-level WordPiece tokenizer."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import BertConfig, BertForQuestionAnswering, PreTrainedTokenizerFast

    words = ("the quick brown fox jumps over lazy dog model reads a paper and writes summary of its results "
             "who what when where did is was in 1932 bridge opened by mayor elmford jump ? . ,").split()
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(set(words))]
    backend = Tokenizer(models.WordPiece({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]",
                                        cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)
    torch.manual_seed(0)
    BertForQuestionAnswering(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _no_model(items):
    raise AssertionError("the model ran on a cached call")


@pytest.fixture
def tiny_extractive(tmp_path):
    return _tiny_extractive_model(tmp_path / "tiny-bert-qa")


ITEMS = [("who opened the bridge ?", "the bridge was opened in 1932 by the mayor of elmford ."),
         ("what did the fox jump over ?", "the quick brown fox jumps over the lazy dog .")]


def test_extractive_qa_on_a_tiny_random_model(tiny_extractive, tmp_path, monkeypatch):
    qa = ExtractiveQA({"model": str(tiny_extractive)}, cache=CallCache(tmp_path / "cache.sqlite"),
                      max_seq_len=64, doc_stride=16)
    assert qa.identity()["backend"] == "hf-qa" and qa.identity()["model"] == "tiny-bert-qa"
    results = qa.answer(ITEMS)
    assert len(results) == 2
    for (_, context), r in zip(ITEMS, results, strict=True):
        assert 0.0 <= r.answerability <= 1.0
        assert (r.answer == "") == (r.score == float("-inf"))
        assert r.answer in context
    monkeypatch.setattr(qa, "_run", _no_model)  # a second call, from a cache that started empty
    assert qa.answer(ITEMS) == results
    again = ExtractiveQA({"model": str(tiny_extractive)}, cache=CallCache(tmp_path / "cache.sqlite"),
                         max_seq_len=64, doc_stride=16)
    monkeypatch.setattr(again, "_run", _no_model)  # a rerun on the same cache file
    assert again.answer(ITEMS[::-1]) == results[::-1]


class _Logits:
    def __init__(self, start, end):
        self.start_logits, self.end_logits = start, end


def _peaked_net(qa, start_word: str | None, end_word: str | None):
    """A stand-in for the QA network: the start/end logits peak on the given words (or on [CLS])."""
    import torch

    vocab = qa.tokenizer.get_vocab()

    def net(input_ids, **kwargs):
        start = torch.zeros(input_ids.shape)
        end = torch.zeros(input_ids.shape)
        for row in range(input_ids.shape[0]):
            ids = input_ids[row].tolist()
            s_pos = len(ids) - 1 - ids[::-1].index(vocab[start_word]) if start_word and vocab[start_word] in ids else 0
            e_pos = len(ids) - 1 - ids[::-1].index(vocab[end_word]) if end_word and vocab[end_word] in ids else 0
            start[row, s_pos] = end[row, e_pos] = 12.0
        return _Logits(start, end)

    return net


def test_extractive_span_search_and_null_answer(tiny_extractive):
    qa = ExtractiveQA({"model": str(tiny_extractive)}, max_seq_len=64, doc_stride=16)
    qa.net = _peaked_net(qa, "the", "elmford")
    (result,) = qa.answer(ITEMS[:1])
    assert result.answer == "the mayor of elmford"
    assert result.answerability > 0.99 and result.score > 0.9
    qa.net = _peaked_net(qa, "who", "elmford")  # "who" is only in the question: spans stay in the context
    (result,) = qa.answer(ITEMS[:1])
    assert result.answer.endswith("elmford") and result.answer in ITEMS[0][1]
    qa.net = _peaked_net(qa, None, None)  # the null answer ([CLS]) wins
    (result,) = qa.answer(ITEMS[:1])
    assert result.answer == "" and result.answerability < 0.01
    # QuestionAnswerer in extractive mode delegates, also for long documents (the windows stride)
    qa.net = _peaked_net(qa, "lazy", "dog")
    answerer = QuestionAnswerer(qa, "extractive")
    assert answerer.answer(ITEMS[1:])[0].answer == "lazy dog"
    long_context = "the bridge was opened in 1932 . " * 12 + ITEMS[1][1]
    assert answerer.answer_long([ITEMS[1][0]], [long_context])[0].answer == "lazy dog"


# ----------------------------------------------------------------------------- answers as spans

def test_snap_to_span_by_hand():
    from isqaflow.qa.spans import snap_to_span

    context = "The bridge was opened in 1932 by the mayor of Elmford. It crosses the river Lund."
    # reply tokens: bridge was opened by mayor (5; "the" is dropped).  Within 4 words,
    # "bridge was opened" has F1 2 * 3 / (3 + 5) = 0.75 ("by the mayor": 4 / 7); "The bridge
    # was opened" reads the same tokens but is a word longer: ties go to the shortest span
    assert snap_to_span("The bridge was opened by the mayor.", context, max_words=4) == "bridge was opened"
    # with room for the whole clause: "bridge was opened in 1932 by the mayor", F1 2 * 5 / (6 + 5)
    assert snap_to_span("The bridge was opened by the mayor.", context) == "bridge was opened in 1932 by the mayor"
    assert snap_to_span("mayor of Elmford", context) == "mayor of Elmford"  # the "." after it trimmed
    assert snap_to_span("1932", context) == "1932"
    assert snap_to_span("the", "the cat and the dog") == ""  # articles are no tokens: nothing to match
    assert snap_to_span("dog", "a dog chased another dog") == "dog"  # equal spans: the earliest
    assert snap_to_span("Tokyo", context) == "" and snap_to_span("", context) == ""
    with pytest.raises(ValueError, match="max_words"):
        snap_to_span("x", context, max_words=0)


def test_snap_to_span_is_the_best_token_f1_span():
    from itertools import combinations

    from isqaflow.qa.spans import snap_to_span
    from isqaflow.text.f1 import token_f1

    context = ("Marta Lind trained the parser on 3,000 annotated sentences in Oslo, and the parser "
               "was released by the University of Elmford in 2019.")
    words = context.split()
    for reply in ("The parser was trained by Marta Lind in Oslo.", "released in 2019 by Elmford's university",
                  "3,000 sentences", "the University of Elmford released it"):
        got = snap_to_span(reply, context, max_words=6)
        spans = [" ".join(words[i:j]) for i, j in combinations(range(len(words) + 1), 2) if j - i <= 6]
        best = max(token_f1(span, reply) for span in spans)
        assert token_f1(got, reply) == pytest.approx(best), reply
        assert got in context and len(got.split()) <= 6
        # no shorter span reaches the same F1
        assert all(len(span.split()) >= len(got.split()) for span in spans
                   if token_f1(span, reply) == pytest.approx(best))


class LikelihoodModel(LanguageModel):
    """Scores replies by a table: (question, candidate) -> log-probability; "first token" = first word."""

    backend = "scripted"

    def __init__(self, table: dict, unanswerable: float = -5.0):
        self.table, self.unanswerable = table, unanswerable
        self.score_calls: list[list[Any]] = []

    def identity(self):
        return {"backend": self.backend}

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def truncate_text(self, text: str, max_tokens: int):
        words = text.split()
        return " ".join(words[:max_tokens]), max(0, len(words) - max_tokens)

    def generate(self, requests, params):
        raise AssertionError("likelihood answers decode nothing")

    def score_batch(self, items):
        self.score_calls.append(list(items))
        out = []
        for request, candidates in items:
            question = re.search(r"\nQuestion: (.*)$", request[-1]["content"]).group(1)
            out.append([self.unanswerable if c == "unanswerable" else self.table.get((question, c), -20.0)
                        for c in candidates])
        return out


def test_likelihood_answers_choose_the_most_likely_candidate(monkeypatch):
    context = "Marta Lind trained the parser in Oslo."
    monkeypatch.setattr("isqaflow.qa.answering.QuestionAnswerer.candidates",
                        lambda self, ctx: ["Marta Lind", "parser", "Oslo"] if ctx == context else [])
    table = {("Who trained the parser?", "Marta Lind"): -1.0, ("Who trained the parser?", "Oslo"): -3.0,
             ("Where?", "Oslo"): -6.0}  # "unanswerable" (-5) beats every candidate
    model = LikelihoodModel(table)
    answerer = QuestionAnswerer(model, "prompted")  # likelihood is the default
    who, where, empty = answerer.answer([("Who trained the parser?", context), ("Where?", context),
                                         ("Who?", "no candidates here")])
    assert who == QAResult("Marta Lind", pytest.approx(sigmoid(4.0)), pytest.approx(4.0))
    assert where.answer == "" and where.answerability == pytest.approx(sigmoid(-1.0))
    assert where.score == float("-inf")
    assert empty == QAResult("", 0.0, float("-inf"))
    # one scoring pass (three candidates <= the shortlist of 4) with "unanswerable" last
    assert len(model.score_calls) == 1
    assert [c for _, c in model.score_calls[0]] == [["Marta Lind", "parser", "Oslo", "unanswerable"]] * 2
    assert model.score_calls[0][0][0][0]["role"] == "system"  # the span-asking prompt


def test_without_answerability_the_likeliest_span_is_the_answer(monkeypatch):
    """QAGS's own questions, asked of the summary they came from: no "unanswerable" on offer."""
    context = "Marta Lind trained the parser in Oslo."
    monkeypatch.setattr("isqaflow.qa.answering.QuestionAnswerer.candidates",
                        lambda self, ctx: ["Marta Lind", "parser", "Oslo"] if ctx == context else [])
    model = LikelihoodModel({("Where?", "Oslo"): -6.0, ("Where?", "parser"): -7.0})  # "unanswerable" -5
    (where,) = QuestionAnswerer(model, "prompted").answer([("Where?", context)], answerability=False)
    assert where == QAResult("Oslo", 1.0, -6.0)
    assert [c for _, c in model.score_calls[0]] == [["Marta Lind", "parser", "Oslo"]]


def test_likelihood_shortlist_scores_only_the_likeliest_first_tokens(monkeypatch):
    cands = ["Marta Lind", "Marta", "Oslo", "the parser", "German text", "2019"]
    monkeypatch.setattr("isqaflow.qa.answering.QuestionAnswerer.candidates", lambda self, ctx: cands)
    q = "Who trained it?"
    # first words: Marta (shared by two candidates), Oslo, the, German, 2019
    table = {(q, "Marta"): -0.5, (q, "Oslo"): -2.0, (q, "the"): -4.0, (q, "German"): -9.0, (q, "2019"): -8.0,
             (q, "Marta Lind"): -1.0, (q, "parser"): -1.0}
    model = LikelihoodModel(table)
    (result,) = QuestionAnswerer(model, "prompted", likelihood_shortlist=2).answer([(q, "ctx")])
    first_pass, second_pass = model.score_calls
    assert first_pass[0][1] == ["Marta", "Oslo", "the", "German", "2019"]  # distinct first tokens, once
    # the two likeliest first tokens keep every candidate that starts with them
    assert second_pass[0][1] == ["Marta Lind", "Marta", "Oslo", "unanswerable"]
    assert result.answer == "Marta"  # -0.5 beats "Marta Lind" (-1.0)
    # shortlist 0: every candidate in one pass
    model = LikelihoodModel(table)
    QuestionAnswerer(model, "prompted", likelihood_shortlist=0).answer([(q, "ctx")])
    assert len(model.score_calls) == 1 and model.score_calls[0][0][1] == [*cands, "unanswerable"]


def test_snapped_answers_from_a_scripted_model():
    context = "The bridge was opened in 1932 by the mayor of Elmford."
    model = ScriptedModel({("Who opened it?", context): ("It was opened by the mayor of Elmford.", -1.0, 9),
                           ("When?", context): ("Not stated.", -1.0, 2)}, {})
    answerer = QuestionAnswerer(model, "prompted", spans="snap", snap_max_words=4)
    who, when = answerer.answer([("Who opened it?", context), ("When?", context)], answerability=False)
    assert who.answer == "mayor of Elmford"  # F1 2 * 3 / (3 + 7), the best within 4 words
    assert when == QAResult("", 0.0, float("-inf"))  # a no-answer reply is not snapped


def test_answerer_rejects_bad_span_settings():
    with pytest.raises(ValueError, match="span selection"):
        QuestionAnswerer(ScriptedModel({}, {}), "prompted", spans="beam")
    with pytest.raises(ValueError, match="snap_max_words"):
        QuestionAnswerer(ScriptedModel({}, {}), "prompted", snap_max_words=0)
    with pytest.raises(ValueError, match="likelihood_shortlist"):
        QuestionAnswerer(ScriptedModel({}, {}), "prompted", likelihood_shortlist=-1)


def test_likelihood_answers_on_the_tiny_model(tiny_qa_model):
    answerer = QuestionAnswerer(tiny_qa_model, "prompted", window_tokens=48, likelihood_shortlist=2)
    items = [("What does the fox jump over?", "The quick brown fox jumps over the lazy dog."),
             ("Who helps the summarizer?", "Facts and non-facts help the summarizer.")]
    results = answerer.answer(items)
    for (_, context), r in zip(items, results, strict=True):
        assert 0.0 < r.answerability < 1.0
        assert (r.answer == "") == (r.score == float("-inf"))
        if r.answer:
            assert r.answer in answerer.candidates(context) and r.answer in context
            assert r.score == pytest.approx(math.log(r.answerability / (1 - r.answerability)), rel=1e-6)
    assert answerer.answer(items) == results


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
    monkeypatch.setattr("isqaflow.metrics.qa_metrics.candidates_for",
                        lambda text, k, settings: first if text == summary else [])
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
            return [r if r.answer in ("Elmford", "river") else QAResult("something", 1.0, 0.0) for r in out]

        def answer_long(self, questions, documents, exclude_question_copies=False):
            self.asked_on_source = list(questions)
            return super().answer(list(zip(questions, documents)))

    qa = PickyQA()
    settings = QAMetricSettings(questions_per_summary=2, source_questions=1, candidate_pool=5, **LEGACY)
    (score,) = score_summaries([(summary, "SRC")], qg, qa, settings)
    # round 1 (1932, the mayor): nothing passes; round 2 (Elmford, bridge): one; round 3 (river): a second
    assert calls == [(summary, first, 3)]
    assert [it[1] for it in qg.items] == ["1932", "the mayor", "Elmford", "bridge", "river"]
    assert score.qags_questions == 2 and score.qags == 1.0 and score.questions_generated == 5
    rounds = [(q["candidate"], q["round"], q["kept"]) for q in score.details["summary_questions"]]
    assert rounds == [("1932", 1, False), ("the mayor", 1, False), ("Elmford", 2, True), ("bridge", 2, False),
                      ("river", 3, True)]
    # on the source: round 1 (QuestEval precision) and the later rounds' passing questions only
    assert qa.asked_on_source == ["Which item is 1932?", "Which item is the mayor?", "Which item is Elmford?",
                                  "Which item is river?"]
    # QuestEval precision uses round 1 only: F1("something"... on the source EchoQA gives the candidate back)
    assert score.questeval_precision == 1.0
    with pytest.raises(ValueError, match="candidate_pool"):
        QAMetricSettings(questions_per_summary=3, candidate_pool=2)


def test_further_candidates_are_seeded_and_disjoint():
    from isqaflow.metrics.qa_metrics import candidates_for, further_candidates_for

    text = ("Marta Lind trained the parser on 3,000 annotated sentences in Oslo. The parser was released "
            "by the University of Elmford in 2019. It reads German and Norwegian text.")
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
    assert got["questeval_v024"] == pytest.approx((5 / 6 + 0.7 + (0.72 + 0.06) / 2 + (0.9 + 0.0) / 2) / 4)
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
        return [[math.log(0.25)] if cands == ["true"] else [math.log(0.6), math.log(0.2)] for _, cands in items]


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
    assert request.startswith("1932 </s> When was it opened? </s> w0 w1") and len(request.split()) <= 40
    assert candidates == ["true"]
    v011 = QueryWeighter(model, "questeval_v011", max_input_tokens=40)
    assert v011.weigh([("When was it opened?", "1932", source)], sentence_indices=[3]) == [pytest.approx(0.25)]
    request, candidates = model.items[-1]
    assert request.startswith("3 </s> 1932 </s> When was it opened? </s> w0 w1") and candidates == ["true"]
    prompted = QueryWeighter(model, "prompted")
    assert prompted.weigh([("When was it opened?", "1932", "The bridge opened in 1932.")]) == [pytest.approx(0.75)]
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
    s1, s2 = score_summaries([(SUMMARY_1, SOURCE), (SUMMARY_2, SOURCE)], FakeGenerator(), FakeAnswerer(),
                             QAMetricSettings(questions_per_summary=7, source_questions=5, **LEGACY), weighter=weighter)
    assert len(weighter.calls) == 1 and len(weighter.calls[0]) == 2  # the shared source's questions, once
    assert weighter.calls[0][0] == ("In which year was the bridge opened?", "1932", SOURCE)
    # summary 1: answerability 0.9 (weight 0.5) and 0.6 (weight 1)
    assert s1.questeval_recall == pytest.approx((0.5 * 0.9 + 0.6) / 1.5)
    assert [q["weight"] for q in s2.details["source_questions"]] == [0.5, 1.0]


# ----------------------------------------------------------------------------- known-answer controls

def _paper(pid: str, abstract: str, body: str = "Body text."):
    from isqaflow.data.schema import Paper

    return Paper(id=pid, dataset="qasper", title=pid, abstract=abstract,
                 sections=[{"name": "Intro", "paragraphs": [f"{body} ({pid})"]}] if body else [])


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

    papers = [_paper(f"p{i}", f"Abstract {i}.") for i in range(6)] + [_paper("blank", " "), _paper("nobody", "A.", "")]
    pairs = control_pairs(papers, seed=13, scope="qasper")
    assert [p.id for p, _ in pairs] == [f"p{i}" for i in range(6)]  # no abstract or no body: left out
    assert all(p.id != o.id for p, o in pairs) and sorted(o.id for _, o in pairs) == [f"p{i}" for i in range(6)]
    assert [(p.id, o.id) for p, o in control_pairs(papers[::-1], seed=13, scope="qasper")] == [
        (p.id, o.id) for p, o in pairs]  # same seed, same pairs, whatever the input order
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
            out.append(SummaryScore(qags=qags, qags_questions=0 if qags != qags else 2, questeval=share,
                                    questeval_precision=share, questeval_recall=share, questeval_v024=0.5,
                                    precision_answerability=1.0, recall_f1=share, questions_generated=3))
        return out


def test_metric_control_records(monkeypatch):
    from isqaflow.metrics import controls

    metric = WordOverlapMetric(undefined="gamma")
    monkeypatch.setattr(controls, "score_summaries", metric)
    papers = [_paper("a", "alpha words", "alpha words here"), _paper("b", "beta words", "beta words here"),
              _paper("c", "gamma words", "gamma words here")]
    records = controls.run_metric_controls(papers, None, None, QAMetricSettings(), "qasper", seed=13)
    pairs = controls.control_pairs(papers, 13, scope="qasper")
    # exactly the real scoring path: own and other abstract against the paper's body
    assert metric.items == [(t, p.body()) for p, o in pairs for t in (p.abstract, o.abstract)]
    assert len(records) == 3 * 3  # papers x (QAGS, QuestEval, QuestEval v0.2.4)
    keys = {"instrument", "name", "scope", "control", "rule", "item", "expected", "outcome", "correct", "chance",
            "baseline_correct", "detail"}
    assert all(set(r) == keys for r in records)
    other_of = {p.id: o.id for p, o in pairs}
    by = {(r["item"].rsplit(":", 1)[0], r["name"]): r for r in records}
    assert {r["item"] for r in records} == {f"qasper:{p}:{o}" for p, o in other_of.items()}
    questeval = by[("qasper:a", "questeval")]
    assert questeval["instrument"] == "QuestEval" and questeval["control"] == "other_abstract"
    assert questeval["rule"] == "raw" and questeval["chance"] == 0.5 and questeval["expected"] == "own"
    assert questeval["correct"] is True and questeval["outcome"] == "own"
    assert questeval["detail"]["own"] == 1.0 and questeval["detail"]["other"] == 0.5  # "words" is in every body
    # equal scores: a tie, not correct
    tie = by[("qasper:a", "questeval_v024")]
    assert tie["outcome"] == "tie" and tie["correct"] is False
    # a NaN score (QAGS undefined for the gamma abstract, own or other): invalid, correct None, kept
    gamma_items = {f"qasper:{p.id}" for p, o in pairs if "gamma" in (p.abstract + o.abstract)}
    for item in gamma_items:
        assert by[(item, "qags")]["correct"] is None and by[(item, "qags")]["outcome"] == "invalid"
    assert by[("qasper:c", "qags")]["detail"]["own"] is None
    with pytest.raises(ValueError, match="unknown metric control"):
        controls.run_metric_controls(papers, None, None, QAMetricSettings(), "qasper", 13, controls=["swap"])
    assert controls.run_metric_controls(papers, None, None, QAMetricSettings(), "qasper", 13, controls=[]) == []


def test_every_ordered_pair_scores_each_own_abstract_once(monkeypatch):
    """others=None: 3 papers give 6 (paper, other) items, enough for the exact test to pass."""
    from isqaflow.metrics import controls

    metric = WordOverlapMetric()
    monkeypatch.setattr(controls, "score_summaries", metric)
    papers = [_paper(x, f"{x}lpha words", f"{x}lpha words here") for x in "abc"]
    pairs = controls.control_pairs(papers, 13, scope="qasper", others=None)
    assert sorted((p.id, o.id) for p, o in pairs) == [(p, o) for p in "abc" for o in "abc" if p != o]
    records = controls.run_metric_controls(papers, None, None, QAMetricSettings(), "qasper", seed=13, others=None)
    assert len(records) == 6 * 3
    assert len(metric.items) == 3 + 6  # own abstracts once each, then every other abstract
    assert sorted(metric.items) == sorted({(p.abstract, p.body()) for p in papers}
                                          | {(o.abstract, p.body()) for p, o in pairs})
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
    records = controls.run_metric_controls(papers, None, None, QAMetricSettings(), "qasper", seed=1)
    assert records and all(r["correct"] is False for r in records)  # all ties: never credited


@pytest.mark.parametrize("mode", ["questeval_v024", "questeval_v011", "prompted"])
def test_query_weighter_on_tiny_models(mode, tiny_causal, tiny_seq2seq, tmp_path):
    """Real scoring: QuestEval's layout on a seq2seq model (as the released T5 weighter), a chat prompt on a causal one."""
    from isqaflow.metrics.questeval import QueryWeighter
    from isqaflow.models.registry import load_model

    path = tiny_seq2seq if mode.startswith("questeval") else tiny_causal
    model = load_model({"backend": "hf", "model": str(path)}, cache=tmp_path / "calls.sqlite", threads=1)
    weighter = QueryWeighter(model, mode, max_input_tokens=64)
    source = "The model reads a paper and writes a summary of its results. " * 20
    weights = weighter.weigh([("What does the model write?", "a summary", source),
                              ("What does the model read?", "a paper", source)])
    assert len(weights) == 2 and all(0.0 < w <= 1.0 for w in weights)
    assert weighter.weigh([("What does the model write?", "a summary", source)]) == weights[:1]  # cached, stable


def test_released_weighter_readings_on_a_t5_stand_in(tiny_seq2seq, tmp_path):
    """The weight against the T5's own softmax for the reply "true" (for the released weighter one
    token, id 1176, at the first step): v0.2.4 = 1 - P(true), v0.1.1 = P(true)."""
    import torch
    from transformers import AutoTokenizer, T5ForConditionalGeneration

    from isqaflow.metrics.questeval import QueryWeighter
    from isqaflow.models.registry import load_model

    model = load_model({"backend": "hf", "model": str(tiny_seq2seq)}, cache=tmp_path / "calls.sqlite", threads=1)
    tok = AutoTokenizer.from_pretrained(tiny_seq2seq)
    net = T5ForConditionalGeneration.from_pretrained(tiny_seq2seq).eval()
    true_ids = torch.tensor([tok("true", add_special_tokens=False)["input_ids"]])
    item = ("What does the model write?", "a summary", "The model reads a paper and writes a summary.")

    def p_true(text):
        enc = tok(text, return_tensors="pt")
        with torch.inference_mode():
            logp = net(**enc, labels=true_ids).logits[0].float().log_softmax(-1)
        return float(torch.exp(logp.gather(-1, true_ids[0][:, None]).sum()))

    (v024,) = QueryWeighter(model, "questeval_v024", max_input_tokens=64).weigh([item])
    (v011,) = QueryWeighter(model, "questeval_v011", max_input_tokens=64).weigh([item], sentence_indices=[0])
    q, a, src = item
    expected = p_true(f"{a} </s> {q} </s> {src}")
    assert 0.0 < expected < 1.0
    assert v024 == pytest.approx(1 - expected, abs=1e-5)
    assert v011 == pytest.approx(p_true(f"0 </s> {a} </s> {q} </s> {src}"), rel=1e-3)
    assert 1 - v024 == pytest.approx(expected, rel=1e-3)  # the two readings are complements
