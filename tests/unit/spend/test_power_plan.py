"""The power section of the spend plan (isqaflow.spend.power): per suite and setting, the MDE at
the config's n and the n a named difference needs, before any job."""

from __future__ import annotations

import copy
import csv
import math
from pathlib import Path

import pytest
import yaml
from snakemake.utils import validate

from isqaflow.power import z_sum
from isqaflow.spend import power

ROOT = Path(__file__).resolve().parents[3]
PAPER = yaml.safe_load((ROOT / "config/paper.yaml").read_text())


def validated(config: dict) -> dict:
    config = copy.deepcopy(config)
    validate(config, str(ROOT / "config/schema.yaml"))
    return config


def test_the_schema_fills_the_power_defaults():
    config = validated(PAPER)
    assert config["power"] == {
        "target_difference": None,
        "alpha": 0.05,
        "power": 0.8,
        "prior_sd": {"drfr": 0.55, "arena": 0.6, "isqa": 0.15},
    }


def test_the_paper_grid_gets_an_mde_per_suite_from_its_declared_sizes():
    config = validated(PAPER)
    lines = {(line.size.suite, line.size.setting): line for line in power.power_lines(config)}
    drfr = lines[("drfr", "infobench")]
    requirements = PAPER["spend"]["items"]["instructions"]["infobench"]["requirements"]
    assert drfr.size.n == requirements and drfr.size.basis == "declared"
    assert drfr.size.comparisons == math.comb(len(PAPER["drfr"]["responders"]), 2) * len(
        PAPER["drfr"]["judges"]
    )
    assert drfr.mde == pytest.approx(z_sum() * 0.55 / math.sqrt(requirements))
    arena = next(line for (suite, _), line in lines.items() if suite == "arena")
    queries = sum(PAPER["spend"]["items"]["rag"][d]["queries"] for d in PAPER["arena"]["domains"])
    assert arena.size.n == queries and arena.mde == pytest.approx(
        z_sum() * 0.6 / math.sqrt(queries)
    )
    isqa = lines[("isqa", "qasper")]
    assert isqa.size.n == PAPER["spend"]["items"]["papers"]["qasper"]["papers"]
    assert all(line.n_needed is None for line in lines.values())  # no target named
    text = power.power_text(config, list(lines.values()))
    assert f"drfr infobench: {drfr.size.comparisons} paired comparisons" in text
    assert (
        f"n = {requirements} decomposed questions (declared): MDE {100 * drfr.mde:.1f} points"
        in text
    )


def test_a_named_difference_gets_its_n_and_the_suites_cost_at_that_n(monkeypatch):
    config = validated(PAPER)
    config["power"]["target_difference"] = 0.02
    # the suites' API dollars and GPU hours of this plan (the real plan takes minutes)
    monkeypatch.setattr(
        power,
        "_suite_costs",
        lambda config, root: {
            "drfr": (90.0, (2.0, 3.0)),
            "arena": (None, None),
            "isqa": (None, (8.0, 8.0)),
        },
    )
    lines = {(line.size.suite, line.size.setting): line for line in power.power_lines(config)}
    drfr = lines[("drfr", "infobench")]
    assert drfr.n_needed == math.ceil((z_sum() * 0.55 / 0.02) ** 2)  # 5,931
    factor = drfr.n_needed / drfr.size.n
    assert drfr.dollars == pytest.approx(90.0 * factor)
    assert drfr.gpu_hours == pytest.approx((2.0 * factor, 3.0 * factor))
    text = power.power_text(config, list(lines.values()))
    assert (
        f"2.0 points needs n = {drfr.n_needed} (more items than this run has; at that n: " in text
    )
    assert f"${90 * factor:,.2f} API, {2 * factor:,.1f}-{3 * factor:,.1f} GPU hours" in text
    isqa = lines[("isqa", "qasper")]
    assert isqa.n_needed == math.ceil((z_sum() * 0.15 / 0.02) ** 2) and isqa.dollars is None
    assert "(this n suffices; at that n: " in text


def test_a_previous_runs_paired_tests_give_the_sd(tmp_path):
    config = validated(PAPER)
    table = tmp_path / power.PREVIOUS_RUN
    table.parent.mkdir(parents=True)
    with open(table, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["suite", "n", "mde"])
        writer.writeheader()
        writer.writerow({"suite": "drfr", "n": 100, "mde": z_sum() * 0.3 / 10})  # sd 0.3
        writer.writerow({"suite": "drfr", "n": 25, "mde": z_sum() * 0.4 / 5})  # sd 0.4: the largest
        writer.writerow({"suite": "drfr", "n": 3, "mde": ""})  # no test
        writer.writerow({"suite": "arena", "n": 50, "mde": "nan"})  # never discordant
    lines = {line.size.suite: line for line in power.power_lines(config, root=tmp_path)}
    assert lines["drfr"].sd == pytest.approx(0.4) and "previous run" in lines["drfr"].sd_basis
    assert lines["arena"].sd == 0.6 and lines["arena"].sd_basis == "prior (power.prior_sd)"


def test_a_size_neither_converted_nor_declared_is_named_not_guessed():
    config = validated(PAPER)
    del config["spend"]["items"]["rag"]["fiqa"]
    config["power"]["target_difference"] = 0.05
    arena = next(
        line for line in power.power_lines(config, costs=False) if line.size.suite == "arena"
    )
    assert arena.size.n is None and math.isnan(arena.mde)
    text = power.power_text(config, [arena])
    assert "n unknown (fiqa not converted yet and spend.items.rag.fiqa declares no size)" in text
    assert "n of this run unknown" in text


def test_a_converted_file_that_cannot_be_read_leaves_n_unknown_and_names_it(tmp_path):
    """Before: a placeholder in results/data/instructions/ stopped every dry run inside the power
    lines (a RecordError from the DAG build), though they only inform."""
    config = validated(PAPER)
    converted = tmp_path / "results/data/instructions/infobench.jsonl"
    converted.parent.mkdir(parents=True)
    converted.write_text("placeholder\n")
    drfr = next(
        line
        for line in power.power_lines(config, root=tmp_path, costs=False)
        if line.size.suite == "drfr"
    )
    assert drfr.size.n is None and math.isnan(drfr.mde)
    assert "infobench: its converted file cannot be read" in drfr.size.basis
    assert "not valid JSON" in drfr.size.basis
