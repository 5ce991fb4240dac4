"""The jobs a config makes in the model stages -- the single source of which jobs there are.

The rules' input functions and targets (``rules/common.smk``: ``isqa_runs``, ``isqa_pairs``;
``rules/arena/inputs/arena.smk``: ``arena_runs``; the judged file-based summaries of
``rules/inputs/systems.smk``), the GPU plan (:mod:`isqaflow.models.planning.gpu_plan`, one plan per
:class:`Job`) and the serving check all read this module, so a config cannot make one set of
jobs in Snakemake's DAG and plan or check another.  ``tests/workflow/test_grid.py`` builds the DAG of
several configs and asserts that its model-stage jobs are exactly :func:`jobs`.

A model stage is a rule whose job holds a model: ISQA's summaries and refinement, the DRFR
responses and judges, the RAG answers and the arena judges.  Each job names its rule, its
wildcards (as the rule's output has them), the models it holds (:class:`ModelRef`: the role,
the ``models`` key, the adapter, the config path of the generation settings it decodes with)
and its first output path.  The model rules -- their output patterns and log labels -- are
declared by the suites' descriptors (:mod:`isqaflow.suites`); this module lists each registered
suite's jobs by the job lister its descriptor names (``jobs``: ISQA's, DRFR's and the arena's
are here, a newer suite's in a module of its own), suite by suite in the registry's order.

Pure: the config is the validated workflow config (a mapping); nothing is read or written.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from isqaflow.settings import reads_file
from isqaflow.suites import SUITES, Suite, model_rules
from isqaflow.suites.base import resolve_function

# rule -> (its first output, the job's label: the wildcard part of its log path), from the
# suites' descriptors (isqaflow.suites), in their order
PATTERNS = {rule.name: (rule.output, rule.label) for rule in model_rules().values()}
MODEL_RULES = tuple(PATTERNS)


@dataclass(frozen=True)
class ModelRef:
    """One model a job holds: its role, its ``models`` key, the adapter it runs with, and the
    config path of the generation settings it decodes with (None: the stage's defaults)."""

    role: str
    name: str
    generation: str | None = None
    adapter: str | None = None


@dataclass(frozen=True)
class Job:
    """One job of a model stage: rule, wildcards (in the output's order), models, first output."""

    rule: str
    wildcards: tuple[tuple[str, str], ...]
    models: tuple[ModelRef, ...]
    output: str

    @property
    def label(self) -> str:
        """``<rule> <wildcards as in its log path>``, e.g.
        ``isqa_refine qasper/vicuna-7b/lora-human``."""
        return f"{self.rule} {PATTERNS[self.rule][1].format(**dict(self.wildcards))}"

    def wildcard(self, name: str) -> str:
        return dict(self.wildcards)[name]


def setting(config: Mapping[str, Any], path: str | None) -> Mapping[str, Any] | None:
    """The mapping at a dotted config path (``isqa.summary_generation``), None where absent."""
    if path is None:
        return None
    value: Any = config
    for key in path.split("."):
        value = (value or {}).get(key)
    return value


def make_job(rule: str, models: list[ModelRef], **wildcards: Any) -> Job:
    """The job of a model rule with these wildcards (in its output's order) and models: its first
    output from the rule's pattern.  Every suite's job lister makes its jobs with it."""
    values = {key: str(value) for key, value in wildcards.items()}
    return Job(rule, tuple(values.items()), tuple(models), PATTERNS[rule][0].format(**values))


# ----------------------------------------------------------------------------- the config's runs


def isqa_pairs(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(dataset, summarizer) pairs with summaries: isqa.datasets x isqa.summarizers."""
    isqa = config.get("isqa") or {}
    return [(d, s) for d in isqa.get("datasets", []) for s in isqa.get("summarizers", [])]


def isqa_runs(config: Mapping[str, Any]) -> Iterator[tuple[str, str, str, str]]:
    """(dataset, summarizer, feedback, questions) of every ISQA run (a run's own datasets and
    summarizers narrow it; without them it covers every pair)."""
    isqa = config.get("isqa") or {}
    for run in isqa.get("runs", []):
        for dataset in run.get("datasets", isqa.get("datasets", [])):
            for summarizer in run.get("summarizers", isqa.get("summarizers", [])):
                yield dataset, summarizer, run["feedback"], run["questions"]


def file_summary_pairs(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(dataset, system) of every file-based summaries system (isqa.file_summaries)."""
    entries = (config.get("isqa") or {}).get("file_summaries") or {}
    return [(entry["dataset"], name) for name, entry in entries.items()]


def judged_file_summary_pairs(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The file-based summaries the DRFR and arena judges see: those in isqa.judged_systems
    (every one when judged_systems is not set; none when it is ``[]``)."""
    wanted = (config.get("isqa") or {}).get("judged_systems")
    return [(d, s) for d, s in file_summary_pairs(config) if wanted is None or s in wanted]


def file_summary_path(dataset: str, system: str) -> str:
    """Where a file-based summaries system's checked summaries are written (rule file_summaries)."""
    return f"results/summaries/{dataset}/{system}/file.jsonl"


def summary_files(config: Mapping[str, Any], dataset: str, summarizer: str) -> list[str]:
    """Every summaries file of a (dataset, summarizer): baselines, generic feedback, ISQA runs;
    a file-based summarizer's one file."""
    if summarizer in ((config.get("isqa") or {}).get("file_summaries") or {}):
        return [file_summary_path(dataset, summarizer)]
    root = f"results/summaries/{dataset}/{summarizer}"
    files = [f"{root}/baseline.jsonl", f"{root}/generic.jsonl"]
    files += [
        f"{root}/isqa-{f}-{q}.jsonl"
        for d, s, f, q in isqa_runs(config)
        if (d, s) == (dataset, summarizer)
    ]
    return files


def judged_summary_systems(config: Mapping[str, Any], dataset: str, summarizer: str) -> list[str]:
    """The final summaries the DRFR and arena judges see of a (dataset, summarizer):
    isqa.judged_systems, or by default the initial prompt (without ISQA), generic feedback and
    every ISQA run; a file-based summarizer: its one system (judged when in judged_systems,
    see :func:`judged_file_summary_pairs`)."""
    isqa = config.get("isqa") or {}
    files = set(isqa.get("file_summaries") or {})
    if summarizer in files:
        return [summarizer]
    if isqa.get("judged_systems"):
        return [s for s in isqa["judged_systems"] if s not in files]
    systems = [isqa["refine"]["initial_prompt"], "generic"]
    systems += [
        f"isqa-{f}-{q}" for d, s, f, q in isqa_runs(config) if (d, s) == (dataset, summarizer)
    ]
    return systems


def arena_runs(config: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Retrieval settings answers are generated from, with their answerers (a run without
    ``answerers`` has every one; ``answerers: []`` has none)."""
    arena = config.get("arena") or {}
    for run in arena.get("runs", []):
        yield {
            "retriever": run["retriever"],
            "k": run["k"],
            "answerers": run.get("answerers", list(arena.get("answerers", {}))),
            "all_pairs_per_domain": run.get("all_pairs_per_domain", 0),
        }


def arena_checks_run(config: Mapping[str, Any]) -> bool:
    """Whether each arena judge has an arena_judge_checks job: it writes the known-answer
    controls (validity.arena runs controls per domain) and judges the human-labelled pairs."""
    arena_validity = (config.get("validity") or {}).get("arena") or {}
    human = ((config.get("datasets") or {}).get("rag") or {}).get("human_labels")
    return bool(arena_validity.get("controls") and arena_validity.get("per_domain")) or bool(human)


# ----------------------------------------------------------------------------- the jobs


def isqa_jobs(config: Mapping[str, Any]) -> list[Job]:
    isqa = config.get("isqa") or {}
    runs = list(isqa_runs(config))
    jobs = []
    for dataset, summarizer in isqa_pairs(config):
        summary = ModelRef("summarizer", summarizer, "isqa.summary_generation")
        jobs.append(
            make_job("baseline_summaries", [summary], dataset=dataset, summarizer=summarizer)
        )
        jobs.append(make_job("generic_feedback", [summary], dataset=dataset, summarizer=summarizer))
        for d, s, feedback, questions in runs:
            if (d, s) != (dataset, summarizer):
                continue
            entry = isqa["feedback_models"][feedback]
            models = [
                summary,
                ModelRef(
                    "feedback", entry["model"], "isqa.feedback_generation", entry.get("adapter")
                ),
            ]
            jobs.append(
                make_job(
                    "isqa_refine",
                    models,
                    dataset=dataset,
                    summarizer=summarizer,
                    feedback=feedback,
                    questions=questions,
                )
            )
    return jobs


def drfr_jobs(config: Mapping[str, Any]) -> list[Job]:
    drfr = config.get("drfr") or {}
    judges = drfr.get("judges") or {}
    jobs = []
    for dataset in drfr.get("datasets", []):
        for responder, entry in (drfr.get("responders") or {}).items():
            if reads_file(entry):  # rule file_responses: no model
                continue
            model = ModelRef("responder", entry["model"], "drfr.generation", entry.get("adapter"))
            jobs.append(make_job("drfr_responses", [model], dataset=dataset, responder=responder))
    for dataset in drfr.get("datasets", []):
        for judge, entry in judges.items():
            jobs.append(
                make_job(
                    "drfr_judge", [ModelRef("judge", entry["model"])], dataset=dataset, judge=judge
                )
            )
    return jobs + _summary_judge_jobs("drfr_summaries", judges, config)


def _summary_judge_jobs(
    rule: str, judges: Mapping[str, Any], config: Mapping[str, Any]
) -> list[Job]:
    """The jobs of a suite's judges over the judged ISQA summaries (``drfr_summaries``,
    ``arena_summaries``): one per (dataset, summarizer, judge); none when
    ``isqa.judged_systems`` is ``[]`` (the judges see no summaries: judging one's own RAG system
    or responder only, docs/own-systems.md), as the judge-family audit reads it
    (isqaflow.configcheck.families)."""
    if (config.get("isqa") or {}).get("judged_systems") == []:
        return []
    return [
        make_job(
            rule,
            [ModelRef("judge", entry["model"])],
            dataset=dataset,
            summarizer=summarizer,
            judge=judge,
        )
        for dataset, summarizer in isqa_pairs(config) + judged_file_summary_pairs(config)
        for judge, entry in judges.items()
    ]


def arena_jobs(config: Mapping[str, Any]) -> list[Job]:
    arena = config.get("arena") or {}
    judges = arena.get("judges") or {}
    answerers = arena.get("answerers") or {}
    runs = list(arena_runs(config))
    jobs = []
    for run in runs:
        for answerer in run["answerers"]:
            entry = answerers[answerer]
            if reads_file(entry):  # rule file_answers: no model
                continue
            model = ModelRef("answerer", entry["model"], "arena.generation", entry.get("adapter"))
            jobs.append(
                make_job(
                    "rag_answers",
                    [model],
                    retriever=run["retriever"],
                    k=run["k"],
                    answerer=answerer,
                )
            )
    for run in runs:
        for judge, entry in judges.items():
            jobs.append(
                make_job(
                    "arena_judge",
                    [ModelRef("judge", entry["model"])],
                    retriever=run["retriever"],
                    k=run["k"],
                    judge=judge,
                )
            )
    if arena_checks_run(config):
        for judge, entry in judges.items():
            jobs.append(
                make_job("arena_judge_checks", [ModelRef("judge", entry["model"])], judge=judge)
            )
    return jobs + _summary_judge_jobs("arena_summaries", judges, config)


def suite_jobs(entry: Suite, config: Mapping[str, Any]) -> list[Job]:
    """The model jobs of one registered suite, by the job lister its descriptor names (``jobs``);
    a KeyError for a suite with model rules that names none, an ImportError for one that does
    not resolve, a ValueError for a job of a rule the suite does not declare."""
    if not entry.jobs:
        if not entry.rules:
            return []
        raise KeyError(
            f"suite {entry.name!r} declares model rules ({', '.join(r.name for r in entry.rules)}) "
            f"but names no function listing its jobs (isqaflow.suites.{entry.name}: jobs)"
        )
    made = resolve_function(entry.name, "jobs", entry.jobs)(config)
    own = {rule.name for rule in entry.rules}
    stray = sorted({job.rule for job in made} - own)
    if stray:
        raise ValueError(
            f"{entry.jobs} makes jobs of rules {stray}, "
            f"which suite {entry.name!r} does not declare (isqaflow.suites.{entry.name})"
        )
    return made


def jobs(config: Mapping[str, Any]) -> list[Job]:
    """Every job of the model stages the config makes, suite by suite in the registry's order
    (ISQA, DRFR, arena: isqaflow.suites.SUITES)."""
    return [job for entry in SUITES for job in suite_jobs(entry, config)]


def find(listed: Iterable[Job], rule: str, wildcards: Mapping[str, Any]) -> Job:
    """The job of ``rule`` with these wildcards among ``listed`` (:func:`jobs` of a config, or
    those of one rule); a KeyError naming them when there is none."""
    wanted = {key: str(value) for key, value in dict(wildcards).items()}
    for job in listed:
        if job.rule == rule and dict(job.wildcards) == wanted:
            return job
    raise KeyError(f"the config makes no {rule} job with wildcards {wanted}")
