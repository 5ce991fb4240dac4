"""The spend plan: what the config's API jobs will cost, at DAG build, before any job runs.

For every job of the model stages (:mod:`isqaflow.grid`) that holds an API model (backend
``openai`` without ``serve:``) the plan counts its calls, its prompt tokens, a bound on its
completion tokens and its dollars (the model's ``price`` in the config):

* **calls** -- items x orders x turns, from the stage's own inputs where they exist at DAG
  build (the converted datasets, the responses and answers of earlier stages), read with
  the stage's own code (the DRFR controls' sample, the arena's pair lists); where they do
  not yet exist, from the dataset sizes declared under ``spend.items`` (basis
  ``declared``), and upstream outputs (responses, answers) taken at their length bound.
* **prompt tokens** -- the stage's own request builders applied to those texts, counted as
  characters / :data:`CHARS_PER_TOKEN` plus :data:`MESSAGE_TOKENS` per chat message: an
  **estimate**, named ``chars/4`` in the output.  OpenAI's encodings (tiktoken's
  cl100k/o200k) are downloaded at first use and cannot be counted offline here.
* **completion tokens** -- calls x ``max_new_tokens`` of the stage's decoding: a bound.
* **the call cache** -- rows already in the job's call cache (``<output>.calls.sqlite``)
  are subtracted (``cached``): a resumed run plans only what is left.

Stages the plan has no call formula for yet (ISQA refinement with an API feedback model,
the DRFR and arena judges of summaries) are listed with ``calls = None`` and counted in no
total; the budget check names them.  Identical requests are one call (the call cache makes
them one) where the texts are known.

Top floor of the import contract: it reads the stages' request builders.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from isqaflow import grid

CHARS_PER_TOKEN = 4.0  # OpenAI: "1 token ~= 4 chars in English" (help.openai.com, "What are tokens")
MESSAGE_TOKENS = 4  # per chat message (role and separators; OpenAI cookbook, counting chat tokens)
PASSAGE_CHARS_PER_WORD = 6.0  # a passage of N words taken as 6 N characters (estimate)
TOKEN_ESTIMATE = "chars/4"


def chat_tokens(messages: Any) -> int:
    """Estimated prompt tokens of a request (a string or chat messages)."""
    if isinstance(messages, str):
        return math.ceil(len(messages) / CHARS_PER_TOKEN)
    return sum(math.ceil(len(m["content"]) / CHARS_PER_TOKEN) + MESSAGE_TOKENS for m in messages)


@dataclass
class JobSpend:
    """The plan of one API model in one job: every call of the job (``calls``, tokens, dollars),
    of which ``cached`` are in its call cache already; the ``left_*`` figures are what is left."""

    job: str
    rule: str
    model: str  # the models key
    calls: int | None  # None: no call formula for this stage
    cached: int = 0
    input_tokens: int = 0
    output_tokens: int = 0  # a bound: calls x max_new_tokens
    dollars: float | None = None  # None without a price
    basis: str = "data"  # data: the job's inputs were read; declared: spend.items; data+bound
    note: str = ""  # why a job is not planned

    @property
    def left(self) -> int:
        return max(0, (self.calls or 0) - self.cached)

    def _share(self) -> float:
        return self.left / self.calls if self.calls else 0.0

    @property
    def left_input_tokens(self) -> int:
        return round(self.input_tokens * self._share())

    @property
    def left_output_tokens(self) -> int:
        return round(self.output_tokens * self._share())

    @property
    def left_dollars(self) -> float | None:
        return None if self.dollars is None else self.dollars * self._share()

    def record(self) -> dict[str, Any]:
        return {**asdict(self), "left": self.left, "left_dollars": self.left_dollars}


def api_models(config: Mapping[str, Any]) -> set[str]:
    return {name for name, entry in (config.get("models") or {}).items()
            if entry.get("backend") == "openai" and not entry.get("serve")}


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _cached_calls(path: Path) -> int:
    """Rows in a job's call cache (0 when it has none)."""
    if not path.exists():
        return 0
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0])
    except sqlite3.DatabaseError:
        return 0
    finally:
        conn.close()


