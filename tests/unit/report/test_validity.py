"""The validity table: control records -> share correct with its interval, chance, flag, note."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from isqaflow.codehash import dependencies
from isqaflow.io import RecordError
from isqaflow.report.validity import (
    NO_EVIDENCE,
    build_validity_table,
    read_control_records,
    validity_frame,
    validity_note,
    validity_summary,
)

REPO = Path(__file__).resolve().parents[3]


def record(
    item: str,
    correct: bool | None,
    *,
    instrument="DRFR judge",
    name="local",
    scope="infobench",
    control="empty_response",
    rule="raw",
    chance=0.5,
    baseline=None,
) -> dict:
    outcome = {True: "NO", False: "YES", None: "INVALID"}[correct]
    return {
        "instrument": instrument,
        "name": name,
        "scope": scope,
        "control": control,
        "rule": rule,
        "item": item,
        "expected": "NO",
        "outcome": outcome,
        "correct": correct,
        "chance": chance,
        "baseline_correct": baseline,
        "detail": {},
    }


def perfect_and_yes_always() -> list[dict]:
    """A perfect judge ("good"), one saying YES to everything ("blind"), one with invalid replies."""
    records = [record(f"i{k}", True, name="good") for k in range(8)]
    records += [record(f"i{k}", False, name="blind") for k in range(8)]
    records += [
        record(f"i{k}", [True, True, True, None, None, False][k], name="mumbler") for k in range(6)
    ]
    return records


def by_name(summary: dict) -> dict[str, dict]:
    return {g["name"]: g for g in summary["groups"]}


def test_perfect_judge_is_100_percent_and_not_flagged_yes_always_is_0_and_flagged():
    groups = by_name(validity_summary(perfect_and_yes_always()))
    good, blind = groups["good"], groups["blind"]
    assert (good["n"], good["n_correct"], good["correct"], good["upper"]) == (8, 8, 1.0, 1.0)
    assert good["lower"] == pytest.approx(0.025 ** (1 / 8))  # Clopper-Pearson: 0.631
    assert good["chance"] == 0.5 and good["no_evidence"] is False
    assert good["test"] == "binomial" and good["p_value"] == pytest.approx(0.5**8)
    assert (blind["n_correct"], blind["correct"], blind["lower"]) == (0, 0.0, 0.0)
    assert blind["upper"] == pytest.approx(1 - 0.025 ** (1 / 8))
    assert blind["no_evidence"] is True and blind["p_value"] == 1.0


def test_invalid_replies_are_counted_and_not_correct():
    mumbler = by_name(validity_summary(perfect_and_yes_always()))["mumbler"]
    assert (mumbler["n"], mumbler["n_invalid"], mumbler["n_correct"]) == (6, 2, 3)
    assert mumbler["correct"] == pytest.approx(
        0.5
    )  # 3 of 6: the invalid ones are in the denominator
    assert mumbler["no_evidence"] is True


def test_interval_is_clopper_pearson_and_the_test_the_one_sided_exact_binomial():
    records = [record(f"i{k}", k < 7) for k in range(10)]
    group = validity_summary(records)["groups"][0]
    assert group["correct"] == pytest.approx(0.7)
    # 7 of 10, exact 95% interval (published tables: 0.3475, 0.9333)
    assert group["lower"] == pytest.approx(0.34755, abs=1e-4)
    assert group["upper"] == pytest.approx(0.93326, abs=1e-4)
    assert group["p_value"] == pytest.approx(176 / 1024)  # P(X >= 7), X ~ Binomial(10, 1/2)
    assert group["no_evidence"] is True and group["verdict"] == "no evidence"


@pytest.mark.parametrize(
    ("n_correct", "n", "separates"),
    [
        (1, 1, False),
        (2, 2, False),
        (3, 3, False),
        (4, 4, False),
        (5, 5, False),
        (6, 6, True),
        (6, 7, False),
        (7, 8, False),
        (8, 8, True),
        (8, 10, False),
        (9, 10, True),
    ],
)
def test_separates_only_when_the_exact_test_passes(n_correct, n, separates):
    """An all-correct group of 3 had a bootstrap interval of [100, 100] and "separated"."""
    records = [record(f"i{k}", k < n_correct) for k in range(n)]
    group = validity_summary(records)["groups"][0]
    assert group["no_evidence"] is (not separates)
    assert (group["verdict"] == "separates") is separates
    assert group["min_n"] == 6


def test_too_few_items_are_named_in_the_verdict():
    from isqaflow.report.validity import verdict_text

    few = validity_summary([record(f"i{k}", True) for k in range(3)])["groups"][0]
    assert verdict_text(few) == (
        "NO EVIDENCE THAT THIS JUDGE SEPARATES BETTER FROM WORSE (exact binomial p = 0.125, Holm 0.125; "
        "too few to show it: a perfect instrument needs 6 items)"
    )
    enough = validity_summary([record(f"i{k}", True) for k in range(6)])["groups"][0]
    assert verdict_text(enough) == "separates (exact binomial p = 0.016, Holm 0.016)"


def test_verdicts_carry_holm_per_judge():
    """Two controls of one judge, 6/6 each (p = 0.016 < 0.025): Holm over the judge's two
    tested controls gives 0.031; the verdicts stay (the judge is trusted only if every control
    passes: an intersection-union test) but say that neither passes alone after Holm; another
    judge is its own family; the unadjusted p stays beside the adjusted one."""
    from isqaflow.report.validity import verdict_text

    records = [
        record(f"i{k}", True, control=c)
        for c in ("empty_response", "other_response")
        for k in range(6)
    ]
    records += [record(f"i{k}", True, name="other") for k in range(6)]
    groups = validity_summary(records)["groups"]
    local = [g for g in groups if g["name"] == "local"]
    assert [g["p_value"] for g in local] == pytest.approx([0.5**6] * 2)
    assert [g["p_holm"] for g in local] == pytest.approx([2 * 0.5**6] * 2)
    assert all(g["verdict"] == "separates" for g in local)
    assert (
        verdict_text(local[0])
        == "separates (exact binomial p = 0.016, Holm 0.031; not alone after Holm)"
    )
    other = next(g for g in groups if g["name"] == "other")
    assert other["p_holm"] == pytest.approx(0.5**6)
    assert verdict_text(other) == "separates (exact binomial p = 0.016, Holm 0.016)"


def test_paired_control_is_tested_by_exact_mcnemar_against_its_baseline():
    # 8 items: 6 gained (wrong without the evidence, right with it), 1 lost, 1 right both times
    pairs = [(True, False)] * 6 + [(False, True)] + [(True, True)]
    records = [
        record(
            f"q{k}",
            after,
            instrument="feedback model",
            name="lora",
            control="gold_evidence",
            chance=float(before),
            baseline=before,
        )
        for k, (after, before) in enumerate(pairs)
    ]
    group = validity_summary(records)["groups"][0]
    assert group["test"] == "mcnemar" and (group["n_gained"], group["n_lost"]) == (6, 1)
    assert group["chance"] == pytest.approx(2 / 8)  # the baseline's share correct
    assert group["p_value"] == pytest.approx(8 / 128)  # P(X >= 6), X ~ Binomial(7, 1/2)
    assert group["no_evidence"] is True
    # a binomial test against the baseline's share would have passed: 7/8 at chance 2/8
    from isqaflow.stats import share_test

    assert share_test(7, 8, 2 / 8, alpha=0.025)["separates"]
    gained_only = [r for r in records if r["baseline_correct"] is False]
    group = validity_summary(gained_only + records[-1:])["groups"][0]
    assert (group["n_gained"], group["n_lost"], group["p_value"]) == (6, 0, 0.5**6)
    assert group["verdict"] == "separates"


def test_a_control_that_cannot_test_its_rule_is_shown_and_counts_neither_way():
    from isqaflow.report.validity import verdict_text

    reason = "the empty text is content-free like the calibration's 'N/A'"
    records = [{**record(f"i{k}", True, rule="calibrated"), "untestable": reason} for k in range(8)]
    records += [
        record(f"i{k}", False, control="other_response", rule="calibrated") for k in range(8)
    ]
    summary = validity_summary(records)
    rows = {g["control"]: g for g in summary["groups"]}
    empty = rows["empty_response"]
    assert empty["no_evidence"] is None and empty["verdict"] == "cannot test this rule"
    assert empty["untestable"] == reason and empty["test"] is None and empty["p_value"] is None
    assert verdict_text(empty) == f"cannot test this rule ({reason}): counts neither way"
    note = validity_note(summary, "DRFR judge")
    assert "empty_response 8/8 correct (100% [63, 100], chance 50%, cannot test this rule)" in note
    assert note.endswith(
        NO_EVIDENCE.upper() + "."
    )  # from other_response, not from the untestable one
    only_untestable = validity_note(validity_summary(records[:8]), "DRFR judge")
    assert NO_EVIDENCE.upper() not in only_untestable


def test_a_group_does_not_depend_on_the_others_or_the_order():
    records = [record(f"i{k}", k % 3 != 0) for k in range(12)]
    alone = validity_summary(records)
    assert alone == validity_summary(records)
    assert alone == validity_summary(list(reversed(records)))
    others = [record(f"j{k}", k % 2 == 0, name="other", rule="calibrated") for k in range(9)]
    together = validity_summary(others + records)
    assert [g for g in together["groups"] if g["name"] == "local"] == alone["groups"]


def test_chance_is_the_baseline_mean_when_the_control_has_a_baseline():
    # the feedback-model control: correct with the inserted evidence vs baseline without it
    records = [
        record(
            f"q{k}",
            True,
            instrument="feedback model",
            name="lora",
            control="gold_evidence",
            chance=0.0,
            baseline=b,
        )
        for k, b in enumerate([True, False, None, False])
    ]
    group = validity_summary(records)["groups"][0]
    assert group["chance"] == pytest.approx(0.25)  # null baseline counts as not correct
    records = [{**r, "baseline_correct": True} for r in records]
    group = validity_summary(records)["groups"][0]
    assert (
        group["chance"] == 1.0 and group["no_evidence"] is True
    )  # no better than without the evidence


def test_rows_are_ordered_by_instrument_then_raw_before_calibrated():
    records = [
        record("a", True, rule="calibrated"),
        record("a", True),
        record("x", True, instrument="arena judge", control="self", chance=1 / 3),
        record(
            "y", False, instrument="QAGS", name="qags", scope="qasper", control="other_abstract"
        ),
    ]
    frame = validity_frame(validity_summary(records))
    # The suites' registry order (isqaflow.suites.INSTRUMENTS): ISQA's metrics, DRFR, the arena.
    assert list(frame.index) == [
        ("QAGS", "qags", "qasper", "other_abstract", "raw"),
        ("DRFR judge", "local", "infobench", "empty_response", "raw"),
        ("DRFR judge", "local", "infobench", "empty_response", "calibrated"),
        ("arena judge", "local", "infobench", "self", "raw"),
    ]
    assert frame.loc[
        ("arena judge", "local", "infobench", "self", "raw"), "chance"
    ] == pytest.approx(1 / 3)


# ------------------------------------------------------------------- the caption note
def test_note_names_each_control_its_accuracy_and_the_missing_evidence():
    records = [record(f"i{k}", False) for k in range(6)]
    records += [record(f"i{k}", True, rule="calibrated") for k in range(6)]
    records += [
        record(f"i{k:02d}", True if k else None, control="other_response", rule="calibrated")
        for k in range(12)
    ]
    summary = validity_summary(records)
    note = validity_note(summary, "DRFR judge")
    assert note.startswith(
        "Controls (known answers; share correct, exact 95% CI, one-sided exact test against chance, "
        "and its Holm adjustment over the instrument's controls): "
    )
    raw, calibrated = note.split(". DRFR judge")
    assert raw.endswith(
        "DRFR judge local on infobench, raw: empty_response 0/6 correct (0% [0, 46], chance 50%, "
        "binomial p = 1.000, Holm 1.000) -- NO EVIDENCE THAT THIS JUDGE SEPARATES BETTER FROM WORSE"
    )
    # Holm over the judge's three tested controls: 2 x 0.016 = 0.031 for the 6/6 control
    assert calibrated.startswith(
        " local on infobench, calibrated: empty_response 6/6 correct (100% [54, 100], "
        "chance 50%, binomial p = 0.016, Holm 0.031); other_response 11/12 correct (92% [62, 100], "
    )
    assert "chance 50%, binomial p = 0.003, Holm 0.010, 1 invalid)" in calibrated
    assert NO_EVIDENCE.upper() not in calibrated
    assert note.endswith(".")
    assert (
        validity_note(summary, "DRFR judge", name="gpt4")
        == "Controls: none recorded for DRFR judge gpt4."
    )
    assert validity_note(summary, "QAGS") == "Controls: none recorded for QAGS."
    with pytest.raises(ValueError, match="unknown instrument 'drfr'"):
        validity_note(summary, "drfr")


def test_note_reads_the_summary_json_as_written(tmp_path):
    paths = [tmp_path / "controls.jsonl"]
    paths[0].write_text("".join(json.dumps(r) + "\n" for r in perfect_and_yes_always()))
    tables = [tmp_path / f"validity.{ext}" for ext in ("csv", "md", "tex")]
    summary = build_validity_table(paths, tables, tmp_path / "summary.json")
    loaded = json.loads((tmp_path / "summary.json").read_text())
    assert loaded == json.loads(json.dumps(summary))
    for name in ("good", "blind", "mumbler"):
        assert validity_note(loaded, "DRFR judge", name) == validity_note(
            summary, "DRFR judge", name
        )
    assert "NO EVIDENCE" not in validity_note(loaded, "DRFR judge", "good")
    assert "NO EVIDENCE" in validity_note(loaded, "DRFR judge", "blind")


# ------------------------------------------------------------------- files
def test_table_files_csv_numbers_md_and_tex_for_reading(tmp_path):
    control_dir = tmp_path / "validity"
    (control_dir / "drfr").mkdir(parents=True)
    records = perfect_and_yes_always()
    (control_dir / "drfr/a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records[:8]))
    (control_dir / "drfr/b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records[8:]))
    (control_dir / "empty.jsonl").write_text("")  # a stage whose controls are switched off
    tables = [tmp_path / f"validity.{ext}" for ext in ("csv", "md", "tex")]
    build_validity_table(sorted(control_dir.rglob("*.jsonl")), tables, tmp_path / "summary.json")
    csv = pd.read_csv(tables[0])
    assert list(csv["name"]) == ["blind", "good", "mumbler"]
    assert list(csv["correct"]) == [0.0, 1.0, 0.5]
    assert list(csv["no_evidence"]) == [True, False, True]
    assert list(csv["n_invalid"]) == [0, 0, 2]
    md = tables[1].read_text()
    # the report's first screen: "blind" and "mumbler" fail, so the DRFR judge cannot rank
    assert md.startswith(
        "The DRFR judge blind cannot rank these systems: it did no better than chance on 1 of its 1 "
        "known-answer controls, so its numbers show what it said, not which system is better. "
        "The DRFR judge mumbler cannot rank these systems: it did no better than chance on 1 of its 1 "
        "known-answer controls, so its numbers show what it said, not which system is better. "
        "Known-answer controls of every judge and metric"
    )
    assert "a perfect instrument needs 6 items at chance 50% to pass" in md
    assert list(csv["p_value"]) == pytest.approx([1.0, 0.5**8, 0.65625])  # P(X >= 3 | 6, 1/2)
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in md.splitlines()[4:]]
    assert rows[1] == [
        "DRFR judge",
        "good",
        "infobench",
        "empty_response",
        "raw",
        "8",
        "0",
        "100.0 [63.1, 100.0]",
        "50.0",
        "separates (exact binomial p = 0.004, Holm 0.004)",
        "correct on 8 of 8 known answers; chance would be 4; this is unlikely by chance (p = 0.004)",
    ]
    assert rows[2][5:7] == ["6", "2"] and rows[2][8] == "50.0"
    lower, upper = map(float, re.fullmatch(r"50\.0 \[([\d.]+), ([\d.]+)\]", rows[2][7]).groups())
    assert lower < 50 < upper
    assert (
        md.count("NO EVIDENCE THAT THIS JUDGE SEPARATES BETTER FROM WORSE") == 3
    )  # caption + 2 rows
    assert r"empty\_response" in tables[2].read_text()


def test_empty_run_writes_an_empty_table(tmp_path):
    (tmp_path / "none.jsonl").write_text("")
    tables = [tmp_path / f"validity.{ext}" for ext in ("csv", "md", "tex")]
    summary = build_validity_table([tmp_path / "none.jsonl"], tables, tmp_path / "summary.json")
    assert summary["groups"] == []
    assert pd.read_csv(tables[0]).empty
    assert validity_note(summary, "arena judge") == "Controls: none recorded for arena judge."


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"instrument": "judge"}, r"field 'instrument': 'judge' is not one of"),
        ({"rule": "balanced"}, r"field 'rule': 'balanced' is not one of"),
        ({"correct": "yes"}, r"field 'correct': must be true, false or null"),
        ({"chance": 1.5}, r"field 'chance': 1.5 is not a number between 0 and 1"),
        ({"chance": None}, r"field 'chance': None is not a number"),
        ({"scope": ""}, r"field 'scope': missing or not a non-empty string"),
        ({"detail": [1]}, r"field 'detail': must be an object"),
        ({"untestable": ""}, r"field 'untestable': must be null or a non-empty sentence"),
    ],
)
def test_a_record_off_the_contract_is_named_by_file_line_item_and_field(tmp_path, change, message):
    path = tmp_path / "controls.jsonl"
    path.write_text(
        json.dumps(record("i0", True)) + "\n" + json.dumps({**record("i1", True), **change}) + "\n"
    )
    with pytest.raises(RecordError, match=rf"controls\.jsonl, line 2, record 'i1', {message}"):
        read_control_records([path])


def test_a_missing_field_and_a_duplicate_item_are_errors(tmp_path):
    path = tmp_path / "controls.jsonl"
    missing = record("i0", True)
    del missing["outcome"]
    path.write_text(json.dumps(missing) + "\n")
    with pytest.raises(RecordError, match="line 1, record 'i0', field 'outcome': missing"):
        read_control_records([path])
    other = tmp_path / "other.jsonl"
    path.write_text(json.dumps(record("i0", True)) + "\n")
    other.write_text(json.dumps(record("i0", False)) + "\n")
    with pytest.raises(
        RecordError,
        match=r"other\.jsonl, line 1, record 'i0', field 'item': control item "
        r"recorded twice \(first at .*controls\.jsonl, line 1\)",
    ):
        read_control_records([path, other])
    # the same item under the other rule is a record of its own
    other.write_text(json.dumps(record("i0", True, rule="calibrated")) + "\n")
    assert len(read_control_records([path, other])) == 2


# ------------------------------------------------------------------- place in the workflow
def test_report_floor_does_not_import_the_stages():
    stages = ("isqaflow.isqa", "isqaflow.drfr", "isqaflow.arena", "isqaflow.metrics")
    assert not [m for m in dependencies("isqaflow.report.validity") if m.startswith(stages)]
    assert "isqaflow.stats" in dependencies("isqaflow.report.validity")


def test_validity_category_comes_first_in_the_report_menu():
    """Snakemake's report lists categories sorted with JavaScript's localeCompare (case-insensitive
    at the first level); the validity table's category must sort before every other."""
    common = (REPO / "rules/common.smk").read_text()
    validity = re.search(r'^VALIDITY_CATEGORY = "([^"]+)"', common, re.MULTILINE).group(1)
    assert "category=VALIDITY_CATEGORY" in (REPO / "rules/validity.smk").read_text()
    others = {
        c
        for path in (REPO / "rules").rglob("*.smk")
        for c in re.findall(r'category="([^"]+)"', path.read_text())
    }
    assert others and validity not in others
    assert all(validity.casefold() < other.casefold() for other in others), sorted(others)


