"""The suite registry (isqaflow.suites): one descriptor per suite, read by the grid, the run's
targets, the validity table's control files, the readable tables and the judge-family audit."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from isqaflow import grid, suites
from isqaflow.configcheck import families
from isqaflow.suites import SUITES, ModelRule, Suite
from isqaflow.suites.base import resolve

REPO = Path(__file__).resolve().parents[3]


def test_the_registry_lists_the_four_suites_in_the_grid_order():
    assert [s.name for s in SUITES] == ["isqa", "drfr", "arena", "arena_hard"]


def test_lookup_by_name_and_a_clear_error_for_an_unknown_name():
    assert suites.suite("drfr") is SUITES[1]
    with pytest.raises(KeyError, match=r"no suite 'dfrf' is registered.*isqa, drfr, arena"):
        suites.suite("dfrf")


def test_a_descriptor_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        SUITES[0].name = "other"  # type: ignore[misc]


def test_a_suite_or_a_rule_declared_twice_is_an_error():
    arena = suites.suite("arena")
    with pytest.raises(ValueError, match="suite arena is declared twice"):
        suites._check_unique((arena, arena))
    borrowed = dataclasses.replace(arena, name="other", rules=arena.rules[:1])
    with pytest.raises(ValueError, match="rule rag_answers is declared twice"):
        suites._check_unique((arena, borrowed))


def test_systems_and_judges_come_together():
    with pytest.raises(ValueError, match="give both systems and judges"):
        Suite("x", (), (), (), (), systems=("x", "systems"))


def test_a_suites_blocks_are_a_judges_or_a_settings():
    """What its tables call a block of verdicts (the peers' records are keyed by it:
    isqaflow.data.peers.records.table_key): the arena's settings, every other suite's judges."""
    assert {s.name: s.block for s in SUITES} == {
        "isqa": "judge",
        "drfr": "judge",
        "arena": "setting",
        "arena_hard": "judge",
    }
    with pytest.raises(ValueError, match="block 'run' is not judge or setting"):
        Suite("x", (), (), (), (), block="run")


def test_tables_are_named_and_filed_with_the_suite_prefix():
    drfr = suites.suite("drfr")
    assert drfr.table_names[0] == "drfr_table5"
    assert drfr.table_files[0] == "results/tables/drfr_table5.csv"


def test_the_grid_patterns_are_the_descriptors_rules():
    rules = [rule for s in SUITES for rule in s.rules]
    assert list(grid.PATTERNS) == [r.name for r in rules] == list(grid.MODEL_RULES)
    assert all(grid.PATTERNS[r.name] == (r.output, r.label) for r in rules)


def test_every_suite_with_model_rules_names_a_job_lister_that_resolves():
    for entry in SUITES:
        if entry.rules:
            assert callable(resolve(entry.name, "jobs", entry.jobs)), entry.name
    # Arena-Hard's in a module of its own, as a new suite's would be
    assert suites.suite("arena_hard").jobs == "isqaflow.arena_hard.jobs:arena_hard_jobs"


def test_a_registered_suite_without_a_job_lister_is_an_error():
    new = Suite(
        "new", (ModelRule("new_judge", "results/new/{judge}.jsonl", "{judge}"),), (), (), ()
    )
    with pytest.raises(KeyError, match="suite 'new' declares model rules \\(new_judge\\)"):
        grid.suite_jobs(new, {})
    assert grid.suite_jobs(dataclasses.replace(new, rules=()), {}) == []


def test_a_job_lister_that_does_not_resolve_is_an_error_naming_the_suite():
    misspelt = dataclasses.replace(suites.suite("drfr"), jobs="isqaflow.grid:dfrf_jobs")
    with pytest.raises(
        ImportError, match=r"isqaflow.suites.drfr: jobs names 'isqaflow.grid:dfrf_jobs'"
    ):
        grid.suite_jobs(misspelt, {})
    with pytest.raises(ValueError, match="jobs names 'dfrf_jobs', not a reference"):
        dataclasses.replace(suites.suite("drfr"), jobs="dfrf_jobs")


def test_a_job_lister_making_another_suites_jobs_is_an_error():
    borrowing = dataclasses.replace(suites.suite("drfr"), jobs=suites.suite("arena").jobs)
    config = {"arena": {"runs": [{"retriever": "bm25", "k": 5}], "judges": {"j": {"model": "m"}}}}
    with pytest.raises(ValueError, match=r"makes jobs of rules \['arena_judge'\]"):
        grid.suite_jobs(borrowing, config)


def test_the_family_audit_covers_every_suite_with_judges():
    assert families.SUITES == (
        ("drfr", ("drfr", "responders"), ("drfr", "judges")),
        ("arena", ("arena", "answerers"), ("arena", "judges")),
        ("arena_hard", ("arena_hard", "answerers"), ("arena_hard", "judges")),
    )


def test_every_named_input_function_is_defined_in_the_rule_files():
    """target_functions and validity_functions name functions of rules/*.smk (rules/targets.smk
    looks them up and fails on a misspelt one at DAG-build time; this says which)."""
    defined = {
        match
        for path in (REPO / "rules").rglob("*.smk")
        for match in re.findall(r"^def (\w+)\(", path.read_text(), flags=re.MULTILINE)
    }
    named = {n for s in SUITES for n in (*s.target_functions, *s.validity_functions)}
    assert named and named <= defined, sorted(named - defined)


def test_collect_concatenates_the_named_functions_in_registry_order():
    namespace = {name: (lambda name=name: [name]) for s in SUITES for name in s.validity_functions}
    assert suites.collect("validity_functions", namespace) == [
        n for s in SUITES for n in s.validity_functions
    ]


def test_collect_fails_on_a_name_the_rule_files_do_not_define():
    namespace = {name: list for s in SUITES for name in s.validity_functions}
    del namespace["drfr_validity_files"]
    namespace["drfr_validity_file"] = list  # misspelt in the rule files
    with pytest.raises(
        NameError, match=r"isqaflow.suites.drfr: validity_functions names 'drfr_validity_files'"
    ):
        suites.collect("validity_functions", namespace)


def test_the_config_check_runs_every_suites_checker_in_registry_order(monkeypatch):
    from isqaflow.configcheck import sections

    for entry in SUITES:
        assert callable(resolve(entry.name, "config_check", entry.config_check)), entry.name
    # Arena-Hard's in a module of its own, as a new suite's would be
    assert suites.suite("arena_hard").config_check.startswith("isqaflow.configcheck.arena_hard:")
    checked = []
    monkeypatch.setattr(sections, "check_isqa", checked.append)
    unchecked = dataclasses.replace(suites.suite("drfr"), config_check="")
    monkeypatch.setattr(sections, "SUITES", (SUITES[0], unchecked, *SUITES[2:]))
    with pytest.raises(KeyError, match="suite 'drfr' names no checker of its config section"):
        sections.check_suites("refs")  # type: ignore[arg-type]
    assert checked == ["refs"]  # in the registry's order: isqa's section was checked first
    outside = dataclasses.replace(suites.suite("drfr"), config_check="isqaflow.grid:drfr_jobs")
    monkeypatch.setattr(sections, "SUITES", (outside,))
    with pytest.raises(ImportError, match="isqaflow.grid is not a module of isqaflow.configcheck"):
        sections.check_suites("refs")  # type: ignore[arg-type]


def test_the_spend_plans_formulas_are_the_suites_own():
    """Each suite takes its own rules' formulas from the mappings its descriptor names (one
    module holds three suites'); one that plans none of its rules is an error, not a silent gap."""
    from isqaflow import spend
    from isqaflow.spend import arena_hard, stages, summaries

    assert spend.PLANNERS == {**stages.PLANNERS, **summaries.PLANNERS, **arena_hard.PLANNERS}
    assert set(spend.PLANNERS) <= set(grid.MODEL_RULES)
    wrong = dataclasses.replace(
        suites.suite("arena_hard"), spend_planners=("isqaflow.spend.summaries:PLANNERS",)
    )
    with pytest.raises(
        ValueError, match="arena_hard: spend_planners names .*plans none of its rules"
    ):
        spend.suite_planners((wrong,))


def test_the_validity_instruments_are_the_suites_own_in_registry_order():
    # A suite's judges and metrics reach the validity table by its descriptor alone: no hand
    # list in report/validity.py to keep in step (issue 37).
    from isqaflow.report import validity
    from isqaflow.suites import INSTRUMENTS, SUITES

    assert validity.INSTRUMENTS is INSTRUMENTS
    assert INSTRUMENTS == tuple(i for s in SUITES for i in s.instruments)
    assert len(set(INSTRUMENTS)) == len(INSTRUMENTS)
    for s in SUITES:
        if s.judges is not None:  # a suite with judges shows their known-answer controls
            assert s.instruments, s.name


def test_a_model_rule_names_the_suite_that_declares_it():
    """suite_of_rule: the GPU-hours plan reads an answering rule's generation settings from the
    config section of the suite whose descriptor declares the rule (no second table of them)."""
    from isqaflow.spend.gpu_hours import ANSWERING
    from isqaflow.suites import suite_of_rule

    assert {rule: suite_of_rule(rule).name for rule in ANSWERING} == {
        "drfr_responses": "drfr",
        "rag_answers": "arena",
        "arena_hard_answers": "arena_hard",
    }
    with pytest.raises(KeyError, match="no_such_rule"):
        suite_of_rule("no_such_rule")


def test_a_suites_board_builders_come_with_a_place_and_as_references():
    """The leaderboard's column builders are named by reference ("<module>:<function>": this
    floor imports nothing of the report floor that resolves them) and stand where
    ``board_place`` puts them; isqaflow.report.leaderboard.column_builders resolves them
    (tests/unit/report/test_leaderboard_builders.py)."""
    with pytest.raises(ValueError, match="'x': give board_place with board_builders"):
        Suite("x", (), (), (), (), board_builders=("isqaflow.report.x:x_columns",))
    with pytest.raises(ValueError, match="board_builders names 'x_columns', not a reference"):
        Suite("x", (), (), (), (), board_builders=("x_columns",), board_place=5)
    assert all(s.board_builders and s.board_place for s in SUITES)


def test_the_board_order_is_by_place_then_each_suites_own():
    """Not the registry order: ISQA's jobs and targets come first, its columns after DRFR's and
    the arena's (they are built on those suites' judges)."""
    first, second = suites.suite("isqa"), suites.suite("drfr")
    assert suites.builder_order((first, second)) == (
        *[("drfr", b) for b in second.board_builders],
        *[("isqa", b) for b in first.board_builders],
    )
    assert suites.BOARD_BUILDERS == suites.builder_order(SUITES)
    assert [s for s, _ in suites.BOARD_BUILDERS] == [
        "drfr",
        "arena",
        "arena",
        "isqa",
        "isqa",
        "arena_hard",
    ]


def test_two_suites_at_one_board_place_or_sharing_a_builder_is_an_error():
    arena, drfr = suites.suite("arena"), suites.suite("drfr")
    with pytest.raises(ValueError, match="board place 2 is declared twice"):
        suites._check_unique((arena, dataclasses.replace(drfr, board_place=2)))
    shared = dataclasses.replace(drfr, board_builders=arena.board_builders[:1], board_place=9)
    with pytest.raises(ValueError, match="column builder .*arena_columns is declared twice"):
        suites._check_unique((arena, shared))
