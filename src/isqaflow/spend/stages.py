"""The spend plan's call formulas, one per model stage: calls, prompt tokens (estimated) and a
completion bound of one API job, from the stage's own inputs and request builders where they
exist, else from the sizes declared in ``spend.items`` (see :mod:`isqaflow.spend`).  Prompt
tokens are counted by ``inputs.count`` (:mod:`isqaflow.spend.tokens`: the model's own encoding
where it can, else characters / 4); texts not known yet are :func:`~isqaflow.spend.tokens.filler`
at their length bound."""

from __future__ import annotations

import copy
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from isqaflow import grid
from isqaflow.spend.tokens import CHARS_PER_TOKEN, ESTIMATE, MESSAGE_TOKENS, chat_tokens, filler

__all__ = ["CHARS_PER_TOKEN", "MESSAGE_TOKENS", "chat_tokens"]  # the fallback's, re-exported

PASSAGE_CHARS_PER_WORD = 6.0  # a passage of N words taken as 6 N characters (estimate)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


class Inputs:
    """The texts a plan reads: converted datasets and earlier stages' outputs under ``root``,
    else the sizes declared in ``spend.items``."""

    def __init__(
        self, config: Mapping[str, Any], root: str | Path = ".", count: Any = ESTIMATE
    ) -> None:
        self.config = config
        self.root = Path(root)
        self.declared = (config.get("spend") or {}).get("items") or {}
        self.count = count  # prompt tokens of a request (isqaflow.spend.tokens)

    def for_model(self, count: Any) -> Inputs:
        """The same inputs, counting prompt tokens with ``count`` (one model's counter)."""
        other = copy.copy(self)
        other.count = count
        return other

    def instructions(self, dataset: str) -> list[Any] | None:
        from isqaflow.data.schema import Instruction
        from isqaflow.io import read_records

        path = self.root / f"results/data/instructions/{dataset}.jsonl"
        return read_records(path, Instruction) if path.exists() else None

    def queries(self, domain: str) -> list[Any] | None:
        from isqaflow.data.schema import RagQuery
        from isqaflow.io import read_records

        path = self.root / f"results/data/rag/{domain}/queries.jsonl"
        return read_records(path, RagQuery) if path.exists() else None

    def papers(self, dataset: str) -> list[Any] | None:
        from isqaflow.data.schema import Paper
        from isqaflow.io import read_records

        path = self.root / f"results/data/papers/{dataset}.jsonl"
        return read_records(path, Paper) if path.exists() else None

    def rows(self, pattern: str, **wildcards: Any) -> list[dict[str, Any]] | None:
        path = self.root / pattern.format(**wildcards)
        return _read_jsonl(path) if path.exists() else None

    def declared_count(self, section: str, key: str, field: str) -> int:
        try:
            return int(self.declared[section][key][field])
        except (KeyError, TypeError) as err:
            raise KeyError(
                f"spend plan: {section} {key!r} is not converted yet and spend.items.{section}."
                f"{key}.{field} declares no size"
            ) from err


def max_new_tokens(generation: Mapping[str, Any] | None, default: int) -> int:
    return int((generation or {}).get("max_new_tokens") or default)


# ----------------------------------------------------------------------------- per stage


def _drfr_responses(
    job: grid.Job, inputs: Inputs, config, ref: grid.ModelRef | None = None
) -> tuple[int, int, int, str]:
    from isqaflow.drfr.responses import instruction_request

    out = max_new_tokens(config["drfr"]["generation"], 0)
    dataset = job.wildcard("dataset")
    instructions = inputs.instructions(dataset)
    if instructions is None:
        n = inputs.declared_count("instructions", dataset, "instructions")
        chars = inputs.declared_count("instructions", dataset, "prompt_chars")
        return n, n * (math.ceil(chars / CHARS_PER_TOKEN) + MESSAGE_TOKENS), n * out, "declared"
    tokens = sum(inputs.count(instruction_request(i)) for i in instructions)
    return len(instructions), tokens, len(instructions) * out, "data"


def _responses_of(
    job_dataset: str, inputs: Inputs, config, instructions
) -> tuple[list[dict[str, Any]], bool]:
    """The responses the DRFR judge reads (placeholders at the length bound where not yet written)."""
    bound_chars = int(max_new_tokens(config["drfr"]["generation"], 0) * CHARS_PER_TOKEN)
    rows, exact = [], True
    for responder in config["drfr"].get("responders") or {}:
        found = inputs.rows(
            grid.PATTERNS["drfr_responses"][0], dataset=job_dataset, responder=responder
        )
        if found is None:
            exact = (
                False  # a file-based responder's coverage is unknown until read: every instruction
            )
            found = [
                {
                    "instruction_id": i.id,
                    "model": responder,  # distinct: never one call for two
                    "response": filler(bound_chars, f"{responder}:{i.id}:"),
                }
                for i in instructions
            ]
        rows += found
    return rows, exact


