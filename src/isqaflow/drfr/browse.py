"""The DRFR judgment browser (rule drfr_browser): every judged response on one static page.

Items (:mod:`isqaflow.report.browser`), one per (dataset, judge, instruction, responder):
the instruction, its input and the response -- the judge's records leave the response
out, so it is joined from the responses file by (instruction id, responder) -- and one
reply per decomposed question: the question, the answer under the configured rule, the
raw reply text (text-mode judges; log-prob judges generate none) and, for log-prob
judges, the YES/NO log-probabilities, the log-odds, the content-free log-odds and the
calibrated log-odds.  The item's verdict is "all YES", "some NO" or "some INVALID" (an
INVALID answer counts as NO in the DRFR); its tally counts the questions and their YES,
NO and INVALID answers, so the shown items' DRFR is YES / questions.

The ISQA summaries' DRFR judgments (``results/drfr/summaries/``: a paper's QA pairs as
requirements of its summary) are items of kind "summary", the summary joined from the
summaries files (its final step) and the paper's title and abstract from the papers file.

The known-answer controls (kind "control", ``results/validity/drfr/``) are marked as
such: one item per control, judge and instruction, with its scored questions (expected
NO) and the response it was asked about (the empty text, or another instruction's
response joined from the responses by the record's ``source``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from isqaflow.data.schema import Instruction, Paper
from isqaflow.drfr.controls import EXPECTED
from isqaflow.drfr.judge_responses import read_responses
from isqaflow.io import read_jsonl, read_records
from isqaflow.report.browser import write_browser

__all__ = ["control_items", "drfr_items", "response_items", "run_drfr_browser", "summary_items"]

TALLY_KEYS = ("questions", "YES", "NO", "INVALID")
NOTES = (
    (
        "One item per judged response: the instruction, its input, the response and the judge's "
        "answer to each decomposed question (the configured rule's; the badges give every rule's "
        "YES count). INVALID counts as NO in the DRFR; the shown items' DRFR is YES / questions."
    ),
    (
        "Log-prob judges generate no reply text: the log-probabilities of YES and NO decide, "
        "listed with the calibration's content-free log-odds."
    ),
    (
        "Known-answer controls (yellow) ask questions a response cannot meet (the empty response, "
        "or a response written for another instruction): expected NO."
    ),
)
_SCORES = ("logprob_yes", "logprob_no", "log_odds", "content_free_log_odds", "calibrated_log_odds")


def _summary_verdict(answers: Sequence[str]) -> str:
    if "INVALID" in answers:
        return "some INVALID"
    return "some NO" if "NO" in answers else "all YES"


def _scores(record: Mapping[str, Any]) -> dict[str, Any] | None:
    scores = {key: record.get(key) for key in _SCORES if record.get(key) is not None}
    return scores or None


def _texts(instruction: Instruction, label: str, response: str) -> list[list[str]]:
    texts = [["instruction", instruction.instruction]]
    if instruction.input.strip():
        texts.append(["input", instruction.input])
    return texts + [[label, response]]


def response_items(
    records: Sequence[Mapping[str, Any]],
    dataset: str,
    instructions: Mapping[str, Instruction],
    responses: Mapping[tuple[str, str], str],
    where: str = "",
) -> list[dict[str, Any]]:
    """Items of one judge's judgment records (:func:`isqaflow.drfr.judge.judge`), responses joined."""
    grouped: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for record in records:
        grouped.setdefault(
            (record.get("judge", ""), record["instruction_id"], record["model"]), []
        ).append(record)
    items = []
    for (judge, instruction_id, model), questions in grouped.items():
        if (instruction_id, model) not in responses:
            raise ValueError(
                f"{where}: judge {judge!r} judged a response of {model!r} to {instruction_id!r} "
                "that no responses file holds"
            )
        questions = sorted(questions, key=lambda r: r["question_index"])
        answers = [r["answer"] for r in questions]
        verdicts = {
            "raw": f"{sum(r['answer_raw'] == 'YES' for r in questions)}/{len(questions)} YES"
        }
        if any(r.get("answer_calibrated") is not None for r in questions):
            verdicts["calibrated"] = (
                f"{sum(r['answer_calibrated'] == 'YES' for r in questions)}/{len(questions)} YES"
            )
        items.append(
            {
                "id": f"{instruction_id}|{model}",
                "kind": "response",
                "judge": judge,
                "setting": dataset,
                "title": f"{instruction_id} ({instructions[instruction_id].subset}, "
                f"{instructions[instruction_id].category})  {model}",
                "systems": [model],
                "texts": _texts(
                    instructions[instruction_id],
                    f"response: {model}",
                    responses[(instruction_id, model)],
                ),
                "replies": [
                    [
                        f"Q{r['question_index'] + 1}: {r['question']} -> {r['answer']}",
                        r.get("raw") or "",
                        _scores(r),
                    ]
                    for r in questions
                ],
                "verdict": _summary_verdict(answers),
                "verdicts": verdicts,
                "flip": None,
                "length_diff": None,
                "human": None,
                "human_agrees": None,
                "control": None,
                "expected": None,
                "correct": None,
                "tally": {
                    "questions": len(answers),
                    **{a: answers.count(a) for a in ("YES", "NO", "INVALID")},
                },
            }
        )
    return items