class Inputs:
    """The texts a plan reads: converted datasets and earlier stages' outputs under ``root``,
    else the sizes declared in ``spend.items``."""

    def __init__(self, config: Mapping[str, Any], root: str | Path = ".") -> None:
        self.config = config
        self.root = Path(root)
        self.declared = (config.get("spend") or {}).get("items") or {}

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

    def rows(self, pattern: str, **wildcards: Any) -> list[dict[str, Any]] | None:
        path = self.root / pattern.format(**wildcards)
        return _read_jsonl(path) if path.exists() else None

    def declared_count(self, section: str, key: str, field: str) -> int:
        try:
            return int(self.declared[section][key][field])
        except (KeyError, TypeError) as err:
            raise KeyError(f"spend plan: {section} {key!r} is not converted yet and spend.items.{section}."
                           f"{key}.{field} declares no size") from err


def _max_new_tokens(generation: Mapping[str, Any] | None, default: int) -> int:
    return int((generation or {}).get("max_new_tokens") or default)


# ----------------------------------------------------------------------------- per stage


def _drfr_responses(job: grid.Job, inputs: Inputs, config) -> tuple[int, int, int, str]:
    from isqaflow.drfr.responses import instruction_request

    out = _max_new_tokens(config["drfr"]["generation"], 0)
    dataset = job.wildcard("dataset")
    instructions = inputs.instructions(dataset)
    if instructions is None:
        n = inputs.declared_count("instructions", dataset, "instructions")
        chars = inputs.declared_count("instructions", dataset, "prompt_chars")
        return n, n * (math.ceil(chars / CHARS_PER_TOKEN) + MESSAGE_TOKENS), n * out, "declared"
    tokens = sum(chat_tokens(instruction_request(i)) for i in instructions)
    return len(instructions), tokens, len(instructions) * out, "data"


def _responses_of(job_dataset: str, inputs: Inputs, config, instructions) -> tuple[list[dict[str, Any]], bool]:
    """The responses the DRFR judge reads (placeholders at the length bound where not yet written)."""
    bound_chars = int(_max_new_tokens(config["drfr"]["generation"], 0) * CHARS_PER_TOKEN)
    rows, exact = [], True
    for responder in config["drfr"].get("responders") or {}:
        found = inputs.rows("results/drfr/responses/{d}/{r}.jsonl", d=job_dataset, r=responder)
        if found is None:
            exact = False  # a file-based responder's coverage is unknown until read: every instruction
            found = [{"instruction_id": i.id, "model": responder,  # distinct: never one call for two
                      "response": f"{responder}:{i.id}:".ljust(bound_chars, "x")} for i in instructions]
        rows += found
    return rows, exact


def _drfr_judge(job: grid.Job, inputs: Inputs, config) -> tuple[int, int, int, str]:
    from isqaflow.drfr.controls import control_items
    from isqaflow.drfr.judge import DEFAULT_PARAMS, conversation

    judge = config["drfr"]["judges"][job.wildcard("judge")]
    if judge.get("mode") != "text":
        raise _NoFormula("logprob judges score through an API only with a served model")
    out = _max_new_tokens(judge.get("generation"), DEFAULT_PARAMS.max_new_tokens)
    dataset = job.wildcard("dataset")
    instructions = inputs.instructions(dataset)
    if instructions is None:
        n = inputs.declared_count("instructions", dataset, "requirements")
        responders = len(config["drfr"].get("responders") or {})
        validity = (config.get("validity") or {}).get("drfr") or {}
        per_instr = n / inputs.declared_count("instructions", dataset, "instructions")
        controls = len(validity.get("controls") or []) * math.ceil(
            (validity.get("instructions") or 0) * per_instr)
        calls = responders * n + controls
        chars = inputs.declared_count("instructions", dataset, "judge_turn_chars")
        bound = _max_new_tokens(config["drfr"]["generation"], 0)
        per_call = math.ceil(chars / CHARS_PER_TOKEN) + bound + 3 * MESSAGE_TOKENS
        return calls, calls * per_call, calls * out, "declared"
    by_id = {i.id: i for i in instructions}
    responses, exact = _responses_of(dataset, inputs, config, instructions)
    validity = (config.get("validity") or {}).get("drfr") or {}
    items = [{"input": by_id[r["instruction_id"]].input, "response": r["response"],
              "requirements": [{"question": q.question} for q in by_id[r["instruction_id"]].requirements]}
             for r in responses]
    items += control_items(instructions, responses, validity.get("controls") or [],
                           validity.get("instructions"), config["seed"])
    seen: set[str] = set()  # identical conversations (two identical responses) are one call each turn
    tokens = 0
    for item in items:
        questions = [r["question"] for r in item["requirements"]]
        answers: list[str] = []
        for _ in questions:  # each turn: one call; earlier replies (YES/NO) stay in the chat
            request = conversation(item["response"], item.get("input") or "", questions, answers)
            key = json.dumps(request, sort_keys=True)
            if key not in seen:
                seen.add(key)
                tokens += chat_tokens(request)
            answers.append("YES")
    return len(seen), tokens, len(seen) * out, "data" if exact else "data+bound"


