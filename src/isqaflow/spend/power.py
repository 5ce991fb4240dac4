"""The power section of the spend plan: what differences this config's n can detect, before any job.

Per suite and setting (a DRFR dataset, an arena run, an ISQA dataset) the dry run prints the
paired comparisons the run will make, the items each is paired on (n: decomposed questions,
queries, papers -- from the converted data where they exist at DAG build, else the sizes
declared under ``spend.items``), the minimum detectable effect (MDE) at that n
(:func:`isqaflow.power.mde`, at ``power.alpha`` and ``power.power``), and, where the config
names ``power.target_difference``, the n that difference needs with what that n would cost:
the suite's API dollars and GPU hours of this plan scaled by n_needed / n (the jobs' calls
grow with their items; a bound, not a quote).

The per-item sd of the paired differences is a previous run's where one is on disk
(results/tables/paired_tests.csv: the largest of the suite's pairs, from each pair's mde and
n -- the conservative choice), else the prior stated in ``power.prior_sd`` (config/schema.yaml
says where its defaults come from); every line names which.  ISQA's comparisons (per-paper
metric differences) are not in paired_tests, so they always use the prior.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from isqaflow import grid
from isqaflow.io import RecordError
from isqaflow.power import mde, n_for_difference, z_sum
from isqaflow.spend.stages import Inputs

__all__ = ["PREVIOUS_RUN", "PowerLine", "power_lines", "power_text", "suite_sizes"]

PREVIOUS_RUN = "results/tables/paired_tests.csv"
# the stages whose items grow with a suite's n (their dollars and GPU hours scale with it)
SUITE_RULES = {
    "drfr": ("drfr_responses", "drfr_judge"),
    "arena": ("rag_answers", "arena_judge"),
    "isqa": ("summarize", "generic_feedback", "isqa_refine"),
}
UNITS = {"drfr": "decomposed questions", "arena": "queries", "isqa": "papers"}


@dataclass(frozen=True)
class Size:
    suite: str
    setting: str
    systems: int
    comparisons: int  # paired comparisons the tables make (pairs of systems x judges; ISQA: runs)
    n: int | None  # paired items per comparison (None: not known at DAG build)
    basis: str  # data (converted), declared (spend.items), or why n is unknown


@dataclass(frozen=True)
class PowerLine:
    size: Size
    sd: float
    sd_basis: str
    mde: float
    target: float | None
    n_needed: int | None
    dollars: float | None  # the suite's API dollars at n_needed (None: no priced API stage)
    gpu_hours: tuple[float, float] | None  # the suite's GPU hours at n_needed (None: no GPU plan)


def _count(inputs: Inputs, kind: str, key: str) -> tuple[int | None, str]:
    """(n, basis) of one dataset or domain; (None, why) where it is neither converted nor declared."""
    try:
        return _count_or_raise(inputs, kind, key)
    except KeyError:
        section = {"drfr": "instructions", "arena": "rag", "isqa": "papers"}[kind]
        return None, f"{key} not converted yet and spend.items.{section}.{key} declares no size"
    except RecordError as err:
        # the power lines inform, they never stop a dry run: a converted file that cannot be
        # read (a job killed mid-write, a hand edit) leaves n unknown, naming the file's problem;
        # the job that reads it fails on it by name
        return None, f"{key}: its converted file cannot be read ({err})"


def _count_or_raise(inputs: Inputs, kind: str, key: str) -> tuple[int, str]:
    if kind == "drfr":
        instructions = inputs.instructions(key)
        if instructions is not None:
            return sum(len(i.requirements) for i in instructions), "data"
        return inputs.declared_count("instructions", key, "requirements"), "declared"
    if kind == "arena":
        queries = inputs.queries(key)
        if queries is not None:
            return len(queries), "data"
        return inputs.declared_count("rag", key, "queries"), "declared"
    papers = inputs.papers(key)
    if papers is not None:
        return len(papers), "data"
    return inputs.declared_count("papers", key, "papers"), "declared"


def suite_sizes(config: Mapping[str, Any], root: str | Path = ".") -> list[Size]:
    """The paired comparisons of the config, per suite and setting, with their n."""
    inputs = Inputs(config, root)
    sizes = []
    drfr = config.get("drfr") or {}
    for dataset in drfr.get("datasets", []):
        n, basis = _count(inputs, "drfr", dataset)
        systems = len(drfr.get("responders") or {})
        comparisons = len(drfr.get("judges") or {}) * math.comb(systems, 2)
        sizes.append(Size("drfr", dataset, systems, comparisons, n, basis))
    arena = config.get("arena") or {}
    for run in grid.arena_runs(config):
        counted = [_count(inputs, "arena", domain) for domain in arena.get("domains", [])]
        systems = len(run["answerers"])
        sizes.append(
            Size(
                "arena",
                f"{run['retriever']}-k{run['k']}",
                systems,
                len(arena.get("judges") or {}) * math.comb(systems, 2),
                None if any(n is None for n, _ in counted) else sum(n for n, _ in counted),
                _basis([b for _, b in counted]),
            )
        )
    runs: dict[str, set] = {}
    for dataset, summarizer, feedback, questions in grid.isqa_runs(config):
        runs.setdefault(dataset, set()).add((summarizer, feedback, questions))
    for dataset, found in runs.items():
        n, basis = _count(inputs, "isqa", dataset)
        # each ISQA run against its summarizer's baseline, on the same papers
        summarizers = {summarizer for summarizer, _, _ in found}
        sizes.append(Size("isqa", dataset, len(found) + len(summarizers), len(found), n, basis))
    return sizes


def _basis(bases: Sequence[str]) -> str:
    unknown = [b for b in bases if b not in ("data", "declared")]
    if unknown:
        return unknown[0]
    return "declared" if "declared" in bases else "data"


def _previous_sd(root: Path, suite: str) -> float | None:
    """The largest per-item sd of the suite's pairs in a previous run's paired tests."""
    path = root / PREVIOUS_RUN
    if not path.exists():
        return None
    sds = []
    with open(path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row.get("suite") != suite or not row.get("mde") or not row.get("n"):
                continue
            value, n = float(row["mde"]), int(float(row["n"]))
            if math.isfinite(value) and n > 0:
                sds.append(value * math.sqrt(n) / z_sum())
    return max(sds) if sds else None


def _suite_costs(
    config: Mapping[str, Any], root: Path
) -> dict[str, tuple[float | None, tuple[float, float] | None]]:
    """Per suite: this plan's API dollars and GPU hours (low, high) of its item-bound stages
    (None: no priced API stage / no GPU plan).  The spend plan once, for every suite."""
    from isqaflow.spend import plan
    from isqaflow.spend.gpu_hours import by_rule

    rows = [row for row in plan(config, root) if row.calls is not None]
    try:
        hours = by_rule(config)
    except KeyError:  # a size spend.items does not declare: no GPU hours to scale
        hours = {}
    out = {}
    for suite, rules in SUITE_RULES.items():
        priced = [row.dollars for row in rows if row.rule in rules and row.dollars is not None]
        suite_hours = [h for rule, h in hours.items() if rule in rules]
        out[suite] = (
            sum(priced) if priced else None,
            (sum(h[1] for h in suite_hours), sum(h[2] for h in suite_hours))
            if suite_hours
            else None,
        )
    return out


def power_lines(
    config: Mapping[str, Any], root: str | Path = ".", costs: bool = True
) -> list[PowerLine]:
    """One :class:`PowerLine` per suite and setting with at least two systems to compare."""
    settings = config["power"]
    alpha, power, target = settings["alpha"], settings["power"], settings["target_difference"]
    root = Path(root)
    lines = []
    suite_costs = None
    for size in suite_sizes(config, root):
        if size.comparisons < 1:
            continue
        previous = _previous_sd(root, size.suite) if size.suite != "isqa" else None
        if previous is not None:
            sd, sd_basis = previous, f"the largest of a previous run's pairs ({PREVIOUS_RUN})"
        else:
            sd, sd_basis = float(settings["prior_sd"][size.suite]), "prior (power.prior_sd)"
        needed = dollars = gpu = None
        if target is not None:
            needed = n_for_difference(target, sd, alpha, power)
            if costs and size.n:  # None (unknown) or 0: nothing to scale
                if suite_costs is None:  # the spend plan is costly (it counts every prompt): once
                    suite_costs = _suite_costs(config, root)
                dollars, gpu = suite_costs[size.suite]
                factor = needed / size.n
                dollars = None if dollars is None else factor * dollars
                gpu = None if gpu is None else (factor * gpu[0], factor * gpu[1])
        lines.append(
            PowerLine(
                size,
                sd,
                sd_basis,
                float("nan") if size.n is None else mde(sd, size.n, alpha, power),
                target,
                needed,
                dollars,
                gpu,
            )
        )
    return lines


def _points(value: float) -> str:
    return "--" if not math.isfinite(value) else f"{100 * value:.1f} points"


def power_text(config: Mapping[str, Any], lines: Sequence[PowerLine]) -> str:
    """The section as a dry run prints it."""
    settings = config["power"]
    head = (
        f"Power (isqaflow.spend.power): the smallest true difference each paired comparison "
        f"detects at {100 * settings['power']:.0f}% power and a two-sided "
        f"{100 * settings['alpha']:g}%"
    )
    if not lines:
        return head + "\n  no suite compares two or more systems"
    out = [
        head
        + (
            ":"
            if settings["target_difference"] is None
            else f"; and the n a difference of {_points(settings['target_difference'])} needs:"
        )
    ]
    for line in lines:
        size = line.size
        text = (
            f"  {size.suite} {size.setting}: {size.comparisons} paired comparisons "
            f"of {size.systems} systems, "
            + (
                f"n unknown ({size.basis})"
                if size.n is None
                else f"n = {size.n} {UNITS[size.suite]} ({size.basis}): MDE {_points(line.mde)}"
            )
            + f" (sd {line.sd:.2f}, {line.sd_basis})"
        )
        if line.n_needed is not None:
            cost = []
            if line.dollars is not None:
                cost.append(f"${line.dollars:,.2f} API")
            if line.gpu_hours is not None:
                low, high = line.gpu_hours
                cost.append(
                    f"{low:,.1f} GPU hours" if low == high else f"{low:,.1f}-{high:,.1f} GPU hours"
                )
            verdict = (
                "n of this run unknown"
                if size.n is None
                else "this n suffices"
                if line.n_needed <= size.n
                else "more items than this run has"
            )
            text += (
                f"; {_points(line.target)} needs n = {line.n_needed} ({verdict}"
                + (
                    f"; at that n: {', '.join(cost)}, the suite's stages in this plan scaled"
                    if cost
                    else ""
                )
                + ")"
            )
        out.append(text)
    return "\n".join(out)
