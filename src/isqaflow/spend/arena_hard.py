"""The spend plan's call formulas of Arena-Hard-Auto's API jobs (rules arena_hard_answers and
arena_hard_judge), from the suite's own request builders (:mod:`isqaflow.arena_hard`).

The questions are read from the suite's question file where it is there at DAG build (the
embedded set; the paper's download once fetched); before that the jobs have no formula (listed
as not planned, naming the file).  Answers not yet written count at their length bound; the
judge's calls are two games per (answerer, question) plus two per control and control question;
identical requests are one call where the texts are known (the call cache makes them one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from isqaflow import grid
from isqaflow.spend.stages import Inputs, NoFormula, max_new_tokens
from isqaflow.spend.tokens import CHARS_PER_TOKEN, filler

__all__ = ["PLANNERS"]


def _questions(inputs: Inputs, config: Mapping[str, Any]) -> tuple[list[tuple[str, str]], bool]:
    """(question id, prompt) of every question, and whether they are declared sizes."""
    from isqaflow.arena_hard.answers import read_questions
    from isqaflow.data.raw_paths import raw_path

    section = config["arena_hard"]
    path = inputs.root / raw_path(config.get("downloads") or {}, section["questions"])
    if not path.is_file():  # not downloaded yet: spend.items.arena_hard's sizes
        declared = inputs.declared.get("arena_hard")
        if not declared:
            raise NoFormula(
                f"the questions {path.relative_to(inputs.root)} are not there yet and "
                "spend.items.arena_hard declares no size"
            )
        n = min(int(declared["questions"]), section.get("limit") or int(declared["questions"]))
        prompt = int(declared["prompt_chars"])
        return [(f"q{i}", filler(prompt, f"q{i}:")) for i in range(n)], True
    table = read_questions(path, section.get("limit"))
    return list(zip(table["question_id"], table["prompt"], strict=True)), False


def _baseline(inputs: Inputs, config: Mapping[str, Any]) -> dict[str, str] | None:
    """question id -> the baseline's answer, where its file is there at DAG build."""
    from isqaflow.data.peers import read_arena_hard_answers
    from isqaflow.data.raw_paths import raw_path

    path = inputs.root / raw_path(config.get("downloads") or {}, config["arena_hard"]["baseline"])
    if not path.is_file():
        return None
    table = read_arena_hard_answers(path).table
    return dict(zip(table["question_id"], table["answer"], strict=True))


def _answers(
    job: grid.Job, inputs: Inputs, config: Mapping[str, Any], ref: grid.ModelRef | None = None
) -> tuple[int, int, int, str]:
    from isqaflow.arena_hard.answers import question_request

    questions, declared = _questions(inputs, config)
    out = max_new_tokens(config["arena_hard"]["generation"], 0)
    tokens = sum(inputs.count(question_request(prompt)) for _, prompt in questions)
    return len(questions), tokens, len(questions) * out, "declared" if declared else "data"


def _judge(
    job: grid.Job, inputs: Inputs, config: Mapping[str, Any], ref: grid.ModelRef | None = None
) -> tuple[int, int, int, str]:
    from isqaflow.arena_hard.controls import CONTROLS
    from isqaflow.arena_hard.judge import game_request

    section = config["arena_hard"]
    judge = section["judges"][job.wildcard("judge")]
    if judge["mode"] != "text":
        raise NoFormula("logprob judges score through an API only with a served model")
    questions, declared = _questions(inputs, config)
    bound = filler(int(max_new_tokens(section["generation"], 0) * CHARS_PER_TOKEN))
    baseline, bounded = _baseline(inputs, config), False
    if baseline is None:  # not downloaded yet: the declared length, else the answers' bound
        chars = (inputs.declared.get("arena_hard") or {}).get("baseline_chars")
        declared, bounded = declared or chars is not None, chars is None
        text = bound if chars is None else filler(int(chars))
        baseline = {qid: filler(len(text), f"baseline:{qid}:") for qid, _ in questions}
    requests = set()
    for answerer in section["answerers"]:
        rows = inputs.rows(grid.PATTERNS["arena_hard_answers"][0], answerer=answerer)
        bounded = bounded or rows is None
        answers = {row["uid"]: row["messages"][-1]["content"]["answer"] for row in rows or []}
        for qid, prompt in questions:
            answer = answers.get(qid, filler(len(bound), f"{answerer}:{qid}:"))
            requests |= {(prompt, baseline[qid], answer), (prompt, answer, baseline[qid])}
    checks = questions[: section.get("control_questions") or len(questions)]
    for control in CONTROLS:
        for qid, prompt in checks:
            other = baseline[qid] if control == "self" else ""
            requests |= {(prompt, baseline[qid], other), (prompt, other, baseline[qid])}
    prompts = judge.get("prompts", "ours")
    tokens = sum(inputs.count(game_request(q, a, b, prompts)) for q, a, b in requests)
    out = max_new_tokens(judge.get("generation"), 4096)
    basis = "declared" if declared else "data+bound" if bounded else "data"
    return len(requests), tokens, len(requests) * out, basis


PLANNERS = {"arena_hard_answers": _answers, "arena_hard_judge": _judge}
if unknown := sorted(set(PLANNERS) - set(grid.MODEL_RULES)):  # a misspelt rule: never planned
    raise ValueError(f"spend.arena_hard.PLANNERS: {unknown} are not model rules of isqaflow.suites")