def _drfr_judge(
    job: grid.Job, inputs: Inputs, config, ref: grid.ModelRef | None = None
) -> tuple[int, int, int, str]:
    from isqaflow.drfr.controls import control_items
    from isqaflow.drfr.judge import DEFAULT_PARAMS

    judge = config["drfr"]["judges"][job.wildcard("judge")]
    if judge.get("mode") != "text":
        raise NoFormula("logprob judges score through an API only with a served model")
    out = max_new_tokens(judge.get("generation"), DEFAULT_PARAMS.max_new_tokens)
    dataset = job.wildcard("dataset")
    instructions = inputs.instructions(dataset)
    if instructions is None:  # declared: every responder on every question, and controls on all the
        # sampled instructions' questions (the real controls stop at the last certain-NO one): a bound
        n = inputs.declared_count("instructions", dataset, "requirements")
        responders = len(config["drfr"].get("responders") or {})
        validity = (config.get("validity") or {}).get("drfr") or {}
        per_instr = n / inputs.declared_count("instructions", dataset, "instructions")
        controls = len(validity.get("controls") or []) * math.ceil(
            (validity.get("instructions") or 0) * per_instr
        )
        calls = (judge.get("repeats") or 1) * responders * n + controls
        chars = inputs.declared_count("instructions", dataset, "judge_turn_chars")
        bound = max_new_tokens(config["drfr"]["generation"], 0)
        # a turn: the chat without the response (judge_turn_chars), the response at its bound, and
        # ~3 messages on average (turn t holds 2t - 1; an estimate)
        per_call = math.ceil(chars / CHARS_PER_TOKEN) + bound + 3 * MESSAGE_TOKENS
        return calls, calls * per_call, calls * out, "declared"
    by_id = {i.id: i for i in instructions}
    responses, exact = _responses_of(dataset, inputs, config, instructions)
    validity = (config.get("validity") or {}).get("drfr") or {}
    items = [
        {
            "input": by_id[r["instruction_id"]].input,
            "response": r["response"],
            "requirements": [
                {"question": q.question} for q in by_id[r["instruction_id"]].requirements
            ],
        }
        for r in responses
    ]
    controls = control_items(
        instructions,
        responses,
        validity.get("controls") or [],
        validity.get("instructions"),
        config["seed"],
    )
    calls, tokens = conversation_calls(items + controls, inputs.count)
    if (
        judge.get("repeats") or 1
    ) > 1:  # every further repetition judges the responses again, not the controls
        again, again_tokens = conversation_calls(items, inputs.count)
        calls, tokens = (
            calls + (judge["repeats"] - 1) * again,
            tokens + (judge["repeats"] - 1) * again_tokens,
        )
    return calls, tokens, calls * out, "data" if exact else "data+bound"


def conversation_calls(
    items: Sequence[Mapping[str, Any]], count: Any = ESTIMATE
) -> tuple[int, int]:
    """Calls and prompt tokens of the DRFR judge's conversations over ``items``: one call per turn;
    identical conversations (two identical responses) are one call each turn, as the call cache
    makes them.

    Turn k's request is turn k-1's with two more messages (the earlier reply, YES, and the next
    question: :func:`isqaflow.drfr.judge.conversation`), so each item's last conversation is
    built once and every turn is a prefix of it: its tokens the previous turn's plus its new
    messages' (``count.base`` plus each ``count.message``), and a turn is new when its prefix is
    -- a trie of (previous turn, message) pairs, equal prefixes exactly where the requests are
    equal.  Building and counting every turn's whole request took quadratic time in the number
    of questions: seconds of every paper-scale dry run (tests/unit/spend/test_spend.py checks
    the two agree)."""
    from isqaflow.drfr.judge import conversation

    seen: dict[tuple[int, str, str], int] = {}  # (prefix node, role, content) -> node
    calls = tokens = 0
    for item in items:
        questions = [r["question"] for r in item["requirements"]]
        if not questions:
            continue
        last = conversation(
            item["response"], item.get("input") or "", questions, ["YES"] * (len(questions) - 1)
        )
        node, total = -1, count.base
        for turn in range(len(questions)):  # turn k's request: the first 2k + 1 messages
            new = last[:1] if turn == 0 else last[2 * turn - 1 : 2 * turn + 1]
            fresh = False
            for message in new:
                key = (node, message["role"], message["content"])
                if key not in seen:
                    seen[key] = len(seen)
                    fresh = True
                node = seen[key]
                total += count.message(message)
            if fresh:  # a request no earlier turn made
                calls += 1
                tokens += total
    return calls, tokens