def control_items(
    records: Sequence[Mapping[str, Any]],
    dataset: str,
    instructions: Mapping[str, Instruction],
    responses: Mapping[tuple[str, str], str],
    rule: str,
) -> list[dict[str, Any]]:
    """Items of one judge's control records (one per scored question and rule), the configured rule's shown."""
    grouped: dict[tuple[str, str, str], dict[int, dict[str, Mapping[str, Any]]]] = {}
    for record in records:
        instruction_id, index = record["item"].rsplit("#", 1)
        key = (record["name"], record["control"], instruction_id)
        grouped.setdefault(key, {}).setdefault(int(index), {})[record["rule"]] = record
    items = []
    for (judge, control, instruction_id), by_question in grouped.items():
        shown = [by_question[i].get(rule) or by_question[i]["raw"] for i in sorted(by_question)]
        source = shown[0]["detail"].get("source")
        response = (
            responses.get((source["instruction_id"], source["responder"]), "") if source else ""
        )
        label = f"response ({control}" + (
            f": {source['responder']}'s to {source['instruction_id']})" if source else ")"
        )
        answers = [r["outcome"] for r in shown]
        correct = [r["correct"] for r in shown]
        verdicts = {
            name: f"{sum(by_question[i][name]['outcome'] == 'YES' for i in by_question if name in by_question[i])}"
            f"/{len(by_question)} YES"
            for name in sorted({n for q in by_question.values() for n in q})
        }
        items.append(
            {
                "id": f"control:{control}:{instruction_id}",
                "kind": "control",
                "judge": judge,
                "setting": dataset,
                "title": f"{instruction_id}  control {control}",
                "systems": [control],
                "texts": _texts(instructions[instruction_id], label, response),
                "replies": [
                    [
                        f"Q{int(r['item'].rsplit('#', 1)[1]) + 1}: {r['detail']['question']} -> {r['outcome']}",
                        r["detail"].get("raw") or "",
                        _scores(r["detail"]),
                    ]
                    for r in shown
                ],
                "verdict": _summary_verdict(answers),
                "verdicts": verdicts,
                "flip": None,
                "length_diff": None,
                "human": None,
                "human_agrees": None,
                "control": control,
                "expected": f"{EXPECTED} to every question",
                "correct": None if None in correct else all(correct),
                "tally": {
                    "questions": len(answers),
                    **{a: answers.count(a) for a in ("YES", "NO", "INVALID")},
                },
            }
        )
    return items


