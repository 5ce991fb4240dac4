"""The feedback model's replies (isqaflow.finetune.formats): parsing answer and evidence, the checked
replies of ISQA's loop, and the embedded model's replies that echo the prompt's labels."""

from __future__ import annotations

import pytest

from isqaflow.finetune.formats import (
    ParsedFeedback,
    check_feedback,
    evidence_slot,
    format_target,
    match_evidence,
    parse_feedback,
)
from isqaflow.models.base import GenerationParams

PAPER = "BODY OF THE PAPER"
QUESTION = "What do the authors propose?"
CONTEXT = "A generated summary."

SUMMARY_PARAMS = GenerationParams(max_new_tokens=8)
FEEDBACK_PARAMS = GenerationParams(max_new_tokens=8)


# ============================================================== feedback parsing
@pytest.mark.parametrize(
    ("raw", "answer", "evidence"),
    [
        ("1.Answer: X 2.Evidence: Y", "X", "Y"),
        ("1. Answer: X\n2. Evidence: Y", "X", "Y"),
        ("Answer: X\nEvidence: Y", "X", "Y"),  # GPT-3.5 (Appendix E.5)
        ("1. X\n2. Y", "X", "Y"),  # a bare numbered list
        (
            "1.Answer: BERT model 2.Evidence: We fine-tune a BERT model.",
            "BERT model",
            "We fine-tune a BERT model.",
        ),
        (
            "  Answer: 12 layers\nEvidence: The encoder has 12 layers.\nIt has 8 heads.  ",
            "12 layers",
            "The encoder has 12 layers. It has 8 heads.",
        ),
        ('1. Answer: "SQuAD"\n2. Evidence: "We train on SQuAD."', "SQuAD", "We train on SQuAD."),
    ],
)
def test_parse_feedback_answer_and_evidence(raw, answer, evidence):
    assert parse_feedback(raw) == ParsedFeedback("ok", answer=answer, evidence=evidence, raw=raw)
    assert parse_feedback(raw).consistent


@pytest.mark.parametrize(
    "raw",
    [
        "Unanswerable",
        "unanswerable.",
        "'Unanswerable'",
        "1. Answer: Unanswerable\n2. Evidence: ...",
        "Answer: Unanswerable\nEvidence: none",
        "The question is unanswerable.",
    ],
)
def test_parse_feedback_unanswerable(raw):
    parsed = parse_feedback(raw)
    assert parsed == ParsedFeedback("unanswerable", raw=raw)
    assert parsed.consistent


@pytest.mark.parametrize(
    "raw",
    [
        "The authors propose a new transfer learning approach.",  # free text, no markers
        "Answer: X",  # no evidence
        "1. Answer: X",
        "",
        "   ",
    ],
)
def test_parse_feedback_unparsed_keeps_the_raw_text(raw):
    parsed = parse_feedback(raw)
    assert parsed == ParsedFeedback("unparsed", answer="", evidence="", raw=raw)
    assert not parsed.consistent


def test_parse_feedback_answer_that_starts_with_unanswerable():
    raw = "1. Answer: Unanswerable questions\n2. Evidence: About 10% of the questions are unanswerable."
    assert parse_feedback(raw) == ParsedFeedback(
        "ok",
        answer="Unanswerable questions",
        evidence="About 10% of the questions are unanswerable.",
        raw=raw,
    )


# ================================================= checked replies (ISQA's loop)
SUMMARY = "The model has 12 layers. It is trained on SQuAD, a QA data set. We release the code."


@pytest.mark.parametrize(
    ("evidence", "sentences", "how"),
    [
        ("The model has 12 layers.", (0,), "containment"),
        ('"the model has 12 layers"', (0,), "containment"),  # quotes, case, punctuation
        (
            "It is trained on SQuAD",
            (1,),
            "containment",
        ),  # a clause covering at least half of its sentence
        ("The model has 12 layers. We release the code.", (0, 2), "containment"),  # two sentences
        ("We release our code.", (2,), "overlap"),  # a word changed: token F1 0.86
    ],
)
def test_match_evidence_accepts_sentences_of_the_context(evidence, sentences, how):
    match = match_evidence(evidence, SUMMARY)
    assert match is not None and match.sentences == sentences and match.how == how


