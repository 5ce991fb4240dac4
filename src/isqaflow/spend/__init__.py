"""The spend plan: what the config's API jobs will cost, at DAG build, before any job runs.

For every job of the model stages (:mod:`isqaflow.grid`) that holds an API model (backend
``openai`` without ``serve:``) the plan counts its calls, its prompt tokens, a bound on its
completion tokens and its dollars (the model's ``price`` in the config):

* **calls** -- items x orders x turns, from the stage's own inputs where they exist at DAG
  build (the converted datasets, the responses and answers of earlier stages), read with
  the stage's own code (the DRFR controls' sample, the arena's pair lists); where they do
  not yet exist, from the dataset sizes declared under ``spend.items`` (basis
  ``declared``), and upstream outputs (responses, answers) taken at their length bound.
* **prompt tokens** -- the stage's own request builders applied to those texts, counted with
  the model's own encoding where :mod:`isqaflow.spend.tokens` has it offline (OpenAI's
  cl100k/o200k through the optional ``bpe-openai``; ``tokenizer`` names it), else as
  characters / :data:`CHARS_PER_TOKEN` plus :data:`MESSAGE_TOKENS` per chat message: the
  fallback, an **estimate**, named ``chars/4 (fallback)`` in the output.  Texts not known yet
  (declared sizes, outputs at their length bound) count as characters / 4 either way.
* **completion tokens** -- calls x ``max_new_tokens`` of the stage's decoding: a bound.
* **the call cache** -- rows already in the job's call cache (``<output>.calls.sqlite``)
  are subtracted (``cached``): a resumed run plans only what is left.

Jobs the plan has no call formula for (an API summarizer, a log-probability judge through an
API, a size neither converted nor declared) are listed with ``calls = None`` and counted in no
total; the budget check names them.  Identical requests are one call (the call cache makes
them one) where the texts are known.  ISQA's refinement (:mod:`isqaflow.spend.summaries`) is a
bound: steps x batch per paper.

Top floor of the import contract: it reads the stages' request builders.  The call formulas,
one per stage, are in :mod:`isqaflow.spend.stages`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from isqaflow import grid
from isqaflow.backends import is_priced
from isqaflow.spend.stages import (  # the estimate's constants, re-exported
    CHARS_PER_TOKEN,
    MESSAGE_TOKENS,
    Inputs,
    NoFormula,
    chat_tokens,
)
from isqaflow.spend.tokens import FALLBACK, counter_for
from isqaflow.suites import SUITES, Suite
from isqaflow.suites.base import resolve


def suite_planners(suites: Sequence[Suite] = SUITES) -> dict[str, Any]:
    """rule -> its call formula: from the mappings each suite's descriptor names
    (``spend_planners``), the suite's own rules' (one module may hold several suites'
    formulas, as :mod:`isqaflow.spend.stages`).  A mapping that plans none of the suite's rules
    is an error naming the suite: a misspelt reference would leave its stages unplanned."""
    planners: dict[str, Any] = {}
    for entry in suites:
        own = {rule.name for rule in entry.rules}
        for reference in entry.spend_planners:
            mapping = resolve(entry.name, "spend_planners", reference, within="isqaflow.spend.")
            mine = {rule: formula for rule, formula in mapping.items() if rule in own}
            if not mine:
                raise ValueError(
                    f"isqaflow.suites.{entry.name}: spend_planners names {reference!r}, which "
                    f"plans none of its rules ({', '.join(sorted(own)) or 'none'})"
                )
            planners.update(mine)
    return planners


PLANNERS = suite_planners()  # rule -> its call formula


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
    tokenizer: str = FALLBACK  # what counted the prompt tokens (isqaflow.spend.tokens)

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
    return {name for name, entry in (config.get("models") or {}).items() if is_priced(entry, name)}


def _cached_calls(path: Path) -> int:
    """Rows in a job's call cache (0 when it has none), read without changing a byte beside it:
    ``mode=ro`` alone still creates the WAL database's ``-wal`` and ``-shm`` files and, unable
    to checkpoint, leaves them (a dry run must change no file), so a cache closed cleanly (no
    ``-wal`` beside it) is opened ``immutable`` -- no locks, no shared memory; one a job is
    writing now (its ``-wal`` there) read only, through the files the job keeps anyway."""
    if not path.exists():
        return 0
    live = path.with_name(path.name + "-wal").exists()
    conn = sqlite3.connect(
        f"{path.resolve().as_uri()}?{'mode=ro' if live else 'immutable=1'}", uri=True
    )
    try:
        return int(conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0])
    except sqlite3.DatabaseError:
        return 0
    finally:
        conn.close()


# ----------------------------------------------------------------------------- the plan


def dollars(entry: Mapping[str, Any], input_tokens: int, output_tokens: int) -> float | None:
    """The cost of the tokens at the model's price (its batch price for a model with ``batch:``,
    where the price has one)."""
    price = entry.get("price")
    if not price:
        return None
    kind = "batch_" if entry.get("batch") and "batch_input_per_million" in price else ""
    return (
        input_tokens * price[f"{kind}input_per_million"]
        + output_tokens * price[f"{kind}output_per_million"]
    ) / 1e6


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
            row = JobSpend(
                job.label,
                job.rule,
                ref.name,
                None,
                basis="none",
                note="no call formula for the stage yet",
            )
            if planner is not None:
                count = counter_for(config["models"][ref.name])
                try:
                    calls, n_in, n_out, basis = planner(job, inputs.for_model(count), config, ref)
                except (
                    NoFormula,
                    KeyError,
                ) as err:  # KeyError: a size spend.items does not declare
                    row.note = str(err.args[0]) if err.args else type(err).__name__
                    rows.append(row)
                    continue
                cached = _cached_calls(Path(root) / (job.output + ".calls.sqlite"))
                row = JobSpend(
                    job.label,
                    job.rule,
                    ref.name,
                    calls,
                    min(cached, calls),
                    n_in,
                    n_out,
                    dollars(config["models"][ref.name], n_in, n_out),
                    basis,
                    tokenizer=count.name,
                )
            rows.append(row)
    return rows


def totals(rows: Sequence[JobSpend], key: str) -> dict[str, dict[str, Any]]:
    """Calls, tokens and dollars left, summed by ``key`` (``rule`` or ``model``)."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row.calls is None:
            continue
        t = out.setdefault(
            getattr(row, key), {"calls": 0, "input_tokens": 0, "output_tokens": 0, "dollars": 0.0}
        )
        t["calls"] += row.left
        t["input_tokens"] += row.left_input_tokens
        t["output_tokens"] += row.left_output_tokens
        t["dollars"] = (
            None if t["dollars"] is None or row.dollars is None else t["dollars"] + row.left_dollars
        )
    return out


