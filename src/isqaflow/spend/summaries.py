"""The spend plan's call formulas of the stages on ISQA's summaries: the refinement's API feedback
model (``isqa_refine``, a bound) and the API judges of the final summaries (``drfr_summaries``,
``arena_summaries``; their calls counted as the stages make them).  See :mod:`isqaflow.spend`.

The papers are the converted ones (``results/data/papers/<dataset>.jsonl``) where they exist,
else ``spend.items.papers.<dataset>`` (basis ``declared``: every QA pair taken as answerable, a
bound; the titles, abstracts, questions and answers at their declared mean lengths).  The
summaries the judges read are the summaries files of :func:`isqaflow.grid.summary_files` where
they exist; a judged system none of them holds yet is taken at its length bound
(``isqa.summary_generation.max_new_tokens`` x :data:`CHARS_PER_TOKEN` characters, distinct per
paper and system; basis ``data+bound``), for every paper (a file-based system's coverage is
unknown until it is read).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from isqaflow import grid
from isqaflow.spend.stages import (
    CHARS_PER_TOKEN,
    MESSAGE_TOKENS,
    Inputs,
    NoFormula,
    conversation_calls,
    max_new_tokens,
    pair_calls,
)
from isqaflow.spend.tokens import filler


@dataclass
class _QA:
    id: str
    question: str
    gold_answers: list[str]
    unanswerable: bool = False


@dataclass
class _Paper:
    id: str
    dataset: str
    title: str
    abstract: str
    qas: list[_QA] = field(default_factory=list)


def declared_papers(inputs: Inputs, dataset: str) -> list[_Paper]:
    """Papers of the sizes ``spend.items.papers.<dataset>`` declares: ``qas`` spread evenly over
    ``papers``, every one answerable (a bound), texts at their declared mean lengths."""
    n = inputs.declared_count("papers", dataset, "papers")
    qas = inputs.declared_count("papers", dataset, "qas")
    sizes = {
        key: inputs.declared_count("papers", dataset, key)
        for key in ("title_chars", "abstract_chars", "question_chars", "answer_chars")
    }
    papers = []
    for i in range(n):
        count = qas // n + (1 if i < qas % n else 0)
        papers.append(
            _Paper(
                f"{dataset}-{i}",
                dataset,
                filler(sizes["title_chars"], f"{i}"),
                filler(sizes["abstract_chars"]),
                [
                    _QA(
                        f"{dataset}-{i}-{j}",
                        filler(sizes["question_chars"], f"{j}"),
                        [filler(sizes["answer_chars"])],
                    )
                    for j in range(count)
                ],
            )
        )
    return papers


def _papers(inputs: Inputs, dataset: str) -> tuple[list[Any], str]:
    """The dataset's papers and the basis of the count (data: converted; declared)."""
    found = inputs.papers(dataset)
    return (found, "data") if found is not None else (declared_papers(inputs, dataset), "declared")


def _summary_bound_chars(config: Mapping[str, Any]) -> int:
    return int(max_new_tokens(config["isqa"].get("summary_generation"), 0) * CHARS_PER_TOKEN)


def judged_summaries(
    job: grid.Job, inputs: Inputs, config: Mapping[str, Any]
) -> tuple[dict[str, Any], list[dict[str, Any]], list[str], str]:
    """(papers by id, the summaries rows the judge job reads, its judged systems, basis)."""
    dataset, summarizer = job.wildcard("dataset"), job.wildcard("summarizer")
    papers, basis = _papers(inputs, dataset)
    systems = grid.judged_summary_systems(config, dataset, summarizer)
    rows: list[dict[str, Any]] = []
    for path in grid.summary_files(config, dataset, summarizer):
        found = inputs.rows(path)
        rows += found or []
    written = {row["system"] for row in rows}
    bound = _summary_bound_chars(config)
    for system in systems:
        if system in written:
            continue
        basis = "declared" if basis == "declared" else "data+bound"
        rows += [
            {
                "paper_id": p.id,
                "dataset": dataset,
                "summarizer": summarizer,
                "system": system,
                "final": True,
                "summary": filler(bound, f"{summarizer}:{system}:{p.id}:"),
            }
            for p in papers
        ]
    return {p.id: p for p in papers}, rows, systems, basis


def _text_judge(entry: Mapping[str, Any]) -> None:
    if entry.get("mode") != "text":
        raise NoFormula("logprob judges score through an API only with a served model")


