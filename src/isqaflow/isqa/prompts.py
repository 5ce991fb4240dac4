"""The ISQA paper's prompt templates (Appendix E), word for word.

Where the paper shows ``‘‘This is the body text of ...’’`` the text itself is
inserted (the quotes mark the slot, they are not part of the prompt).  Facts and
non-facts are numbered, one per line.  Every prompt is a single user turn; for chat
models the model layer applies the chat template, for seq2seq models (Flan-T5) the
text is used as is.
"""

from __future__ import annotations

from collections.abc import Sequence

# E.1 Baseline prompts and E.2 pre-hoc prompt engineering -------------------------
SUMMARY_PROMPTS: dict[str, str] = {
    "baseline_1": "Read this: {paper}\nWrite a summary.",
    "baseline_2": "Below is a scientific paper. Please write a summary about it.\nPaper: {paper}",
    "prehoc_1": (
        "Below is a scientific paper. Please write a summary that is factually consistent with the paper.\n"
        "Paper: {paper}"
    ),
    "prehoc_2": (
        "Write a summary of the scientific paper below. Reduce non-facts as much as possible in the summary "
        "you generate.\nPaper: {paper}"
    ),
    "prehoc_3": (
        "Please write a summary about the scientific paper below. Make sure the summary is factually consistent "
        "with the paper. Do not include non-factual information.\nPaper: {paper}"
    ),
}
BASELINE_PROMPTS = ("baseline_1", "baseline_2")
PREHOC_PROMPTS = ("prehoc_1", "prehoc_2", "prehoc_3")

# E.3 Generic feedback ------------------------------------------------------------
GENERIC_FEEDBACK = (
    "The previous summary you generated is not factually consistent with the paper. Please re-generate a "
    "summary with higher factuality. Reduce your factual errors and include more facts."
)
GENERIC_FEEDBACK_PROMPT = (
    "Below is a scientific paper paired with feedback. Please write a summary based on the feedback provided.\n"
    "Paper: {paper}\n"
    "Feedback: " + GENERIC_FEEDBACK
)

# E.4 Summary generation with feedback (the act-on-feedback prompt) --------------
ACT_ON_FEEDBACK_PROMPT = (
    "Below is a scientific paper paired with feedback on factual information. Please write a summary by "
    "memorizing the provided facts and rectifying the provided non-facts.\n"
    "Facts:{facts}\n"
    "Non-Facts:{non_facts}\n"
    "Paper: {paper}"
)

NONE_LISTED = " None"


def numbered(sentences: Sequence[str]) -> str:
    """``\\n1. first\\n2. second``; `` None`` when the list is empty."""
    if not sentences:
        return NONE_LISTED
    return "".join(f"\n{i}. {s.strip()}" for i, s in enumerate(sentences, start=1))


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def summary_request(prompt_id: str, paper: str) -> list[dict[str, str]]:
    try:
        template = SUMMARY_PROMPTS[prompt_id]
    except KeyError:
        raise ValueError(
            f"unknown summary prompt {prompt_id!r}; known: {sorted(SUMMARY_PROMPTS)}"
        ) from None
    return user(template.format(paper=paper))


def generic_feedback_request(paper: str, previous: str | None = None) -> list[dict[str, str]]:
    """E.3's generic-feedback prompt; with ``previous``, a conversation that shows that summary.

    The E.3 prompt tells the model "The previous summary you generated is not
    factually consistent" without showing one.  An iterated round (``generic_steps``
    > 1) gives the model the summary the feedback is about: the E.3 turn, the
    previous summary as the model's own reply, and the feedback sentence again.
    """
    first = user(GENERIC_FEEDBACK_PROMPT.format(paper=paper))
    if previous is None:
        return first
    return [
        *first,
        {"role": "assistant", "content": previous},
        {"role": "user", "content": GENERIC_FEEDBACK},
    ]


def act_on_feedback_request(
    paper: str, facts: Sequence[str], non_facts: Sequence[str]
) -> list[dict[str, str]]:
    return user(
        ACT_ON_FEEDBACK_PROMPT.format(
            facts=numbered(facts), non_facts=numbered(non_facts), paper=paper
        )
    )