def gpu_by_stage(config: Mapping[str, Any]) -> dict[str, int]:
    """GPUs the GPU plan gives each model stage's jobs, summed (no gpu_plan section: empty)."""
    if config.get("gpu_plan") is None:
        return {}
    from isqaflow.models.planning.gpu_plan import plan_grid

    out: dict[str, int] = {}
    for label, job_plan in plan_grid(config).items():
        if job_plan.gpus:
            rule = label.split(" ", 1)[0]
            out[rule] = out.get(rule, 0) + job_plan.gpus
    return out


def table(config: Mapping[str, Any], rows: Sequence[JobSpend]) -> str:
    """The plan as printed by a dry run: per stage (with its GPUs and estimated GPU hours) and per
    model, then the unplanned jobs."""
    from isqaflow.spend.gpu_hours import by_rule

    gpus = gpu_by_stage(config)
    try:
        hours, no_hours = by_rule(config), ""
    except KeyError as err:  # a size spend.items does not declare
        hours, no_hours = {}, f"  GPU hours not estimated: {err.args[0]} is not declared"

    def gpu_hours(rule: str) -> str:
        if rule not in hours:
            return f"GPUs (GPU plan): {gpus.get(rule, 0)}"
        n, low, high = hours[rule]
        return (
            f"GPUs: {gpus.get(rule, n)}, GPU hours (estimate, isqaflow.spend.gpu_hours): ~{low:,.1f}"
            + ("" if high == low else f"-{high:,.1f}")
        )

    def money(value: float | None) -> str:
        return "no price" if value is None else f"${value:,.2f}"

    lines = [
        (
            "calls left, prompt tokens (counted by each model's tokenizer, below), completion tokens "
            "(bound: max_new_tokens), dollars (models.<name>.price)"
        )
    ]
    by_rule = totals(rows, "rule")
    unplanned: dict[str, int] = {}
    for row in rows:
        if row.calls is None:
            unplanned[row.rule] = unplanned.get(row.rule, 0) + 1
    for rule in sorted(set(by_rule) | set(gpus) | set(hours) | set(unplanned)):
        t = by_rule.get(rule)
        api = (
            f"{t['calls']:,} calls, {t['input_tokens']:,} in, {t['output_tokens']:,} out, {money(t['dollars'])}"
            if t
            else "no API calls"
        )
        if rule in unplanned:
            api = f"{unplanned[rule]} API job(s) not planned" + ("" if not t else f"; {api}")
        lines.append(f"  stage {rule}: {api}; {gpu_hours(rule)}")
    tokenizers = {row.model: row.tokenizer for row in rows if row.calls is not None}
    for model, t in sorted(totals(rows, "model").items()):
        lines.append(
            f"  model {model}: {t['calls']:,} calls, {t['input_tokens']:,} in, {t['output_tokens']:,} out, "
            f"{money(t['dollars'])}; prompt tokens by {tokenizers[model]}"
        )
    total = [r.left_dollars for r in rows if r.calls is not None]
    hours_total = (
        ""
        if not hours
        else (
            f"; GPU hours (estimate): ~{sum(h[1] for h in hours.values()):,.0f}-"
            f"{sum(h[2] for h in hours.values()):,.0f}"
        )
    )
    lines.append(
        f"  total: {sum(r.left for r in rows if r.calls is not None):,} calls, "
        f"{money(None if None in total else sum(total))}{hours_total}"
    )
    if no_hours:
        lines.append(no_hours)
    cached = sum(r.cached for r in rows if r.calls is not None)
    if cached:
        lines.append(f"  already in the call caches: {cached:,} calls (not planned again)")
    notes: dict[str, list[str]] = {}
    for row in rows:
        if row.calls is None:
            notes.setdefault(row.note, []).append(row.rule)
    for note, rules in sorted(notes.items()):
        counts = {rule: rules.count(rule) for rule in dict.fromkeys(rules)}
        lines.append(
            f"  not planned, in no total ({note}): "
            + ", ".join(f"{rule} ({n} jobs)" for rule, n in counts.items())
        )
    return "\n".join(lines)