def _rag_answers(job: grid.Job, inputs: Inputs, config) -> tuple[int, int, int, str]:
    from isqaflow.arena.answers import answer_request

    arena = config["arena"]
    out = _max_new_tokens(arena["generation"], 0)
    entry = arena["answerers"][job.wildcard("answerer")]
    k = int(job.wildcard("k"))
    passage_chars = int(config["datasets"]["rag"].get("passage_words", 100) * PASSAGE_CHARS_PER_WORD)
    calls = tokens = 0
    basis = "data"
    for domain in arena["domains"]:
        queries = inputs.queries(domain)
        if queries is None:
            basis = "declared"
            n = inputs.declared_count("rag", domain, "queries")
            chars = inputs.declared_count("rag", domain, "query_chars")
            texts = [("q" * chars)] * n
        else:
            texts = [q.question for q in queries]
        passages = [_Passage("p" * passage_chars)] * k  # the passages' length: an estimate
        for text in texts:
            tokens += chat_tokens(answer_request(text, passages, bool(entry.get("cot"))))
        calls += len(texts)
    return calls, tokens, calls * out, basis


@dataclass
class _Passage:
    text: str


def _arena_judge(job: grid.Job, inputs: Inputs, config) -> tuple[int, int, int, str]:
    from isqaflow.arena.battles import all_pairs
    from isqaflow.arena.judge import DEFAULT_PARAMS

    arena = config["arena"]
    judge = arena["judges"][job.wildcard("judge")]
    if judge.get("mode") != "text":
        raise _NoFormula("logprob judges score through an API only with a served model")
    out = _max_new_tokens(judge.get("generation"), DEFAULT_PARAMS.max_new_tokens)
    orders = 2 if arena.get("orders", "both") == "both" else 1
    retriever, k = job.wildcard("retriever"), job.wildcard("k")
    run = next(r for r in grid.arena_runs(config) if r["retriever"] == retriever and str(r["k"]) == k)
    bound = "a" * int(_max_new_tokens(arena["generation"], 0) * CHARS_PER_TOKEN)
    answers, basis = [], "data"
    queries: dict[tuple[str, str], Any] = {}
    for domain in arena["domains"]:
        found = inputs.queries(domain)
        if found is None:
            basis = "declared"
            n = inputs.declared_count("rag", domain, "queries")
            chars = inputs.declared_count("rag", domain, "query_chars")
            ref = "r" * inputs.declared_count("rag", domain, "reference_chars")
            found = [_Query(f"{domain}-{i}", domain, "q" * chars, ref) for i in range(n)]
        queries.update(((q.domain, q.id), q) for q in found)
    for answerer in run["answerers"]:
        rows = inputs.rows("results/arena/answers/{run}/{a}.jsonl", run=f"{retriever}-k{k}", a=answerer)
        if rows is None:
            basis = "declared" if basis == "declared" else "data+bound"
            rows = [{"domain": d, "qid": q, "answerer": answerer, "answer": bound} for d, q in queries]
        answers += rows
    pairs = [(queries[(a["domain"], a["qid"])].question, a["answer"],
              queries[(a["domain"], a["qid"])].reference.replace("\n", " ")) for a in answers]
    if run["all_pairs_per_domain"]:
        if basis == "declared":  # the sample is drawn per domain; without ids: per domain, every pair
            n = len(run["answerers"])
            per = run["all_pairs_per_domain"]
            for domain in arena["domains"]:
                q = next(q for (d, _), q in queries.items() if d == domain)
                pairs += [(q.question, bound, bound)] * (min(per, len(
                    [1 for d, _ in queries if d == domain])) * math.comb(n, 2))
        else:
            pairs += [(p["query"], p["answer_a"], p["answer_b"])
                      for p in all_pairs(answers, queries, run["all_pairs_per_domain"], config["seed"])]
    calls, tokens = _pair_calls(pairs, orders, basis != "data")
    return calls, tokens, calls * out, basis


