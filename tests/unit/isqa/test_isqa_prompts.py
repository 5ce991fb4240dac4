"""ISQA's prompts (isqaflow.isqa.prompts, Appendix E): summaries, generic and ISQA feedback, act on feedback."""

from __future__ import annotations

import pytest

from isqaflow.finetune.formats import (
    feedback_request,
)
from isqaflow.isqa import prompts
from isqaflow.models.base import GenerationParams

PAPER = "BODY OF THE PAPER"
QUESTION = "What do the authors propose?"
CONTEXT = "A generated summary."

SUMMARY_PARAMS = GenerationParams(max_new_tokens=8)
FEEDBACK_PARAMS = GenerationParams(max_new_tokens=8)


# ======================================================================= prompts
EXPECTED_SUMMARY_PROMPTS = {
    # E.1 Baseline prompts
    "baseline_1": "Read this: BODY OF THE PAPER\nWrite a summary.",
    "baseline_2": "Below is a scientific paper. Please write a summary about it.\nPaper: BODY OF THE PAPER",
    # E.2 Pre-hoc prompt engineering
    "prehoc_1": (
        "Below is a scientific paper. Please write a summary that is factually consistent with the paper.\n"
        "Paper: BODY OF THE PAPER"
    ),
    "prehoc_2": (
        "Write a summary of the scientific paper below. Reduce non-facts as much as possible in the summary you "
        "generate.\nPaper: BODY OF THE PAPER"
    ),
    "prehoc_3": (
        "Please write a summary about the scientific paper below. Make sure the summary is factually consistent "
        "with the paper. Do not include non-factual information.\nPaper: BODY OF THE PAPER"
    ),
}


def test_every_summary_prompt_renders_the_paper_template():
    assert set(prompts.SUMMARY_PROMPTS) == set(EXPECTED_SUMMARY_PROMPTS)
    for prompt_id, expected in EXPECTED_SUMMARY_PROMPTS.items():
        assert prompts.summary_request(prompt_id, PAPER) == [
            {"role": "user", "content": expected}
        ], prompt_id
    assert prompts.BASELINE_PROMPTS == ("baseline_1", "baseline_2")
    assert prompts.PREHOC_PROMPTS == ("prehoc_1", "prehoc_2", "prehoc_3")
    with pytest.raises(ValueError, match="unknown summary prompt"):
        prompts.summary_request("baseline_3", PAPER)


def test_generic_feedback_prompt():
    expected = (
        "Below is a scientific paper paired with feedback. Please write a summary based on the feedback provided.\n"
        "Paper: BODY OF THE PAPER\n"
        "Feedback: The previous summary you generated is not factually consistent with the paper. Please "
        "re-generate a summary with higher factuality. Reduce your factual errors and include more facts."
    )
    assert prompts.generic_feedback_request(PAPER) == [{"role": "user", "content": expected}]


def test_isqa_feedback_prompt():
    expected = (
        "Below is a question paired with context. Please return your response in two parts:\n"
        "1. The answer to the question\n"
        "2. The most relevant evidence sentence in the context to your answer.\n"
        "If the question is unanswerable, directly return 'Unanswerable'.\n"
        "Question: What do the authors propose?\n"
        "Context: A generated summary."
    )
    assert feedback_request(QUESTION, CONTEXT) == [{"role": "user", "content": expected}]
    assert feedback_request(QUESTION, CONTEXT, "isqa") == [{"role": "user", "content": expected}]


def test_gpt35_feedback_prompt_is_a_system_user_pair():
    expected = [
        {
            "role": "system",
            "content": "You are good at answering reading comprehension questions and extracting corresponding "
            "evidence.",
        },
        {
            "role": "user",
            "content": "Read the context\n"
            "Context: A generated summary.\n"
            "Please answer the following question by:\n"
            "1. Provide the answer\n"
            "2. Provide the evidence sentence in the context.\n"
            'Please use "Answer:" and "Evidence:" to denote these two parts when generating your response: '
            "What do the authors propose?",
        },
    ]
    assert feedback_request(QUESTION, CONTEXT, "gpt35") == expected
    with pytest.raises(ValueError, match="unknown feedback prompt style"):
        feedback_request(QUESTION, CONTEXT, "gpt4")


ACT_HEAD = (
    "Below is a scientific paper paired with feedback on factual information. Please write a summary by "
    "memorizing the provided facts and rectifying the provided non-facts.\n"
)


def test_act_on_feedback_prompt_numbers_facts_and_non_facts():
    request = prompts.act_on_feedback_request(
        PAPER,
        ["The model has 12 layers.", "  It is trained on SQuAD. "],
        ["It was released in 2010."],
    )
    expected = (
        ACT_HEAD + "Facts:\n1. The model has 12 layers.\n2. It is trained on SQuAD.\n"
        "Non-Facts:\n1. It was released in 2010.\n"
        "Paper: BODY OF THE PAPER"
    )
    assert request == [{"role": "user", "content": expected}]


def test_act_on_feedback_prompt_with_empty_lists():
    expected = ACT_HEAD + "Facts: None\nNon-Facts: None\nPaper: BODY OF THE PAPER"
    assert prompts.act_on_feedback_request(PAPER, [], []) == [{"role": "user", "content": expected}]
    only_non_facts = ACT_HEAD + "Facts: None\nNon-Facts:\n1. A.\nPaper: BODY OF THE PAPER"
    assert prompts.act_on_feedback_request(PAPER, [], ["A."]) == [
        {"role": "user", "content": only_non_facts}
    ]