def test_a_control_with_chance_100_percent_is_a_consistency_check():
    """The arena's answer against itself in both orders: every deterministic judge ties, so the
    control cannot show separation; it is reported but neither raises nor clears the flag."""
    from isqaflow.report.validity import validity_note

    selfish = [
        {
            "instrument": "arena judge",
            "name": "local",
            "scope": "d",
            "control": "self",
            "rule": "raw",
            "item": f"s{k}",
            "expected": "tie",
            "outcome": "tie",
            "correct": True,
            "chance": 1.0,
            "baseline_correct": None,
            "detail": {},
        }
        for k in range(4)
    ]
    winning = [
        {
            **r,
            "control": "no_answer",
            "item": f"n{k}",
            "expected": "a",
            "outcome": "a",
            "chance": 0.5,
        }
        for k, r in enumerate(selfish * 2)
    ]
    summary = validity_summary(selfish + winning)
    rows = {g["control"]: g for g in summary["groups"]}
    assert rows["self"]["no_evidence"] is None and rows["no_answer"]["no_evidence"] is False
    assert "NO EVIDENCE" not in validity_note(summary, "arena judge")


def test_table_shows_the_mcnemar_counts_as_integers(tmp_path):
    pairs = [(True, False)] * 6 + [(False, False)]
    records = [
        record(
            f"q{k}",
            after,
            instrument="feedback model",
            name="lora",
            control="gold_evidence",
            chance=float(before),
            baseline=before,
        )
        for k, (after, before) in enumerate(pairs)
    ]
    records += [record(f"i{k}", True) for k in range(3)]  # a group without McNemar counts
    path = tmp_path / "controls.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    tables = [tmp_path / f"validity.{ext}" for ext in ("csv", "md")]
    build_validity_table([path], tables, tmp_path / "summary.json")
    md = tables[1].read_text()
    assert "separates (exact McNemar p = 0.016, Holm 0.016: 6 gained, 0 lost)" in md
    assert "too few to show it: a perfect instrument needs 6 items)" in md


