"""The judges' audit: panel agreement and verdict, leave one out, flip rates, canaries, self-preference."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from isqaflow.arena.judging.agreement import cohen_kappa
from isqaflow.arena.judging.judge_audit import (
    TABLES,
    JudgeAudit,
    flip_rate_kind,
    flip_rates,
    run_judge_audit,
    win_rate_intervals,
)
from isqaflow.arena.judging.panel import (
    fleiss_kappa,
    leave_one_out,
    panel_agreement,
    panel_verdict,
    verdict_table,
)
from isqaflow.io import write_jsonl
from isqaflow.report.canaries import NO_PREVIOUS, compare_canaries, summarize_canaries

REPO = Path(__file__).resolve().parents[3]


def test_fleiss_kappa_matches_the_textbook_example():
    # Fleiss (1971) as worked in Wikipedia's article: 10 items, 14 raters, 5 categories: kappa 0.210
    votes = np.array(
        [
            [0, 0, 0, 0, 14],
            [0, 2, 6, 4, 2],
            [0, 0, 3, 5, 6],
            [0, 3, 9, 2, 0],
            [2, 2, 8, 1, 1],
            [7, 7, 0, 0, 0],
            [3, 2, 6, 3, 0],
            [2, 5, 3, 2, 2],
            [6, 5, 2, 1, 0],
            [0, 2, 2, 3, 7],
        ]
    )
    assert fleiss_kappa(votes) == pytest.approx(0.20993, abs=1e-4)
    assert fleiss_kappa(np.array([[3, 0, 0], [3, 0, 0]])) == 1.0  # one label throughout
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa(np.array([[2, 0], [1, 0]]))


@pytest.mark.parametrize(
    ("votes", "rule", "expected"),
    [
        (["1", "1", "2"], "majority", "1"),
        (["1", "2"], "majority", "tie"),
        (["1", "2", "tie"], "majority", "tie"),
        (["1", None, "1"], "majority", "1"),
        ([None, None], "majority", None),
        (["2", "2"], "unanimous", "2"),
        (["2", "2", "1"], "unanimous", "tie"),
        (["2", None], "unanimous", "tie"),
    ],
)
def test_panel_verdict(votes, rule, expected):
    assert panel_verdict(votes, rule) == expected


def _records(judge_verdicts: dict[str, str | None], system: str, i: int) -> dict:
    return {
        "pair_id": f"d:q{i}:{system}|lfrqa",
        "kind": "reference",
        "system_a": system,
        "system_b": "lfrqa",
    }


def _panel(verdicts: dict[str, list[str | None]], systems: list[str]) -> dict[str, list[dict]]:
    return {
        judge: [{**_records({}, systems[i], i), "verdict": v} for i, v in enumerate(vs)]
        for judge, vs in verdicts.items()
    }


def test_agreement_is_cohen_for_two_and_fleiss_for_three():
    systems = ["s1", "s2", "s3", "s1", "s2", "s3"]
    a, b, c = (
        ["1", "2", "tie", "1", "1", "2"],
        ["1", "2", "1", "1", None, "2"],
        ["1", "tie", "tie", "2", "1", "2"],
    )
    table = verdict_table(_panel({"a": a, "b": b, "c": c}, systems))
    two = panel_agreement(table, ["a", "b"], rounds=200, seed=1)
    valid = [i for i in range(6) if b[i] is not None]
    assert two["kappa_kind"] == "Cohen" and two["n"] == 5 and two["n_incomplete"] == 1
    assert two["kappa"] == pytest.approx(cohen_kappa([a[i] for i in valid], [b[i] for i in valid]))
    assert two["lower"] <= two["kappa"] <= two["upper"]
    three = panel_agreement(table, ["a", "b", "c"], rounds=200, seed=1)
    counts = np.array(
        [[[a[i], b[i], c[i]].count(label) for label in ("1", "2", "tie")] for i in valid]
    )
    assert three["kappa_kind"] == "Fleiss" and three["kappa"] == pytest.approx(fleiss_kappa(counts))
    assert three["raw_agreement"] == pytest.approx(2 / 5)  # pairs 0 and 5: all three agree


def test_leaving_out_the_dissenting_judge_changes_the_ranking():
    # s1 wins everything under a and b; c prefers s2.  Panel (majority of 3): s1 > s2
    systems = ["s1", "s2"] * 3
    a = b = ["1", "2"] * 3
    c = ["2", "1"] * 3
    loo = leave_one_out(verdict_table(_panel({"a": a, "b": b, "c": c}, systems)), ["a", "b", "c"])
    by = loo.set_index("left_out")
    assert by.loc["c", "kendall_tau"] == pytest.approx(1.0) and bool(by.loc["c", "top_same"])
    assert by.loc["a", "top_system_panel"] == "s1"
    # without a, the panel is b and c: they disagree on every pair, so every verdict is a tie, both
    # systems win 0%: no order to compare
    assert np.isnan(by.loc["a", "kendall_tau"])
    # two judges: leaving one out is the other alone (a: s1 first, c: s2 first); their panel ties all
    two = leave_one_out(verdict_table(_panel({"a": a, "c": c}, systems)), ["a", "c"]).set_index(
        "left_out"
    )
    assert two.loc["c", "top_system"] == "s1" and two.loc["a", "top_system"] == "s2"
    assert np.isnan(two.loc["c", "kendall_tau"])
    # the panel's win rates all tie at 0: it has no top system (the first name of the tie is not one)
    assert two["top_system_panel"].isna().all() and two["top_same"].isna().all()
    # no reference pairs at all: no win rates, no ranking to compare
    only_models = verdict_table(
        {
            j: [{**r, "kind": "all_pairs"} for r in recs]
            for j, recs in _panel({"a": a, "c": c}, systems).items()
        }
    )
    empty = leave_one_out(only_models, ["a", "c"])
    assert (empty["systems"] == 0).all() and empty["top_same"].isna().all()


def test_flip_rate_counts_pairs_whose_verdict_changed():
    records = [
        {"verdict": "1", "repetitions": [{"verdict": "1"}, {"verdict": "tie"}, {"verdict": "1"}]},
        {"verdict": "2", "repetitions": [{"verdict": "2"}] * 3},
        {"verdict": None, "repetitions": [{"verdict": None}, {"verdict": "2"}, {"verdict": None}]},
        {"verdict": "1", "repetitions": [{"verdict": "1"}] * 3},
    ]
    assert flip_rates(records) == {"repeats": 3, "items": 4, "items_flipped": 2, "flip_rate": 0.5}
    once = flip_rates([{"verdict": "1"}])
    assert once["repeats"] == 1 and np.isnan(once["flip_rate"])


def test_a_win_rate_interval_that_includes_the_judges_variance():
    def record(system, verdicts):
        return {
            "kind": "reference",
            "system_a": system,
            "verdict": verdicts[0],
            "repetitions": [{"verdict": v} for v in verdicts],
        }

    steady = [record("steady", ["1", "1", "1"]) for _ in range(10)]
    wavering = [record("wavering", ["1", "2", "tie"]) for _ in range(10)]
    table = win_rate_intervals(
        steady + wavering + [record("wavering", [None, "1", None])], rounds=400, seed=5
    ).set_index("system")
    assert table.loc["steady", "lower_with_judge"] == table.loc["steady", "lower_pairs"] == 1.0
    w = table.loc["wavering"]
    assert (
        w["n"] == 11 and w["repeats"] == 3 and w["win_rate"] == 1.0
    )  # the first repetition: always wins
    assert w["win_rate_mean"] == pytest.approx((10 + 1) / (30 + 1))  # invalid verdicts left out
    assert (
        w["lower_pairs"] == w["upper_pairs"] == 1.0
    )  # over pairs alone the first repetition looks certain
    assert (
        w["lower_with_judge"] < 0.2 and w["upper_with_judge"] < 0.8
    )  # with the judge's variance it is not
    assert win_rate_intervals(
        [{"kind": "reference", "system_a": "s", "verdict": "1"}]
    ).empty  # judged once


def _control(judge, item, outcome, rule="raw"):
    return {
        "instrument": "arena judge",
        "name": judge,
        "control": "no_answer",
        "rule": rule,
        "item": item,
        "outcome": outcome,
        "correct": outcome == "a",
        "expected": "a",
    }


def test_canaries_compare_outcomes_with_the_previous_manifest(tmp_path):
    path = tmp_path / "controls.jsonl"
    write_jsonl(path, [_control("j", "d:1", "a"), _control("j", "d:2", "tie")])
    now = summarize_canaries([path])
    (key,) = now
    assert now[key]["n"] == 2 and now[key]["n_correct"] == 1
    assert compare_canaries(now, None) == {key: NO_PREVIOUS}
    assert compare_canaries(now, {key: dict(now[key])}) == {key: "unchanged"}
    write_jsonl(path, [_control("j", "d:1", "a"), _control("j", "d:2", "a")])
    assert compare_canaries(summarize_canaries([path]), now) == {key: "changed"}


def audit(pairs=(), judges=None, rounds=1000, seed=0) -> JudgeAudit:
    return JudgeAudit(
        judge_pairs=tuple(pairs),
        judges=judges or {},
        panel_rule="majority",
        rounds=rounds,
        seed=seed,
    )


def test_the_settings_come_from_the_rules_params():
    """JudgeAudit.from_rule reads the rule judge_audit's params (its params block names them)."""
    block = re.split(r"^rule ", (REPO / "rules/judges.smk").read_text(), flags=re.MULTILINE)
    body = next(b for b in block if b.startswith("judge_audit:"))
    names = set(
        re.findall(
            r"^        (\w+)=",
            body.split("    params:\n", 1)[1].split("    script:", 1)[0],
            flags=re.MULTILINE,
        )
    )
    assert {"pairs", "judges", "panel_rule", "rounds", "seed"} <= names
    pairs = [{"suite": "arena", "judge": "a", "system": "s1", "self_family": False}]
    params = SimpleNamespace(
        judged={},
        drfr={},
        judges={"arena": {"a": {"mode": "text"}}},
        pairs=pairs,
        previous_manifest="results/manifest.json",
        panel_rule="majority",
        rounds=200,
        seed=4,
        code="sha",
    )
    settings = JudgeAudit.from_rule(params, SimpleNamespace())
    assert settings == JudgeAudit(
        judge_pairs=tuple(pairs),
        judges={"arena": {"a": {"mode": "text"}}},
        panel_rule="majority",
        rounds=200,
        seed=4,
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.rounds = 1  # type: ignore[misc]


def test_the_audit_writes_every_table(tmp_path):
    systems = ["s1", "s2"] * 3
    judged = {}
    for judge, verdicts in {"a": ["1", "2"] * 3, "b": ["1", "1", "2", "2", "1", "tie"]}.items():
        records = [
            {**r, "repetitions": [{"verdict": r["verdict"]}, {"verdict": "tie"}]} if i == 0 else r
            for i, r in enumerate(_panel({judge: verdicts}, systems)[judge])
        ]
        write_jsonl(tmp_path / f"{judge}.jsonl", records)
        judged[judge] = str(tmp_path / f"{judge}.jsonl")
    write_jsonl(
        tmp_path / "controls.jsonl", [_control("a", "d:1", "a"), _control("b", "d:1", "tie")]
    )
    pairs = [
        {
            "suite": "arena",
            "judge": j,
            "judge_model": "m",
            "judge_family": "fam",
            "system": s,
            "system_model": "m" if s == "s1" else None,
            "system_family": "fam" if s == "s1" else None,
            "self_family": s == "s1",
        }
        for j in ("a", "b")
        for s in ("s1", "s2")
    ]
    manifest = tmp_path / "manifest.json"
    kwargs = {
        "judged_paths": {"bm25-k5": judged},
        "validity_paths": {"arena": [str(tmp_path / "controls.jsonl")]},
        "previous_manifest": manifest,
        "tables_dir": tmp_path / "tables",
        "canaries_path": tmp_path / "canaries.json",
        "audit": audit(pairs=pairs, rounds=50, seed=3),
    }
    run_judge_audit(**kwargs)
    for table in TABLES:
        assert (tmp_path / "tables" / f"judges_{table}.csv").exists()
        assert (tmp_path / "tables" / f"judges_{table}.md").exists()
    noise = pd.read_csv(tmp_path / "tables/judges_noise.csv", index_col=0).set_index("judge")
    assert noise.loc["a", "flip_rate"] == pytest.approx(1.0)  # the one repeated pair flipped
    assert noise.loc["a", "canary"] == NO_PREVIOUS
    rates = pd.read_csv(tmp_path / "tables/judges_noise_win_rates.csv", index_col=0)
    assert rates[["run", "judge", "system", "repeats", "n"]].values.tolist() == [
        ["bm25-k5", "a", "s1", 2, 1],
        ["bm25-k5", "b", "s1", 2, 1],
    ]
    selfpref = pd.read_csv(tmp_path / "tables/judges_self_preference.csv", index_col=0)
    row = selfpref[(selfpref.judge == "b") & (selfpref.system == "s1")].iloc[0]
    assert bool(row.self_family) and row.win_rate == pytest.approx(2 / 3) and row.n == 3
    assert "SELF" in (tmp_path / "tables/judges_self_preference.md").read_text()
    panel = pd.read_csv(tmp_path / "tables/judges_panel.csv", index_col=0)
    assert panel.loc[0, "kappa_kind"] == "Cohen" and panel.loc[0, "n"] == 6
    # the next run: the manifest holds this run's canaries; b's control changed, a's did not
    manifest.write_text(
        json.dumps({"canaries": json.loads((tmp_path / "canaries.json").read_text())})
    )
    write_jsonl(tmp_path / "controls.jsonl", [_control("a", "d:1", "a"), _control("b", "d:1", "a")])
    run_judge_audit(**kwargs)
    noise = pd.read_csv(tmp_path / "tables/judges_noise.csv", index_col=0).set_index("judge")
    assert noise.loc["a", "canary"] == "unchanged" and noise.loc["b", "canary"] == "changed"


def _drfr_records(answers_per_repetition):
    return [
        {
            "instruction_id": f"i{n}",
            "question_index": 0,
            "answer": reps[0],
            "repetitions": [{"answer": a} for a in reps],
        }
        for n, reps in enumerate(answers_per_repetition)
    ]


def test_the_noise_table_has_every_drfr_and_arena_judge_and_says_what_its_flip_rate_is(tmp_path):
    """DRFR judges with repeats get their flip rate beside the arena's; a log-prob judge's 0 is said
    to be 0 by construction, a text judge's rate is measured; the captions end with the judges'
    controls; a judge that reuses another's calls is named in the panel's note."""
    systems = ["s1", "s2"] * 2
    arena = {}
    for judge, verdicts in {
        "local": ["1", "2", "1", "2"],
        "local-raw": ["1", "tie", "1", "2"],
    }.items():
        write_jsonl(tmp_path / f"{judge}.jsonl", _panel({judge: verdicts}, systems)[judge])
        arena[judge] = str(tmp_path / f"{judge}.jsonl")
    write_jsonl(
        tmp_path / "gpt.jsonl",
        _drfr_records(
            [["YES", "NO", "YES"], ["NO", "NO", "NO"], ["YES", "YES", "YES"], ["YES", "YES", "NO"]]
        ),
    )
    write_jsonl(tmp_path / "drfr-local.jsonl", _drfr_records([["YES", "YES"], ["NO", "NO"]]))
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"groups": []}))
    logprob = {"mode": "logprob", "generation": None, "repeats": 1, "reuse_calls": None}
    judges = {
        "arena": {"local": logprob, "local-raw": {**logprob, "reuse_calls": "local"}},
        "drfr": {
            "gpt": {"mode": "text", "generation": {"do_sample": True}, "repeats": 3},
            "local": {**logprob, "repeats": 2},
        },
    }
    run_judge_audit(
        {"bm25-k5": arena},
        {},
        tmp_path / "none.json",
        tmp_path / "t",
        tmp_path / "c.json",
        audit(rounds=20, judges=judges),
        drfr_paths={
            "infobench": {
                "gpt": str(tmp_path / "gpt.jsonl"),
                "local": str(tmp_path / "drfr-local.jsonl"),
            }
        },
        validity_summary_path=summary,
    )
    noise = pd.read_csv(tmp_path / "t/judges_noise.csv", index_col=0).set_index(["suite", "judge"])
    gpt = noise.loc[("drfr", "gpt")]
    assert (
        gpt["run"] == "infobench"
        and gpt["repeats"] == 3
        and gpt["items"] == 4
        and gpt["items_flipped"] == 2
    )
    assert gpt["flip_rate"] == pytest.approx(0.5) and gpt["flip_rate_is"].startswith(
        "measured (3 repetitions, sampling"
    )
    assert noise.loc[("drfr", "local"), "flip_rate"] == 0.0
    assert noise.loc[("drfr", "local"), "flip_rate_is"].startswith(
        "0 by construction (2 repetitions"
    )
    assert noise.loc[("arena", "local"), "flip_rate_is"].startswith(
        "0 by construction (judged once"
    )
    assert np.isnan(noise.loc[("arena", "local"), "flip_rate"])
    for table in TABLES:
        assert "Controls: none recorded for arena judge." in (
            tmp_path / f"t/judges_{table}.md"
        ).read_text() or table not in ("noise_win_rates", "panel", "panel_loo")
    assert "Controls: none recorded for DRFR judge." in (tmp_path / "t/judges_noise.md").read_text()
    panel = pd.read_csv(tmp_path / "t/judges_panel.csv", index_col=0)
    assert "local-raw reads local's model calls" in panel.loc[0, "note"]
    assert "not independent judges" in panel.loc[0, "note"]