def _pair_calls(pairs: Sequence[tuple[str, str, str]], orders: int, bounded: bool) -> tuple[int, int]:
    """Calls and prompt tokens of judging ``pairs`` (query, answer 1, answer 2) in ``orders`` orders.

    With the texts known, identical requests (a pair judged in both orders whose answers are
    the same text, the same pair listed twice) are one call, as the call cache makes them;
    placeholders at the length bound are not compared.  Our own prompt's length is counted,
    also for ``prompts: published`` (its files are downloaded by the run)."""
    from isqaflow.arena.judge import pair_request

    if bounded:
        return len(pairs) * orders, sum(chat_tokens(pair_request(q, a, b)) for q, a, b in pairs) * orders
    requests = {(q, a, b) for q, a, b in pairs}
    if orders == 2:
        requests |= {(q, b, a) for q, a, b in pairs}
    return len(requests), sum(chat_tokens(pair_request(q, a, b)) for q, a, b in requests)


def _arena_judge_checks(job: grid.Job, inputs: Inputs, config) -> tuple[int, int, int, str]:
    from isqaflow.arena.checks import build_controls, human_pairs
    from isqaflow.arena.judge import DEFAULT_PARAMS, pair_request

    arena = config["arena"]
    judge = arena["judges"][job.wildcard("judge")]
    if judge.get("mode") != "text":
        raise _NoFormula("logprob judges score through an API only with a served model")
    out = _max_new_tokens(judge.get("generation"), DEFAULT_PARAMS.max_new_tokens)
    orders = 2 if arena.get("orders", "both") == "both" else 1
    validity = (config.get("validity") or {}).get("arena") or {}
    controls, per_domain = validity.get("controls") or [], int(validity.get("per_domain") or 0)
    human = (config["datasets"]["rag"] or {}).get("human_labels")
    if human and not (inputs.root / human).exists():
        raise _NoFormula(f"the human-labelled pairs {human} are not there yet")
    pairs = [(p["query"], p["answer_a"], p["answer_b"]) for p in human_pairs(inputs.root / human)] if human else []
    found = {domain: inputs.queries(domain) for domain in arena["domains"]}
    if all(queries is not None for queries in found.values()):
        queries = [q for domain in arena["domains"] for q in found[domain]]
        pairs += [(p["query"], p["answer_a"], p["answer_b"])
                  for p in build_controls(queries, controls, per_domain, config["seed"])]
        calls, tokens = _pair_calls(pairs, orders, False)
        return calls, tokens, calls * out, "data"
    calls, tokens = _pair_calls(pairs, orders, False)
    for domain in arena["domains"]:  # declared: per control and domain, per_domain pairs of references
        n = min(per_domain, inputs.declared_count("rag", domain, "queries"))
        ref = "r" * inputs.declared_count("rag", domain, "reference_chars")
        query = "q" * inputs.declared_count("rag", domain, "query_chars")
        for control in controls:
            other = "I couldn't find an answer." if control == "no_answer" else ref
            both = 1 if control == "self" else orders  # the two orders of a reference vs itself: one request
            calls += n * both
            tokens += n * both * chat_tokens(pair_request(query, ref, other))
    return calls, tokens, calls * out, "declared"


@dataclass
class _Query:
    id: str
    domain: str
    question: str
    reference: str


class _NoFormula(Exception):
    """A stage (or a mode of it) the plan cannot count."""