def _rag_answers(
    job: grid.Job, inputs: Inputs, config, ref: grid.ModelRef | None = None
) -> tuple[int, int, int, str]:
    from isqaflow.arena.answers import answer_request

    arena = config["arena"]
    out = max_new_tokens(arena["generation"], 0)
    entry = arena["answerers"][job.wildcard("answerer")]
    k = int(job.wildcard("k"))
    passage_chars = int(
        config["datasets"]["rag"].get("passage_words", 100) * PASSAGE_CHARS_PER_WORD
    )
    calls = tokens = 0
    basis = "data"
    for domain in arena["domains"]:
        queries = inputs.queries(domain)
        if queries is None:
            basis = "declared"
            n = inputs.declared_count("rag", domain, "queries")
            chars = inputs.declared_count("rag", domain, "query_chars")
            texts = [filler(chars)] * n
        else:
            texts = [q.question for q in queries]
        passages = [_Passage(filler(passage_chars))] * k  # the passages' length: an estimate
        # each distinct query's request counted once, times its number (a declared domain's
        # queries are all one placeholder)
        for text, n in Counter(texts).items():
            tokens += n * inputs.count(answer_request(text, passages, bool(entry.get("cot"))))
        calls += len(texts)
    return calls, tokens, calls * out, basis


@dataclass
class _Passage:
    text: str


def _text_judge_bounds(arena: Mapping[str, Any], job: grid.Job) -> tuple[int, int]:
    """An arena judge's completion bound per call and its orders per pair; a log-prob judge has
    no API formula (:class:`NoFormula`)."""
    from isqaflow.arena.judging.judge import DEFAULT_PARAMS

    judge = arena["judges"][job.wildcard("judge")]
    if judge.get("mode") != "text":
        raise NoFormula("logprob judges score through an API only with a served model")
    out = max_new_tokens(judge.get("generation"), DEFAULT_PARAMS.max_new_tokens)
    return out, 2 if arena.get("orders", "both") == "both" else 1


def _arena_judge(
    job: grid.Job, inputs: Inputs, config, ref: grid.ModelRef | None = None
) -> tuple[int, int, int, str]:
    from isqaflow.arena.judging.battles import all_pairs

    arena = config["arena"]
    out, orders = _text_judge_bounds(arena, job)
    retriever, k = job.wildcard("retriever"), job.wildcard("k")
    run = next(
        r for r in grid.arena_runs(config) if r["retriever"] == retriever and str(r["k"]) == k
    )
    bound = filler(int(max_new_tokens(arena["generation"], 0) * CHARS_PER_TOKEN))
    answers, basis = [], "data"
    queries: dict[tuple[str, str], Any] = {}
    for domain in arena["domains"]:
        found = inputs.queries(domain)
        if found is None:
            basis = "declared"
            n = inputs.declared_count("rag", domain, "queries")
            chars = inputs.declared_count("rag", domain, "query_chars")
            ref = filler(inputs.declared_count("rag", domain, "reference_chars"))
            found = [_Query(f"{domain}-{i}", domain, filler(chars), ref) for i in range(n)]
        queries.update(((q.domain, q.id), q) for q in found)
    for answerer in run["answerers"]:
        rows = inputs.rows(
            grid.PATTERNS["rag_answers"][0], retriever=retriever, k=k, answerer=answerer
        )
        if rows is None:
            basis = "declared" if basis == "declared" else "data+bound"
            rows = [
                {"domain": d, "qid": q, "answerer": answerer, "answer": bound} for d, q in queries
            ]
        answers += rows
    pairs = [
        (
            queries[(a["domain"], a["qid"])].question,
            a["answer"],
            queries[(a["domain"], a["qid"])].reference.replace("\n", " "),
        )
        for a in answers
    ]
    if run["all_pairs_per_domain"]:
        if (
            basis == "declared"
        ):  # the sample is drawn per domain; without ids: per domain, every pair
            n = len(run["answerers"])
            per = run["all_pairs_per_domain"]
            for domain in arena["domains"]:
                q = next(q for (d, _), q in queries.items() if d == domain)
                pairs += [(q.question, bound, bound)] * (
                    min(per, len([1 for d, _ in queries if d == domain])) * math.comb(n, 2)
                )
        else:
            pairs += [
                (p["query"], p["answer_a"], p["answer_b"])
                for p in all_pairs(answers, queries, run["all_pairs_per_domain"], config["seed"])
            ]
    calls, tokens = pair_calls(pairs, orders, basis != "data", inputs.count)
    repeats = (
        arena["judges"][job.wildcard("judge")].get("repeats") or 1
    )  # each repetition: every call again
    return repeats * calls, repeats * tokens, repeats * calls * out, basis