def test_what_a_flip_rate_is():
    assert flip_rate_kind(1, {"mode": "text"}) == "not measured (judged once; set repeats)"
    assert flip_rate_kind(2, {"mode": "text", "generation": None}).startswith(
        "measured (2 repetitions, greedy"
    )
    assert "not measured noise" in flip_rate_kind(3, {"mode": "logprob"})


def test_one_judge_says_there_is_no_panel(tmp_path):
    write_jsonl(tmp_path / "a.jsonl", _panel({"a": ["1", "2"]}, ["s1", "s2"])["a"])
    run_judge_audit(
        {"r": {"a": str(tmp_path / "a.jsonl")}},
        {},
        tmp_path / "none.json",
        tmp_path,
        tmp_path / "c.json",
        audit(rounds=10),
    )
    assert "one judge: no panel" in (tmp_path / "judges_panel.md").read_text()


def test_the_audit_writes_exactly_the_tables_the_rule_declares(tmp_path):
    """The rule's outputs are TABLES' files (rules/inputs/judges.smk imports them from
    isqaflow.arena.judging.audit_tables): the audit writes those and no other table."""
    write_jsonl(tmp_path / "a.jsonl", _panel({"a": ["1", "2"]}, ["s1", "s2"])["a"])
    run_judge_audit(
        {"r": {"a": str(tmp_path / "a.jsonl")}},
        {},
        tmp_path / "none.json",
        tmp_path,
        tmp_path / "c.json",
        audit(rounds=10),
    )
    written = {p.name for p in tmp_path.glob("judges_*")}
    assert written == {f"judges_{t}.{ext}" for t in TABLES for ext in ("csv", "md")}
    rule_inputs = (REPO / "rules/inputs/judges.smk").read_text()
    assert "from isqaflow.arena.judging.audit_tables import TABLES as JUDGE_TABLES" in rule_inputs