PLANNERS = {
    "drfr_responses": _drfr_responses,
    "drfr_judge": _drfr_judge,
    "rag_answers": _rag_answers,
    "arena_judge": _arena_judge,
    "arena_judge_checks": _arena_judge_checks,
}


# ----------------------------------------------------------------------------- the plan


def dollars(entry: Mapping[str, Any], input_tokens: int, output_tokens: int) -> float | None:
    price = entry.get("price")
    if not price:
        return None
    return (input_tokens * price["input_per_million"] + output_tokens * price["output_per_million"]) / 1e6


def plan(config: Mapping[str, Any], root: str | Path = ".") -> list[JobSpend]:
    """One :class:`JobSpend` per (job, API model) of the grid, in the grid's order."""
    api = api_models(config)
    inputs = Inputs(config, root)
    rows = []
    for job in grid.jobs(config):
        for ref in job.models:
            if ref.name not in api:
                continue
            planner = PLANNERS.get(job.rule)
            row = JobSpend(job.label, job.rule, ref.name, None, basis="none", note="no call formula for the stage yet")
            if planner is not None:
                try:
                    calls, n_in, n_out, basis = planner(job, inputs, config)
                except (_NoFormula, KeyError) as err:  # KeyError: a size spend.items does not declare
                    row.note = str(err.args[0]) if err.args else type(err).__name__
                    rows.append(row)
                    continue
                cached = _cached_calls(Path(root) / (job.output + ".calls.sqlite"))
                row = JobSpend(job.label, job.rule, ref.name, calls, min(cached, calls), n_in, n_out,
                               dollars(config["models"][ref.name], n_in, n_out), basis)
            rows.append(row)
    return rows


def totals(rows: Sequence[JobSpend], key: str) -> dict[str, dict[str, Any]]:
    """Calls, tokens and dollars left, summed by ``key`` (``rule`` or ``model``)."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row.calls is None:
            continue
        t = out.setdefault(getattr(row, key), {"calls": 0, "input_tokens": 0, "output_tokens": 0, "dollars": 0.0})
        t["calls"] += row.left
        t["input_tokens"] += row.left_input_tokens
        t["output_tokens"] += row.left_output_tokens
        t["dollars"] = None if t["dollars"] is None or row.dollars is None else t["dollars"] + row.left_dollars
    return out


def gpu_by_stage(config: Mapping[str, Any]) -> dict[str, int]:
    """GPUs the GPU plan gives each model stage's jobs, summed (no gpu_plan section: empty)."""
    if config.get("gpu_plan") is None:
        return {}
    from isqaflow.models.gpu_plan import plan_grid

    out: dict[str, int] = {}
    for label, job_plan in plan_grid(config).items():
        if job_plan.gpus:
            rule = label.split(" ", 1)[0]
            out[rule] = out.get(rule, 0) + job_plan.gpus
    return out


def table(config: Mapping[str, Any], rows: Sequence[JobSpend]) -> str:
    """The plan as printed by a dry run: per stage and per model, then the unplanned jobs."""
    gpus = gpu_by_stage(config)

    def money(value: float | None) -> str:
        return "no price" if value is None else f"${value:,.2f}"

    lines = [f"calls left, prompt tokens ({TOKEN_ESTIMATE} estimate), completion tokens (bound: max_new_tokens), "
             "dollars (models.<name>.price)"]
    by_rule = totals(rows, "rule")
    unplanned: dict[str, int] = {}
    for row in rows:
        if row.calls is None:
            unplanned[row.rule] = unplanned.get(row.rule, 0) + 1
    for rule in sorted(set(by_rule) | set(gpus) | set(unplanned)):
        t = by_rule.get(rule)
        api = (f"{t['calls']:,} calls, {t['input_tokens']:,} in, {t['output_tokens']:,} out, {money(t['dollars'])}"
               if t else "no API calls")
        if rule in unplanned:
            api = f"{unplanned[rule]} API job(s) not planned" + ("" if not t else f"; {api}")
        lines.append(f"  stage {rule}: {api}; GPUs (GPU plan): {gpus.get(rule, 0)}")
    for model, t in sorted(totals(rows, "model").items()):
        lines.append(f"  model {model}: {t['calls']:,} calls, {t['input_tokens']:,} in, {t['output_tokens']:,} out, "
                     f"{money(t['dollars'])}")
    total = [r.left_dollars for r in rows if r.calls is not None]
    lines.append(f"  total: {sum(r.left for r in rows if r.calls is not None):,} calls, "
                 f"{money(None if None in total else sum(total))}")
    cached = sum(r.cached for r in rows if r.calls is not None)
    if cached:
        lines.append(f"  already in the call caches: {cached:,} calls (not planned again)")
    notes: dict[str, list[str]] = {}
    for row in rows:
        if row.calls is None:
            notes.setdefault(row.note, []).append(row.rule)
    for note, rules in sorted(notes.items()):
        counts = {rule: rules.count(rule) for rule in dict.fromkeys(rules)}
        lines.append(f"  not planned, in no total ({note}): "
                     + ", ".join(f"{rule} ({n} jobs)" for rule, n in counts.items()))
    return "\n".join(lines)