def pair_calls(
    pairs: Sequence[tuple[str, str, str]], orders: int, bounded: bool, count: Any = ESTIMATE
) -> tuple[int, int]:
    """Calls and prompt tokens of judging ``pairs`` (query, answer 1, answer 2) in ``orders`` orders.

    With the texts known, identical requests (a pair judged in both orders whose answers are
    the same text, the same pair listed twice) are one call, as the call cache makes them;
    placeholders at the length bound are not compared.  Our own prompt's length is counted,
    also for ``prompts: published`` (its files are downloaded by the run).

    A request (:func:`~isqaflow.arena.judging.judge.pair_request`) is the same leading messages
    (system instruction, in-context examples) and the pair's own message, and its tokens are
    ``count.base`` plus each message's: the leading messages are counted once here, not rebuilt
    and looked up again for each of a paper-scale plan's ~400,000 pairs, and identical bounded
    pairs (a domain's declared queries, every answer at its bound) are counted once each, times
    their number -- the same sums, seconds less of every paper-scale dry run."""
    from isqaflow.arena.judging.judge import leading_messages, pair_message

    leading = count.base + sum(count.message(m) for m in leading_messages())

    def request_tokens(q: str, a: str, b: str) -> int:
        return leading + count.message(pair_message(q, a, b))

    if bounded:
        same = Counter((q, a, b) for q, a, b in pairs)
        tokens = sum(n * request_tokens(*pair) for pair, n in same.items())
        return len(pairs) * orders, tokens * orders
    requests = {(q, a, b) for q, a, b in pairs}
    if orders == 2:
        requests |= {(q, b, a) for q, a, b in pairs}
    return len(requests), sum(request_tokens(q, a, b) for q, a, b in requests)


def _arena_judge_checks(
    job: grid.Job, inputs: Inputs, config, ref: grid.ModelRef | None = None
) -> tuple[int, int, int, str]:
    from isqaflow.arena.judging.controls import build_controls, human_pairs
    from isqaflow.arena.judging.judge import pair_request

    arena = config["arena"]
    out, orders = _text_judge_bounds(arena, job)
    validity = (config.get("validity") or {}).get("arena") or {}
    controls, per_domain = validity.get("controls") or [], int(validity.get("per_domain") or 0)
    human = (config["datasets"]["rag"] or {}).get("human_labels")
    if human and not (inputs.root / human).exists():
        raise NoFormula(f"the human-labelled pairs {human} are not there yet")
    pairs = (
        [(p["query"], p["answer_a"], p["answer_b"]) for p in human_pairs(inputs.root / human)]
        if human
        else []
    )
    found = {domain: inputs.queries(domain) for domain in arena["domains"]}
    if all(queries is not None for queries in found.values()):
        queries = [q for domain in arena["domains"] for q in found[domain]]
        pairs += [
            (p["query"], p["answer_a"], p["answer_b"])
            for p in build_controls(queries, controls, per_domain, config["seed"])
        ]
        calls, tokens = pair_calls(pairs, orders, False, inputs.count)
        return calls, tokens, calls * out, "data"
    calls, tokens = pair_calls(pairs, orders, False, inputs.count)
    for domain in arena[
        "domains"
    ]:  # declared: per control and domain, per_domain pairs of references
        n = min(per_domain, inputs.declared_count("rag", domain, "queries"))
        ref = filler(inputs.declared_count("rag", domain, "reference_chars"))
        query = filler(inputs.declared_count("rag", domain, "query_chars"))
        for control in controls:
            other = "I couldn't find an answer." if control == "no_answer" else ref
            both = (
                1 if control == "self" else orders
            )  # the two orders of a reference vs itself: one request
            calls += n * both
            tokens += n * both * inputs.count(pair_request(query, ref, other))
    return calls, tokens, calls * out, "declared"


@dataclass
class _Query:
    id: str
    domain: str
    question: str
    reference: str


class NoFormula(Exception):
    """A stage (or a mode of it) the plan cannot count."""


PLANNERS = {
    "drfr_responses": _drfr_responses,
    "drfr_judge": _drfr_judge,
    "rag_answers": _rag_answers,
    "arena_judge": _arena_judge,
    "arena_judge_checks": _arena_judge_checks,
}
if unknown := sorted(set(PLANNERS) - set(grid.MODEL_RULES)):  # a misspelt rule: never planned
    raise ValueError(f"spend.stages.PLANNERS: {unknown} are not model rules of isqaflow.suites")
