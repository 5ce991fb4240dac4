"""The leaderboard's columns come from the suites' descriptors (issue 37, "no mirrored list"):
each suite names its column builders (``board_builders``, "<module>:<function>" into the report
floor) and where its columns stand (``board_place``); build_leaderboard calls them in that order
with one signature, names none, and a reference that does not resolve is an error naming the
suite and the reference -- never a suite's columns silently left off."""

from __future__ import annotations

import sys
from types import ModuleType

import pytest
from test_leaderboard import build, tables  # noqa: F401 (tables: a fixture)

from isqaflow import codehash
from isqaflow.report import leaderboard, leaderboard_columns
from isqaflow.report.leaderboard import BoardTables, column_builders
from isqaflow.suites import BOARD_BUILDERS, BOARD_TABLES, SUITES

COLUMNS = "isqaflow.report.leaderboard_columns"


def test_every_registered_suites_builders_resolve():
    builders = column_builders()
    assert len(builders) == len(BOARD_BUILDERS) == sum(len(s.board_builders) for s in SUITES)
    for (suite, reference), builder in zip(BOARD_BUILDERS, builders, strict=True):
        module, name = reference.split(":")
        assert builder is getattr(sys.modules[module], name), (suite, reference)


def test_the_board_order_is_the_descriptors_and_the_columns_stand_as_before():
    """The builders run as build_leaderboard called them by name before: DRFR, the arena (its
    win rates and ratings, then the soft preferences), ISQA's summaries (metrics, then their
    DRFR and win rate against the abstract), Arena-Hard -- by ``board_place``, as ISQA's
    columns follow the judges' suites while the registry lists ISQA first."""
    assert [s.name for s in SUITES][0] == "isqa"
    assert BOARD_BUILDERS == (
        ("drfr", f"{COLUMNS}:drfr_columns"),
        ("arena", f"{COLUMNS}:arena_columns"),
        ("arena", f"{COLUMNS}:soft_preference_columns"),
        ("isqa", f"{COLUMNS}:metric_columns"),
        ("isqa", f"{COLUMNS}:summary_judge_columns"),
        ("arena_hard", f"{COLUMNS}:arena_hard_columns"),
    )


def test_every_builder_is_in_the_code_version_of_the_board_rules():
    """Rule leaderboard's and peer_leaderboard's ``code`` hashes isqaflow.report.leaderboard and
    what it imports (isqaflow.codehash): a builder in a module it does not import would be
    edited without the board rerunning."""
    covered = set(codehash.dependencies("isqaflow.report.leaderboard"))
    for suite, reference in BOARD_BUILDERS:
        assert reference.split(":")[0] in covered, (suite, reference)


@pytest.mark.parametrize(
    ("reference", "why"),
    [
        (f"{COLUMNS}:arena_hard_colums", "has no attribute 'arena_hard_colums'"),
        ("isqaflow.report.leaderbord_columns:arena_hard_columns", "No module named"),
        ("isqaflow.arena_hard.tables:write_tables", "not a module of isqaflow.report"),
        (f"{COLUMNS}:STYLE_UNDECIDED", "is not a function"),
    ],
)
def test_a_reference_that_does_not_resolve_is_an_error_naming_the_suite_and_it(reference, why):
    with pytest.raises(ImportError) as error:
        column_builders([("drfr", f"{COLUMNS}:drfr_columns"), ("arena_hard", reference)])
    message = str(error.value)
    assert message.startswith(f"isqaflow.suites.arena_hard: board_builders names {reference!r}")
    assert why in message


def test_a_misspelt_builder_fails_the_board_before_any_file(tables, monkeypatch):  # noqa: F811
    t = tables
    misspelt = (*BOARD_BUILDERS[:-1], ("arena_hard", f"{COLUMNS}:arena_hard_colums"))
    monkeypatch.setattr(leaderboard, "BOARD_BUILDERS", misspelt)
    with pytest.raises(ImportError, match="isqaflow.suites.arena_hard: board_builders names"):
        build(t)
    assert not list(t.glob("leaderboard*"))


def test_a_new_suites_columns_need_its_descriptor_and_its_builder_only(tables, monkeypatch):  # noqa: F811
    """A builder named in board order after the others puts its column last, with no edit of
    build_leaderboard; it reads the tables by name and the rule's settings."""
    t = tables
    seen = {}

    def new_columns(board, tables, settings):
        seen["tables"], seen["settings"] = tables, settings
        assert not tables["drfr_table5_long"].empty  # the suites' tables, read as frames
        board.put("smollm2", "new score", "1.0", section="New", value=1.0)

    module = ModuleType("isqaflow.report.new_columns")
    module.new_columns = new_columns  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(
        leaderboard, "BOARD_BUILDERS", (*BOARD_BUILDERS, ("new", f"{module.__name__}:new_columns"))
    )
    board = build(t)
    assert list(board.columns)[-1] == "new score"
    assert board.loc["smollm2", "new score"] == "1.0"
    assert isinstance(seen["tables"], BoardTables)
    assert seen["settings"].rounds == 200


def test_the_tables_a_builder_reads(tmp_path):
    """By name, read as frames; a board table the run lacks is empty; a name no suite declares
    is an error, not an empty table; ISQA's score files beside."""
    path = tmp_path / "drfr_table5_long.csv"
    path.write_text("judge,model,Overall\nj,m,0.5\n")
    files = BoardTables({"drfr_table5_long": path}, [tmp_path / "scores.jsonl"])
    assert files["drfr_table5_long"].to_dict("records") == [
        {"judge": "j", "model": "m", "Overall": 0.5}
    ]
    assert files["arena_hard_scores"].empty and files.path("arena_hard_scores") is None
    assert list(files) == list(BOARD_TABLES) and len(files) == len(BOARD_TABLES)
    assert files.scores == (tmp_path / "scores.jsonl",)
    with pytest.raises(KeyError, match="no suite declares the table 'drfr_table5'"):
        files["drfr_table5"]


def test_the_builders_share_one_signature():
    import inspect

    for _, reference in BOARD_BUILDERS:
        function = getattr(leaderboard_columns, reference.split(":")[1])
        assert list(inspect.signature(function).parameters) == ["board", "tables", "settings"]