def test_the_default_has_a_panel_and_the_overlay_adds_a_repeated_text_judge(tmp_path):
    """The embedded default judges the arena with two judges (local-raw reusing local's calls: its
    jobs wait for local's); the overlay adds a DRFR text judge that repeats its judgments."""
    from workflow_utils import copy_repo, dry_run_jobs

    repo = copy_repo(tmp_path / "repo")
    default = dry_run_jobs(repo)
    assert default["arena_judge"] == 2 and default["arena_judge_checks"] == 2  # local and local-raw
    assert default["drfr_judge"] == 1 and default["judge_audit"] == 1
    jobs = dry_run_jobs(repo, "--configfile", "config/judges-panel.yaml")
    assert jobs["drfr_judge"] == 2 and jobs["arena_judge"] == 2 and jobs["judge_audit"] == 1


def test_the_rule_hashes_its_module_and_no_model_code():
    from test_arena_code import script_modules

    from isqaflow.codehash import dependencies

    rule = (REPO / "rules/judges.smk").read_text()
    (modules,) = re.findall(r'code=code\("([\w.]+)"\)', rule)
    assert {modules} == script_modules(REPO / "scripts/judge_audit.py")
    assert not [d for d in dependencies(modules) if d.startswith("isqaflow.models")]


def test_the_manifest_records_the_runs_canaries(tmp_path):
    from isqaflow.report.canaries import CANARIES, gather_canaries, previous_canaries
    from isqaflow.report.manifest import write_manifest

    assert gather_canaries(tmp_path) is None and previous_canaries(tmp_path / "absent.json") is None
    (tmp_path / CANARIES).parent.mkdir(parents=True)
    (tmp_path / CANARIES).write_text(json.dumps({"arena judge/j/self/raw": {"digest": "d"}}))
    manifest = write_manifest(
        tmp_path / "manifest.json", {"seed": 1}, {}, {}, {}, REPO, results_dir=tmp_path
    )
    assert manifest["canaries"] == {"arena judge/j/self/raw": {"digest": "d"}}
    assert previous_canaries(tmp_path / "manifest.json") == manifest["canaries"]
    (tmp_path / "broken.json").write_text("{")
    assert previous_canaries(tmp_path / "broken.json") is None


