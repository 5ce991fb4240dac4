"""`make report` builds the report of the last run (its config files and targets), never
runs the workflow, and refuses, naming what is missing, where there is no run to report."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from isqaflow.report.last_run import (
    RECORD,
    NoRecordedRun,
    main,
    read_record,
    record_run,
    report_command,
)

REPO = Path(__file__).resolve().parents[3]


def test_the_report_command_is_the_last_runs_config_files_and_targets(tmp_path):
    (tmp_path / "mine.yaml").write_text("arena: {}\n")
    record_run(tmp_path, [tmp_path / "mine.yaml"], {"arena"}, ["snakemake", "arena"])
    command = report_command(tmp_path, "r.html", ["--profile", "profiles/local"])
    assert command == [
        sys.executable,
        "-m",
        "snakemake",
        "arena",  # targets first: words after --configfile are read as config files
        "--profile",
        "profiles/local",
        "--configfile",
        str((tmp_path / "mine.yaml").resolve()),
        "--report",
        "r.html",
    ]
    record_run(tmp_path, [], set())  # a later run of the default replaces the record
    assert report_command(tmp_path)[3:] == ["--report", "report.html"]


def test_no_recorded_run_is_refused_naming_the_record(tmp_path, capsys, monkeypatch):
    with pytest.raises(NoRecordedRun, match=re.escape(str(tmp_path / RECORD))):
        read_record(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["--report", "r.html"]) == 1  # nothing run, no report written
    assert "never runs it" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_a_recorded_overlay_that_is_gone_is_named(tmp_path):
    overlay = tmp_path / "mine.yaml"
    overlay.write_text("arena: {}\n")
    record_run(tmp_path, [overlay], set(), ["snakemake", "--configfile", "mine.yaml"])
    overlay.unlink()
    with pytest.raises(NoRecordedRun, match=f"config file {re.escape(str(overlay))}, which no"):
        report_command(tmp_path)
    assert json.loads((tmp_path / RECORD).read_text())["command"].endswith("mine.yaml")


def test_make_report_never_runs_the_workflow():
    """Before: `report: run`, and `make run` is a plain snakemake of the embedded default."""
    makefile = (REPO / "Makefile").read_text()
    rule = re.search(r"^report:(.*)\n((?:\t.*\n)+)", makefile, re.M)
    assert "run" not in rule.group(1).split()
    assert "isqaflow.report.last_run" in rule.group(2)
    assert "snakemake" not in rule.group(2).replace("isqaflow.report.last_run", "")


def test_a_run_records_its_overlay_and_targets_when_it_starts(tmp_path):
    """One cheap job (a domain's conversion) with an overlay: the record names both."""
    from workflow_utils import copy_repo, snakemake

    repo = copy_repo(tmp_path / "repo")
    (repo / "mine.yaml").write_text("arena:\n  answerers: {handwritten: null}\n")
    target = "results/data/rag/fiqa/queries.jsonl"
    result = snakemake(
        repo, "--profile", "profiles/local", "--cores", "1", target, "--configfile", "mine.yaml"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    record = read_record(repo)
    assert record["configfiles"] == [str(repo / "mine.yaml")]
    assert record["targets"] == [target]
    dry = snakemake(repo, "-n", "--profile", "profiles/local", target)  # a dry run: no record
    assert dry.returncode == 0 and read_record(repo)["started"] == record["started"]