def summary_items(
    records: Sequence[Mapping[str, Any]],
    papers: Mapping[str, Paper],
    summaries: Mapping[tuple[str, str], str],
    where: str = "",
) -> list[dict[str, Any]]:
    """Items of rule drfr_summaries' records (a summary's QA pairs as requirements): the paper's
    title and abstract and the final summary, joined from the summaries files (kind "summary")."""
    items = []
    grouped: dict[tuple[str, str, str, str], list[Mapping[str, Any]]] = {}
    for record in records:
        key = (record.get("judge", ""), record["paper_id"], record["system"], record["summarizer"])
        grouped.setdefault(key, []).append(record)
    for (judge, paper_id, system, summarizer), questions in grouped.items():
        if (paper_id, system) not in summaries or paper_id not in papers:
            raise ValueError(
                f"{where}: judge {judge!r} judged a summary of {system!r} of paper {paper_id!r} "
                "that no summaries or papers file holds"
            )
        paper = papers[paper_id]
        questions = sorted(questions, key=lambda r: r["question_index"])
        answers = [r["answer"] for r in questions]
        items.append(
            {
                "id": f"{paper_id}|{system}",
                "kind": "summary",
                "judge": judge,
                "setting": f"summaries {paper.dataset}/{summarizer}",
                "title": f"{paper_id} ({paper.title})  {system}",
                "systems": [system],
                "texts": [
                    ["paper (title and abstract)", f"{paper.title}\n\n{paper.abstract}"],
                    [f"summary: {system}", summaries[(paper_id, system)]],
                ],
                "replies": [
                    [
                        f"Q{r['question_index'] + 1}: {r['question']} -> {r['answer']}",
                        r.get("raw") or "",
                        _scores(r),
                    ]
                    for r in questions
                ],
                "verdict": _summary_verdict(answers),
                "verdicts": {
                    "raw": f"{sum(r['answer_raw'] == 'YES' for r in questions)}/{len(questions)} YES"
                },
                "flip": None,
                "length_diff": None,
                "human": None,
                "human_agrees": None,
                "control": None,
                "expected": None,
                "correct": None,
                "tally": {
                    "questions": len(answers),
                    **{a: answers.count(a) for a in ("YES", "NO", "INVALID")},
                },
            }
        )
    return items


def _summary_set_items(summary_set: Mapping[str, Any]) -> list[dict[str, Any]]:
    papers = {p.id: p for p in read_records(summary_set["papers"], Paper)}
    summaries = {}
    for path in summary_set["summaries"]:
        for _, row in read_jsonl(path):
            if row.get("final", True):
                summaries[(row["paper_id"], row["system"])] = row["summary"]
    records = [record for _, record in read_jsonl(summary_set["judgments"])]
    return summary_items(records, papers, summaries, where=str(summary_set["judgments"]))


def drfr_items(
    datasets: Mapping[str, Mapping[str, Any]],
    rules: Mapping[str, str] | None = None,
    summary_sets: Sequence[Mapping[str, Any]] = (),
) -> list[dict]:
    """Every item of the DRFR browser.  ``datasets``: dataset -> {"instructions": path, "responses":
    [paths], "judgments": [paths], "controls": [paths]}; ``rules``: judge -> configured rule;
    ``summary_sets``: per drfr_summaries job {"judgments": path, "papers": path, "summaries":
    [paths]}."""
    rules = dict(rules or {})
    items = []
    for dataset, files in datasets.items():
        instructions = {i.id: i for i in read_records(files["instructions"], Instruction)}
        responses = {
            (r["instruction_id"], r["model"]): r["response"]
            for r in read_responses(files["responses"], instructions)
        }
        for path in files["judgments"]:
            records = [record for _, record in read_jsonl(path)]
            items += response_items(records, dataset, instructions, responses, where=str(path))
        for path in files.get("controls", []):
            records = [record for _, record in read_jsonl(path)]
            judge = records[0]["name"] if records else ""
            items += control_items(
                records, dataset, instructions, responses, rules.get(judge, "raw")
            )
    return items + [
        item for summary_set in summary_sets for item in _summary_set_items(summary_set)
    ]


def run_drfr_browser(
    out_path,
    datasets: Mapping[str, Mapping[str, Any]],
    rules: Mapping[str, str] | None = None,
    summary_sets: Sequence[Mapping[str, Any]] = (),
) -> int:
    """Entry point of rule drfr_browser: write the page; returns the number of items."""
    items = drfr_items(datasets, rules, summary_sets)
    return write_browser(out_path, "InFoBench DRFR: every judgment", items, NOTES, TALLY_KEYS)