def test_kappa_is_not_identified_when_a_judge_gives_one_verdict_to_every_pair():
    # the embedded run's case: the raw rule ties every pair; kappa is 0 on every resample, and a
    # [0, 0] interval would read as a measurement
    systems = ["s1", "s2"] * 3
    table = verdict_table(
        _panel({"a": ["1", "2", "tie", "1", "2", "1"], "b": ["tie"] * 6}, systems)
    )
    result = panel_agreement(table, ["a", "b"], rounds=50, seed=1)
    assert result["n"] == 6 and result["raw_agreement"] == pytest.approx(1 / 6)
    assert np.isnan(result["kappa"]) and np.isnan(result["lower"]) and np.isnan(result["upper"])
    assert result["not_identified"] == "b gives 'tie' to all 6 pairs"


def _ordered(judge: str, truth: list[str], favours_first: bool, rng) -> list[dict]:
    """A judge's records of pairs whose better side is ``truth`` ("1": system_a, "2"), both
    orders judged: right in each order with probability 0.85, except that a judge that favours
    the first answer picks the answer shown first in 40% of its orders."""
    records = []
    for i, better in enumerate(truth):
        sides = {}
        for order in ("ab", "ba"):
            right = "a" if better == "1" else "b"
            side = right if rng.random() < 0.85 else ("b" if right == "a" else "a")
            if favours_first and rng.random() < 0.4:
                side = "a" if order == "ab" else "b"
            sides[order] = side
        verdict = (
            {"a": "1", "b": "2"}[sides["ab"]] if sides["ab"] == sides["ba"] else "tie"
        )  # the raw rule: both orders must agree
        records.append(
            {
                **_records({}, f"s{i % 4}", i),
                "verdict": verdict,
                "verdict_ab": sides["ab"],
                "verdict_ba": sides["ba"],
            }
        )
    return records


