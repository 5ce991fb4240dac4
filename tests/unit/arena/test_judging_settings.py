"""The arena's and the DRFR summaries' settings objects (issue 27): each built once from its rule's
params and wildcards (``from_rule``), reading exactly params the rule defines."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from isqaflow.arena.answers import AnswersJob
from isqaflow.arena.judging.battles import ArenaJudgeJob
from isqaflow.arena.judging.controls import JudgeChecksJob
from isqaflow.arena.judging.settings import ArenaJudge
from isqaflow.arena.judging.summaries import SummaryArenaJob
from isqaflow.arena.tables import ArenaTablesSettings
from isqaflow.drfr.summaries import SummaryJudgeJob
from isqaflow.models.base import GenerationParams

REPO = Path(__file__).resolve().parents[3]


def rule_params(rule_file: str, rule: str) -> set[str]:
    """The names in a rule's ``params:`` block, read from the rule file."""
    block = re.split(r"^rule ", (REPO / rule_file).read_text(), flags=re.MULTILINE)
    body = next(b for b in block if b.startswith(f"{rule}:"))
    params = re.search(r"\n    params:\n((?:        .*\n|\s*\n)+)", body).group(1)
    return set(re.findall(r"^        (\w+)=", params, flags=re.MULTILINE))


JUDGE = {
    "model": {"backend": "api", "model": "gpt"},
    "mode": "logprob",
    "generation": {"max_new_tokens": 64},
    "orders": "both",
    "verdict_rule": {"rule": "calibrated", "tie_band": 0.25},
    "seed": 7,
}


def params_of(rule_file: str, rule: str, **own) -> SimpleNamespace:
    """The rule's params as Snakemake passes them: every name the rule defines (code included)."""
    values = {**JUDGE, **own, "code": "sha"}
    names = rule_params(rule_file, rule)
    assert names == set(values), f"{rule}: params {sorted(names)}"
    return SimpleNamespace(**values)


def expected_judge() -> ArenaJudge:
    return ArenaJudge(
        name="gpt4",
        spec=JUDGE["model"],
        mode="logprob",
        orders="both",
        seed=7,
        generation=JUDGE["generation"],
        rule="calibrated",
        tie_band=0.25,
    )


def test_arena_judge_job_from_rule():
    params = params_of("rules/arena/arena.smk", "arena_judge", all_pairs=10, repeats=3)
    job = ArenaJudgeJob.from_rule(params, SimpleNamespace(judge="gpt4", retriever="bm25", k="5"))
    assert job == ArenaJudgeJob(expected_judge(), all_pairs_per_domain=10, repeats=3)
    assert job.judge.judge_kwargs() == {
        "judge_spec": JUDGE["model"],
        "judge_name": "gpt4",
        "mode": "logprob",
        "orders": "both",
        "seed": 7,
        "generation": JUDGE["generation"],
        "rule": "calibrated",
        "tie_band": 0.25,
    }
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.repeats = 1  # type: ignore[misc]


def test_judge_checks_job_from_rule():
    params = params_of(
        "rules/arena/arena.smk", "arena_judge_checks", controls=["swap", "no_answer"], per_domain=4
    )
    job = JudgeChecksJob.from_rule(params, SimpleNamespace(judge="gpt4"))
    assert job == JudgeChecksJob(expected_judge(), controls=("swap", "no_answer"), per_domain=4)


def test_summary_arena_job_from_rule():
    params = params_of(
        "rules/arena/arena.smk",
        "arena_summaries",
        systems=["baseline_1", "isqa-x-y"],
        baseline="baseline_1",
    )
    job = SummaryArenaJob.from_rule(
        params, SimpleNamespace(judge="gpt4", dataset="qasper", summarizer="s")
    )
    assert job == SummaryArenaJob(
        expected_judge(), systems=("baseline_1", "isqa-x-y"), baseline="baseline_1"
    )


def test_drfr_summary_judge_job_from_rule():
    values = {
        "systems": ["baseline_1"],
        "model": {"backend": "fake"},
        "mode": "logprob",
        "rule": "raw",
        "generation": {"max_new_tokens": 8},
        "code": "sha",
    }
    assert rule_params("rules/drfr/drfr.smk", "drfr_summaries") == set(values)
    job = SummaryJudgeJob.from_rule(
        SimpleNamespace(**values), SimpleNamespace(judge="local", dataset="qasper")
    )
    assert job == SummaryJudgeJob(
        judge_name="local",
        judge_spec={"backend": "fake"},
        mode="logprob",
        rule="raw",
        generation=GenerationParams(max_new_tokens=8),
        systems=("baseline_1",),
    )
    no_decoding = SummaryJudgeJob.from_rule(
        SimpleNamespace(**{**values, "generation": None}), SimpleNamespace(judge="local")
    )
    assert no_decoding.generation is None


def test_arena_tables_settings_from_rule():
    values = {
        "elo": {"k": 4.0, "base": 10.0, "scale": 400.0, "initial": 1000.0},
        "rounds": 200,
        "seed": 3,
        "failed_judgments": "tie",
        "human_sample": "random",
        "length_control": {"glm": "length_controlled_v1", "gamed": ["g"], "difficulty": None},
    }
    params = SimpleNamespace(judged={}, recall={}, **values, code="sha")
    assert rule_params("rules/arena/arena.smk", "arena_tables") == set(vars(params))
    settings = ArenaTablesSettings.from_rule(params, SimpleNamespace())
    assert settings == ArenaTablesSettings(**values)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.seed = 4  # type: ignore[misc]


def test_answers_job_from_rule():
    values = {
        "model": {"backend": "hf", "model": "m"},
        "adapter": None,
        "cot": True,
        "generation": {"max_new_tokens": 16},
        "code": "sha",
    }
    assert rule_params("rules/arena/arena.smk", "rag_answers") == set(values)
    job = AnswersJob.from_rule(
        SimpleNamespace(**values), SimpleNamespace(answerer="a", retriever="bm25", k="5")
    )
    assert job == AnswersJob(
        answerer="a",
        model_spec={"backend": "hf", "model": "m"},
        adapter=None,
        cot=True,
        retriever="bm25",
        k=5,
        generation=GenerationParams(max_new_tokens=16),
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.k = 2  # type: ignore[misc]