# ----------------------------------------------------------------------------- the budget


def _usd(value: float) -> str:
    return f"${value:,.2f}" if value >= 1 or value == 0 else f"${value:.4g}"


def over_budget(
    config: Mapping[str, Any], rows: Sequence[JobSpend], spent: Mapping[str, float] | None = None
) -> list[str]:
    """Problems of a plan against ``budget:`` (empty: within it, or no budget).

    What is left of the plan plus what the ledger says was spent (``spent``: dollars per
    rule, :func:`isqaflow.models.api.budget.spent`) must stay within ``budget.dollars`` and each
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
        problems.append(
            f"budget: the plan cannot price {', '.join(unpriced)} (models.<name>.price is not set)"
        )
    planned = {rule: (t["dollars"] or 0.0) + spent.get(rule, 0.0) for rule, t in by_rule.items()}
    for rule, limit in sorted((budget.get("stages") or {}).items()):
        if planned.get(rule, spent.get(rule, 0.0)) > limit:
            problems.append(
                f"budget.stages.{rule}: the stage plans ${planned[rule]:,.2f} (spent "
                f"${spent.get(rule, 0.0):,.2f} + left ${planned[rule] - spent.get(rule, 0.0):,.2f}), "
                f"above its {_usd(limit)}"
            )
    total = sum(planned.values()) + sum(v for k, v in spent.items() if k not in planned)
    if "dollars" in budget and total > budget["dollars"]:
        biggest = sorted(planned.items(), key=lambda kv: -kv[1])
        problems.append(
            f"budget.dollars: the plan is ${total:,.2f}, above the budget of {_usd(budget['dollars'])}; "
            "by stage: " + ", ".join(f"{rule} ${value:,.2f}" for rule, value in biggest)
        )
    unplanned = sorted({r.rule for r in rows if r.calls is None})
    if problems and unplanned:
        problems.append(f"(not planned, not counted above: {', '.join(unplanned)})")
    return problems


def dry_run_text(
    config: Mapping[str, Any], ledger: str | Path, root: str | Path = "."
) -> str | None:
    """What a dry run prints: the plan and what the budget check of a real run would say
    (None for a config without API models)."""
    from isqaflow.models.api.budget import spent

    if not api_models(config):
        return None
    rows = plan(config, root)
    verdict = budget_verdict(config, rows, spent(ledger))
    return f"Spend plan (isqaflow.spend):\n{table(config, rows)}\nBudget: {verdict}"


def budget_verdict(
    config: Mapping[str, Any], rows: Sequence[JobSpend], spent: Mapping[str, float] | None = None
) -> str:
    """The dry run's budget line, one of three readings: ``no budget set`` (the run is
    uncapped), ``within the budget of $X`` (with the plan's figure and, per stage, each stage's
    budget), or the problems of :func:`over_budget`."""
    budget = config.get("budget") or {}
    if not budget:
        return "no budget set (budget: in the config): the run's API calls are uncapped"
    problems = over_budget(config, rows, spent)
    if problems:
        return "\n  ".join(problems)
    spent = dict(spent or {})
    planned = sum(t["dollars"] or 0.0 for t in totals(rows, "rule").values()) + sum(spent.values())
    parts = []
    if "dollars" in budget:
        parts.append(f"within the budget of {_usd(budget['dollars'])} (plan {_usd(planned)})")
    stages = sorted((budget.get("stages") or {}).items())
    if stages:
        parts.append(
            "within the stages' budgets (" + ", ".join(f"{r} {_usd(v)}" for r, v in stages) + ")"
        )
    if "dollars" not in budget:
        parts.append("no budget for the whole run (budget.dollars)")
    return "; ".join(parts)


def start_problems(
    config: Mapping[str, Any], ledger: str | Path, root: str | Path = "."
) -> list[str]:
    """The budget check at the start of a run: problems of the plan against ``budget:``."""
    from isqaflow.models.api.budget import spent

    if not config.get("budget"):
        return []
    return over_budget(config, plan(config, root), spent(ledger))


__all__ = [
    "CHARS_PER_TOKEN",
    "FALLBACK",
    "MESSAGE_TOKENS",
    "JobSpend",
    "api_models",
    "budget_verdict",
    "chat_tokens",
    "dollars",
    "dry_run_text",
    "gpu_by_stage",
    "over_budget",
    "plan",
    "start_problems",
    "table",
    "totals",
]