def test_reliability_finds_the_judge_that_favours_the_answer_shown_first():
    """Issue 40: Dawid-Skene on a panel of three judges of 600 pairs; the one that picks the
    first-shown answer in 40% of its orders has the position bias -- it errs towards the first
    in 0.5 x (0.4 + 0.6 x 0.15) = 0.245 of its orders and towards the second in 0.5 x 0.6 x 0.15
    = 0.045: 0.2 -- the others about none."""
    from isqaflow.arena.judging.panel import reliability

    rng = np.random.default_rng(0)
    truth = list(rng.choice(["1", "2"], size=600))
    judged = {
        "fair": _ordered("fair", truth, False, rng),
        "fair2": _ordered("fair2", truth, False, rng),
        "first": _ordered("first", truth, True, rng),
    }
    table = reliability(judged, list(judged)).set_index("judge")
    assert (table["items"] == 600).all() and (table["orders"] == 1200).all()
    assert abs(table.loc["fair", "position_bias"]) < 0.05
    assert abs(table.loc["fair2", "position_bias"]) < 0.05
    assert table.loc["first", "position_bias"] == pytest.approx(0.2, abs=0.04)
    assert table.loc["first", "accuracy"] < table.loc["fair", "accuracy"]
    assert table[["accuracy", "agrees_with_model"]].apply(lambda c: c.between(0, 1)).all().all()
    shares = table[[c for c in table.columns if c.startswith("share ")]].iloc[0]
    assert shares.sum() == pytest.approx(1.0)


