"""RAG-QA Arena's prediction files, read as its own code reads them (awslabs/rag-qa-arena).

* **One file per domain.** ``code/generate_responses.py`` writes the predictions of one
  model for one domain to ``<eval_dir>/<model>/<output_file>_<n_passages>_psgs.json``
  (``fiqa_from_colbert_5_psgs.json``, ...): a JSON list of ``{query, pred, passages}``.
  A system's ``file:`` may therefore be one such file, a folder of them or a glob
  (:func:`isqaflow.configcheck.systems.system_files` lists them); a query whose text two
  domains share is read as the domain the file's name starts with (``fiqa_...``,
  :func:`domain_of_file`) unless the record gives its own ``domain``.
* **The answer judged.** ``code/utils.py:process_response``, which
  ``evaluate_pair_responses.py`` applies to ``pred`` before judging, drops a thought
  before the answer (``<thinking>...</thinking>``, ``Thinking:``/``Thoughts:``/
  ``Thought:`` ... ``Answer:``; the first of each, when its end comes after its start),
  removes the answer tags (``Answer:`` followed by a space or a newline, ``<answer>``,
  ``</answer>``) and replaces the failed-generation marker ``FAIL TO GENERATE ANS.``
  with the no-answer reply "I couldn't find an answer.".  :func:`process_response`
  does the same (re-implemented from that description, not copied); a system's
  ``process_response: false`` judges the text as given.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

# (start, end) of a thought that precedes the answer, in the order RAG-QA Arena removes them
THOUGHTS = (
    ("<thinking>", "</thinking>"),
    ("Thinking: ", "Answer: "),
    ("Thoughts: ", "Answer: "),
    ("Thought: ", "Answer: "),
)
ANSWER_TAGS = ("Answer: ", "Answer:\n", "<answer>", "</answer>")
FAILED = "FAIL TO GENERATE ANS."
NO_ANSWER = "I couldn't find an answer."


def _drop_thought(text: str, start: str, end: str) -> str:
    """The text after ``end`` when ``start`` comes first and ``end`` is there too; stripped."""
    begin, close = text.find(start), text.find(end)
    if 0 <= begin <= close:
        text = text[close + len(end) :]
    return text.strip()


def process_response(text: str) -> str:
    """The answer RAG-QA Arena judges for a prediction ``text`` (see the module docstring)."""
    for start, end in THOUGHTS:
        text = _drop_thought(text, start, end)
    for tag in ANSWER_TAGS:
        text = text.replace(tag, "")
    return NO_ANSWER if text == FAILED else text


def domain_of_file(path: str | Path, domains: Iterable[str]) -> str | None:
    """The domain a prediction file's name starts with (``fiqa_from_colbert_5_psgs.json`` ->
    ``fiqa``), the longest when several do; None when none does."""
    name = Path(path).name
    found = [d for d in domains if name == f"{d}.json" or name.startswith(f"{d}_")]
    return max(found, key=len) if found else None