@pytest.mark.parametrize(
    "evidence",
    [
        "The",  # normalizes to nothing
        "...",
        "",
        "The model",  # a fragment: a quarter of its sentence
        "trained on SQuAD",  # a fragment: 3 of 8 tokens
        "The model has 12 layers and 8 heads.",  # a sentence with something added
        "The model has twelve layers.",  # a fact changed: token F1 0.75
        "The model has 12 layers. It was released in 2010.",  # the second sentence is not in the summary
        "Something else entirely.",
    ],
)
def test_match_evidence_rejects_what_is_not_a_sentence_of_the_context(evidence):
    assert match_evidence(evidence, SUMMARY) is None


def test_check_feedback_statuses_in_order():
    good = parse_feedback("1. Answer: 12 layers\n2. Evidence: The model has 12 layers.")
    assert check_feedback(good, "stop", SUMMARY) == good
    assert check_feedback(good, None, SUMMARY) == good  # backends that report no finish reason
    # cut at max_new_tokens: truncated, whatever else holds; the parsed parts are kept for the record
    cut = check_feedback(good, "length", SUMMARY)
    assert (cut.status, cut.answer, cut.evidence) == (
        "truncated",
        "12 layers",
        "The model has 12 layers.",
    )
    assert check_feedback(parse_feedback("I cannot"), "length", SUMMARY).status == "truncated"
    assert check_feedback(parse_feedback("I cannot tell."), "stop", SUMMARY).status == "unparsed"
    assert check_feedback(parse_feedback("Unanswerable"), "stop", SUMMARY).status == "unanswerable"
    for raw in (
        "1. Answer: Unanswerable questions\n2. Evidence: The model has 12 layers.",
        "1. Answer: 2. unanswerable\n2. Evidence: The model has 12 layers.",
    ):
        assert check_feedback(parse_feedback(raw), "stop", SUMMARY).status == "unanswerable_answer"
    for evidence in ("The", "It was released in 2010."):
        reply = parse_feedback(f"1. Answer: 12 layers\n2. Evidence: {evidence}")
        assert check_feedback(reply, "stop", SUMMARY).status == "evidence_not_in_summary"
        assert check_feedback(reply, "stop", SUMMARY, check_evidence=False).status == "ok"
    # the format parser alone still reads the answer (the fine-tuning evaluation counts it as consistent)
    assert parse_feedback("1. Answer: Unanswerable questions\n2. Evidence: X.").status == "ok"


def test_evidence_slot_is_the_reply_format_up_to_the_evidence():
    assert evidence_slot(" 12 layers ") == "1. Answer: 12 layers\n2. Evidence: "
    assert format_target("12 layers", "E.").startswith(evidence_slot("12 layers"))
    assert evidence_slot("12", "gpt35") == "Answer: 12\nEvidence: "
    assert parse_feedback(evidence_slot("12", "gpt35") + "E.") == ParsedFeedback(
        "ok", answer="12", evidence="E.", raw="Answer: 12\nEvidence: E."
    )
    with pytest.raises(ValueError, match="unknown feedback prompt style"):
        evidence_slot("12", "gpt4")


# Replies of the embedded feedback model (SmolLM2 + LoRA) on real summaries: they echo the
# prompt's labels instead of the trained format.
ECHOED_LABELS = [
    (
        '1- The answer is: 1.\n2- The evidence sentence is: "The system raises recall."',
        "ok",
        "1.",
        "The system raises recall.",
    ),
    (
        "The answer to this question is: 2\n\nThe most relevant Evidence Sentence in the Context to the Answer: \n"
        "The paper uses 2 anchor tokens.",
        "ok",
        "2",
        "The paper uses 2 anchor tokens.",
    ),
    (
        "The answer to question 1 is: 2\nThe most relevant Evidence in context to answer question 2 is:\n"
        "- The paper covers coastal towns.\n\nMore text.",
        "ok",
        "2",
        "The paper covers coastal towns.",
    ),
    ("The answer to your question is: The answer is: 2.\n\nEvidence: 3.", "ok", "2.", "3."),
    ("The answer to this question is: The answer is: Unanswerable.", "unanswerable", "", ""),
    ("The answer is: 2. Unanswerable", "unparsed", "", ""),
    ("The paper discusses radio broadcasting.", "unparsed", "", ""),
]


@pytest.mark.parametrize(("raw", "status", "answer", "evidence"), ECHOED_LABELS)
def test_parse_feedback_replies_that_echo_the_prompt_labels(raw, status, answer, evidence):
    parsed = parse_feedback(raw)
    assert (parsed.status, parsed.answer, parsed.evidence) == (status, answer, evidence)
    assert parsed.raw == raw