def test_the_panel_verdict_can_be_the_dawid_skene_models():
    """arena.panel_verdict: dawid_skene -- judge a always right, b wrong on pairs 0 and 2, d on
    pairs 4 and 6, c always "2" (no information): on those four pairs the majority of four
    splits (a tie), the model follows the two judges that agree (c's "2" says nothing): s1 wins
    20 of 20 under it, 16 under the majority."""
    from isqaflow.arena.judging.panel import dawid_skene_verdicts, win_rates_of

    systems = ["s1", "s2"] * 20
    truth = ["1", "2"] * 20  # s1 better on each of its pairs, s2 worse
    b = ["2", "2", "2", "2"] + truth[4:]
    d = truth[:4] + ["2", "2", "2", "2"] + truth[8:]
    panel = {"a": truth, "b": b, "c": ["2"] * 40, "d": d}
    table = verdict_table(_panel(panel, systems))
    judges = list(panel)
    verdicts = dawid_skene_verdicts(table, judges)
    assert verdicts.to_dict() == dict(zip(table.index, table["a"], strict=True))
    assert win_rates_of(table, judges, "dawid_skene").to_dict() == {"s1": 1.0, "s2": 0.0}
    assert win_rates_of(table, judges, "majority").to_dict() == {"s1": 0.8, "s2": 0.0}
    with pytest.raises(ValueError, match="dawid_skene_verdicts"):
        panel_verdict(["1", "2"], "dawid_skene")
    # no valid verdict on a pair: none
    table.loc[table.index[0], judges] = None
    assert dawid_skene_verdicts(table, judges).iloc[0] is None