def declared_basis(rows: Sequence[JobSpend]) -> list[str]:
    return [r.job for r in rows if r.basis == "declared"]


__all__ = ["JobSpend", "api_models", "chat_tokens", "dollars", "gpu_by_stage", "plan", "table", "totals"]


# ----------------------------------------------------------------------------- the budget


def over_budget(config: Mapping[str, Any], rows: Sequence[JobSpend], spent: Mapping[str, float] | None = None
                ) -> list[str]:
    """Problems of a plan against ``budget:`` (empty: within it, or no budget).

    What is left of the plan plus what the ledger says was spent (``spent``: dollars per
    rule, :func:`isqaflow.models.budget.spent`) must stay within ``budget.dollars`` and each
    ``budget.stages.<rule>``; each problem names the stage(s) and the figures.
    """
    budget = config.get("budget") or {}
    if not budget:
        return []
    spent = dict(spent or {})
    by_rule = totals(rows, "rule")
    problems = []
    unpriced = sorted({r.model for r in rows if r.calls is not None and r.dollars is None})
    if unpriced:
        problems.append(f"budget: the plan cannot price {', '.join(unpriced)} (models.<name>.price is not set)")
    planned = {rule: (t["dollars"] or 0.0) + spent.get(rule, 0.0) for rule, t in by_rule.items()}
    for rule, limit in sorted((budget.get("stages") or {}).items()):
        if planned.get(rule, spent.get(rule, 0.0)) > limit:
            problems.append(f"budget.stages.{rule}: the stage plans ${planned[rule]:,.2f} (spent "
                            f"${spent.get(rule, 0.0):,.2f} + left ${planned[rule] - spent.get(rule, 0.0):,.2f}) "
                            f"above its ${limit:,.2f}")
    total = sum(planned.values()) + sum(v for k, v in spent.items() if k not in planned)
    if "dollars" in budget and total > budget["dollars"]:
        biggest = sorted(planned.items(), key=lambda kv: -kv[1])
        problems.append(f"budget.dollars: the plan is ${total:,.2f} above the budget of ${budget['dollars']:,.2f}; "
                        "by stage: " + ", ".join(f"{rule} ${value:,.2f}" for rule, value in biggest))
    unplanned = sorted({r.rule for r in rows if r.calls is None})
    if problems and unplanned:
        problems.append(f"(not planned, not counted above: {', '.join(unplanned)})")
    return problems


def dry_run_text(config: Mapping[str, Any], ledger: str | Path, root: str | Path = ".") -> str | None:
    """What a dry run prints: the plan and what the budget check of a real run would say
    (None for a config without API models)."""
    from isqaflow.models.budget import spent

    if not api_models(config):
        return None
    rows = plan(config, root)
    problems = over_budget(config, rows, spent(ledger))
    verdict = "\n  ".join(problems) if problems else "within it (or no budget: set)"
    return f"Spend plan (isqaflow.spend):\n{table(config, rows)}\nBudget: {verdict}"


def start_problems(config: Mapping[str, Any], ledger: str | Path, root: str | Path = ".") -> list[str]:
    """The budget check at the start of a run: problems of the plan against ``budget:``."""
    from isqaflow.models.budget import spent

    if not config.get("budget"):
        return []
    return over_budget(config, plan(config, root), spent(ledger))