def test_the_verdicts_read_in_plain_words_with_the_correction_for_the_judges_controls():
    """Four controls of one judge: 12 of 15 right passes alone (p = 0.018 < 0.025) but not
    after Holm over the four (4 x 0.018 > 0.025); 3 of 6 is chance; 3 of 3 is too few."""
    from isqaflow.report.validity import _shown_frame, plain_verdict, validity_frame

    records = [record(f"a{k}", k < 12, control="a") for k in range(15)]
    records += [record(f"b{k}", k < 3, control="b") for k in range(6)]
    records += [record(f"c{k}", k < 3, control="c") for k in range(6)]
    records += [record(f"d{k}", True, control="d") for k in range(3)]
    summary = validity_summary(records)
    rows = {row["control"]: row for row in summary["groups"]}
    assert rows["a"]["verdict"] == "separates" and rows["a"]["p_holm"] > 0.025
    assert plain_verdict(rows["a"], 4) == (
        "correct on 12 of 15 known answers; chance would be 7.5; this is unlikely by chance "
        "(p = 0.018), but not after correcting for the 4 controls of this judge"
    )
    assert plain_verdict(rows["b"], 4) == (
        "correct on 3 of 6 known answers; chance would be 3; this could well be chance "
        "(p = 0.656): no evidence that this judge tells better from worse"
    )
    assert plain_verdict(rows["d"], 4) == (
        "correct on 3 of 3 known answers; chance would be 1.5; this could well be chance "
        "(p = 0.125), and even a perfect judge would need 6 known answers to show otherwise: "
        "no evidence that this judge tells better from worse"
    )
    alone = validity_summary([record(f"e{k}", True) for k in range(6)])["groups"][0]
    assert plain_verdict(alone, 1) == (
        "correct on 6 of 6 known answers; chance would be 3; this is unlikely by chance (p = 0.016)"
    )
    shown = _shown_frame(validity_frame(summary))
    assert list(shown["in plain words"]) == [plain_verdict(rows[c], 4) for c in "abcd"]


def test_a_judge_that_fails_a_control_cannot_rank_and_says_so_in_one_sentence():
    from isqaflow.report.validity import cannot_rank

    passing = [record(f"a{k}", True, control="a") for k in range(6)]
    failing = [record(f"b{k}", k < 3, control="b") for k in range(6)]
    assert cannot_rank(validity_summary(passing), "DRFR judge") == ""
    assert cannot_rank(validity_summary(passing), "arena judge") == ""  # none recorded
    assert cannot_rank(validity_summary(passing + failing), "DRFR judge") == (
        "The DRFR judge local cannot rank these systems: it did no better than chance on 1 of its 2 "
        "known-answer controls, so its numbers show what it said, not which system is better."
    )
