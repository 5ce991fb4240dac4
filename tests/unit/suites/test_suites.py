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


def test_the_grid_has_a_job_builder_for_every_suite_with_model_rules():
    assert [s.name for s in SUITES if s.rules] == list(grid.SUITE_JOBS)


def test_a_registered_suite_without_a_job_builder_is_an_error():
    new = Suite(
        "new", (ModelRule("new_judge", "results/new/{judge}.jsonl", "{judge}"),), (), (), ()
    )
    with pytest.raises(KeyError, match="suite 'new' declares model rules \\(new_judge\\)"):
        grid.suite_jobs(new, {})
    assert grid.suite_jobs(dataclasses.replace(new, rules=()), {}) == []


def test_a_job_builder_making_another_suites_jobs_is_an_error(monkeypatch):
    monkeypatch.setitem(grid.SUITE_JOBS, "drfr", grid.SUITE_JOBS["arena"])
    config = {"arena": {"runs": [{"retriever": "bm25", "k": 5}], "judges": {"j": {"model": "m"}}}}
    with pytest.raises(ValueError, match=r"makes jobs of rules \['arena_judge'\]"):
        grid.suite_jobs(suites.suite("drfr"), config)


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


def test_the_config_check_has_a_checker_for_every_suite(monkeypatch):
    from isqaflow.configcheck import sections

    assert list(sections.SUITE_CHECKS) == [s.name for s in SUITES]
    checked = []
    monkeypatch.setitem(sections.SUITE_CHECKS, "isqa", checked.append)
    monkeypatch.delitem(sections.SUITE_CHECKS, "drfr")
    with pytest.raises(KeyError, match="suite 'drfr' has no checker of its config section"):
        sections.check_suites("refs")  # type: ignore[arg-type]
    assert checked == ["refs"]  # in the registry's order: isqa's section was checked first


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