def _drfr_summaries(
    job: grid.Job, inputs: Inputs, config, ref: grid.ModelRef | None = None
) -> tuple[int, int, int, str]:
    from isqaflow.drfr.judge import DEFAULT_PARAMS
    from isqaflow.drfr.summaries import summary_items

    judge = config["drfr"]["judges"][job.wildcard("judge")]
    _text_judge(judge)
    out = max_new_tokens(judge.get("generation"), DEFAULT_PARAMS.max_new_tokens)
    papers, rows, systems, basis = judged_summaries(job, inputs, config)
    calls, tokens = conversation_calls(summary_items(papers, rows, systems), inputs.count)
    return calls, tokens, calls * out, basis


def _arena_summaries(
    job: grid.Job, inputs: Inputs, config, ref: grid.ModelRef | None = None
) -> tuple[int, int, int, str]:
    from isqaflow.arena.judging.judge import DEFAULT_PARAMS
    from isqaflow.arena.judging.summaries import summary_pairs

    arena = config["arena"]
    judge = arena["judges"][job.wildcard("judge")]
    _text_judge(judge)
    out = max_new_tokens(judge.get("generation"), DEFAULT_PARAMS.max_new_tokens)
    orders = 2 if arena.get("orders", "both") == "both" else 1
    papers, rows, systems, basis = judged_summaries(job, inputs, config)
    pairs = summary_pairs(papers, rows, systems, config["isqa"]["refine"]["initial_prompt"])
    calls, tokens = pair_calls(
        [(p["query"], p["answer_a"], p["answer_b"]) for p in pairs],
        orders,
        basis != "data",
        inputs.count,
    )
    return calls, tokens, calls * out, basis


def _isqa_refine(
    job: grid.Job, inputs: Inputs, config, ref: grid.ModelRef | None = None
) -> tuple[int, int, int, str]:
    """A bound on the API feedback model's calls of one refinement job: per paper with usable QA
    pairs, ``steps`` x min(``batch_size``, its usable pairs) feedback questions, plus the known-answer
    control (``validity.feedback``, human questions only) asking min(``per_paper``, its answerable
    pairs) twice (without and with the evidence).  Fewer are made where requests repeat (the call
    cache answers a question asked twice about an unchanged summary).  Prompt tokens: each request
    with its summary at the length bound, at most ``feedback_generation.max_input_tokens`` (the
    context is cut to fit it) -- a bound too."""
    from isqaflow.finetune.formats import feedback_request

    if ref is None or ref.role != "feedback":
        raise NoFormula("an API summarizer: no call formula for the summaries stages yet")
    isqa = config["isqa"]
    refine = isqa["refine"]
    if refine.get("evidence", "generated") == "likelihood":
        raise NoFormula(
            "evidence: likelihood scores log-probabilities: through an API only with a served model"
        )
    dataset, questions = job.wildcard("dataset"), job.wildcard("questions")
    style = isqa["feedback_models"][job.wildcard("feedback")].get("style", "isqa")
    papers, basis = _papers(inputs, dataset)
    include_unanswerable = refine.get("include_unanswerable", True)
    if questions == "generated":
        generated = inputs.rows(f"results/questions/{dataset}/generated.jsonl")
        per_paper = int(isqa["questions"]["generated"]["per_paper"])
        usable = (
            [len(row.get("qas") or []) for row in generated]
            if generated is not None
            else [per_paper] * len(papers)
        )
        texts = [q["question"] for row in generated or [] for q in row.get("qas") or []] or [
            filler(60)
        ]
        answerable = [0] * len(usable)  # no control with generated questions
    else:
        usable = [sum(include_unanswerable or not qa.unanswerable for qa in p.qas) for p in papers]
        answerable = [sum(not qa.unanswerable for qa in p.qas) for p in papers]
        texts = [qa.question for p in papers for qa in p.qas] or [filler(1)]
    steps, batch = int(refine["steps"]), int(refine["batch_size"])
    calls = sum(steps * min(batch, n) for n in usable)
    validity = (config.get("validity") or {}).get("feedback") or {}
    if questions == "human" and "gold_evidence" in (validity.get("controls") or []):
        calls += 2 * sum(min(int(validity.get("per_paper") or 0), n) for n in answerable)
    summary = filler(_summary_bound_chars(config))
    question = filler(math.ceil(sum(map(len, texts)) / len(texts)))  # the mean question
    per_call = inputs.count(feedback_request(question, summary, style))
    generation = isqa.get("feedback_generation") or {}
    if generation.get("max_input_tokens"):
        per_call = min(per_call, int(generation["max_input_tokens"]) + MESSAGE_TOKENS * 2)
    return calls, calls * per_call, calls * max_new_tokens(generation, 0), basis


PLANNERS = {
    "isqa_refine": _isqa_refine,
    "drfr_summaries": _drfr_summaries,
    "arena_summaries": _arena_summaries,
}
