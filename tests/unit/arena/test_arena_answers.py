"""Tests for the RAG answers stage: the no-answer reply (Table 9) and the stored flag."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from isqaflow.arena import answers
from isqaflow.arena.no_answer import NO_ANSWER, is_no_answer
from isqaflow.models.base import Generation, LanguageModel


@pytest.mark.parametrize(
    "text",
    [
        NO_ANSWER,
        "I couldn\u2019t find an answer.",  # the paper's spelling (Tables 9 and 11)
        "I couldn\u2018t find an answer.",
        "I couldn\u02bct find an answer.",
        "I couldn`t find an answer.",
        "I couldn\u00b4t find an answer.",
        "I couldnt find an answer",
        "I could not find an answer.",
        "I could  not\nfind any answer.",
        "I COULDN\u2019T FIND AN ANSWER.",
        "I can't find an answer in the passages.",
        "I cannot find the answer.",
        "Sorry. I couldn\u2019t find an answer.",
        "",
        "  \n ",
    ],
)
def test_no_answer_variants_are_recognised(text):
    assert is_no_answer(text)


@pytest.mark.parametrize(
    "text",
    [
        "Paying off the loan early earns a guaranteed return.",
        "The answer could be found in passage 2: boil it for six minutes.",
        "I found an answer: six minutes.",
        "Scientists could not find answers for decades, but now ...",
        "Passage 3 says the fox couldn\u2019t find any food.",
    ],
)
def test_real_answers_are_not_no_answer(text):
    assert not is_no_answer(text)


class Replies(LanguageModel):
    """A fake answerer that replies with the given texts in order."""

    backend = "fake"

    def __init__(self, texts):
        self.texts = list(texts)

    def identity(self):
        return {"backend": self.backend}

    def generate(self, requests, params):
        assert len(requests) == len(self.texts)
        return [Generation(text=t, n_new_tokens=5, finish_reason="stop") for t in self.texts]


def test_run_answers_flags_the_typographic_no_answer(tmp_path, monkeypatch):
    queries = tmp_path / "queries.jsonl"
    passages = tmp_path / "passages.jsonl"
    retrieval = tmp_path / "retrieval.jsonl"
    rows = [
        {
            "id": f"q{i}",
            "domain": "fiqa",
            "question": f"question {i}",
            "reference": "r",
            "reference_with_citation": "r [1]",
            "citations": [[1]],
            "gold_doc_ids": ["d1"],
        }
        for i in range(3)
    ]
    queries.write_text("".join(json.dumps(r) + "\n" for r in rows))
    passages.write_text(
        json.dumps({"id": "d1-0", "doc_id": "d1", "domain": "fiqa", "text": "a text"}) + "\n"
    )
    retrieval.write_text(
        "".join(
            json.dumps(
                {"domain": "fiqa", "query_id": f"q{i}", "passages": [{"id": "d1-0", "score": 1.0}]}
            )
            + "\n"
            for i in range(3)
        )
    )
    replies = [
        "<thinking>Nothing helps.</thinking> I couldn\u2019t find an answer.",
        "Six minutes.",
        "I could not find an answer.",
    ]
    monkeypatch.setattr("isqaflow.models.registry.load_model", lambda *a, **k: Replies(replies))
    out = tmp_path / "answers.jsonl"
    params = SimpleNamespace(
        model={}, adapter=None, cot=True, generation={"max_new_tokens": 8}, code="sha"
    )
    job = answers.AnswersJob.from_rule(
        params, SimpleNamespace(answerer="m", retriever="bm25", k="5")
    )
    answers.run_answers([queries], [passages], [retrieval], out, job, cache_path=None)
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["no_answer"] for r in written] == [True, False, True]
    assert (
        written[0]["answer"] == "I couldn\u2019t find an answer."
        and written[0]["thinking_blocks"] == 1
    )


def test_answer_prompt_asks_for_the_no_answer_reply():
    assert f'respond "{NO_ANSWER}"' in answers.INSTRUCTION