def test_the_reliability_table_of_the_audit(tmp_path):
    """judges_panel_reliability: one row per judge of a panel -- the arena's per retrieval run,
    DRFR's per dataset on the decomposed questions (no position) -- and a note where a run has
    one judge."""
    from isqaflow.arena.judging.judge_audit import drfr_verdict_table, reliability_table

    rng = np.random.default_rng(1)
    truth = list(rng.choice(["1", "2"], size=50))
    judged = {
        "r2": {"a": _ordered("a", truth, False, rng), "b": _ordered("b", truth, True, rng)},
        "r1": {"a": _ordered("a", truth, False, rng)},
    }
    answers = ["YES", "NO", "YES", "YES", "NO", "NO", "YES", "NO"] * 5
    drfr = {
        "infobench": {
            judge: [
                {**r, "model": "m", "answer": a}
                for r, a in zip(_drfr_records([[x] for x in answers]), said, strict=True)
            ]
            for judge, said in (
                ("local", answers),
                ("local-text", answers[:-3] + ["INVALID", "NO", "YES"]),
                ("other", ["YES"] * 40),
            )
        }
    }
    table = reliability_table(judged, {"b": "a"}, drfr)
    assert (
        list(zip(table["suite"], table["run"]))
        == [("arena", "r2")] * 2 + [("arena", "r1")] + [("drfr", "infobench")] * 3
    )
    assert table["note"].iloc[0].startswith("b reads a's model calls")
    assert table["note"].iloc[2].startswith("one judge: no panel")
    assert table["accuracy"].iloc[:2].notna().all() and pd.isna(table["accuracy"].iloc[2])
    drfr_rows = table[table["suite"] == "drfr"].set_index("judge")
    assert list(drfr_rows["items"]) == [40, 39, 40]  # an INVALID answer is not a verdict
    assert drfr_rows["position_bias"].isna().all() and (drfr_rows["orders"] == 0).all()
    assert drfr_rows.loc["other", "accuracy"] < drfr_rows.loc["local", "accuracy"]
    questions = drfr_verdict_table(drfr["infobench"])
    assert questions.index[0] == "m|i0#0" and questions.loc["m|i37#0", "local-text"] is None


def test_a_judge_that_always_picks_the_first_answer_reads_one_half():
    """As SmolLM2 does on the embedded run: "first" in both orders of every pair (so its raw
    verdicts are all ties), beside a judge that is always right: of each pair's two orders one
    shows the better answer second, so its position bias is 0.5; the right judge's is 0."""
    from isqaflow.arena.judging.panel import reliability

    truth = ["1", "2", "2", "1", "2", "1", "1", "2"] * 5
    first = [
        {**_records({}, f"s{i % 2}", i), "verdict": "tie", "verdict_ab": "a", "verdict_ba": "b"}
        for i in range(len(truth))
    ]
    right = [
        {
            **r,
            "verdict": t,
            "verdict_ab": {"1": "a", "2": "b"}[t],
            "verdict_ba": {"1": "a", "2": "b"}[t],
        }
        for r, t in zip(first, truth, strict=True)
    ]
    table = reliability({"first": first, "right": right}, ["first", "right"]).set_index("judge")
    assert table.loc["first", "position_bias"] == pytest.approx(0.5, abs=1e-6)
    assert table.loc["right", "position_bias"] == pytest.approx(0.0, abs=1e-6)
