"""Exact reruns: after a finished run, an edit of one input plans exactly the jobs that read
it (and what reads their outputs), and one run brings everything up to date.

The finished run is the embedded default's DAG with every output present and touched in
order (``snakemake --touch`` records each job's metadata -- params, code, input set -- as a
run does), so the test takes a minute, not the embedded run's many.  Each case edits one kind
of input (data, a system's file, the human labels, the controls, a judge's config section,
the labels switched off), checks the planned rules, "runs" them (``--touch``) and checks
that the next dry run plans nothing: an input that reaches a job through ``params`` or an
``ancient()`` input that hides a change needs two runs, and this fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from workflow_utils import complete_placeholder_copy, dry_run_jobs, snakemake

pytestmark = pytest.mark.slow

# what every edit replans besides its own jobs: the leaderboard and the manifest read every
# table and checksum, the report's HTML tables and the target
ALWAYS = {"leaderboard", "manifest", "table_html", "all"}

LABELS = "data/embedded/lfrqa/human_pairwise.csv"


def _with_config(workdir: Path, name: str, change) -> list[str]:
    config = yaml.safe_load((workdir / "config/config.yaml").read_text())
    change(config)
    (workdir / f"config/{name}.yaml").write_text(yaml.safe_dump(config))
    return ["--configfile", f"config/{name}.yaml"]


def _touch(workdir: Path, *args: str) -> None:
    result = snakemake(workdir, "--touch", "--profile", "profiles/local", "--cores", "2", *args)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A copy of the repository whose embedded DAG is complete (every output written, then
    touched in the DAG's order)."""
    return complete_placeholder_copy(tmp_path_factory.mktemp("exact"))


def _append(relative: str):
    def edit(workdir: Path) -> list[str]:
        path = workdir / relative
        path.write_bytes(path.read_bytes() + b"\n")  # new content, new checksum
        return []

    return edit


def _config(name: str, change):
    return lambda workdir: _with_config(workdir, name, change)


def _per_domain(config):
    config["validity"]["arena"]["per_domain"] = 1


def _drfr_judge_repeats(config):
    judge = next(iter(config["drfr"]["judges"]))
    config["drfr"]["judges"][judge]["repeats"] = 2


def _labels_off(config):
    config["datasets"]["rag"]["human_labels"] = None


# the arena's known-answer controls (and the human pairs, judged in the same job) and every
# table that reads them
ARENA_CHECKS = {
    "arena_judge_checks": 2,
    "arena_tables": 1,
    "arena_browser": 1,
    "validity_table": 1,
    "judge_audit": 1,
    "paired_tests": 1,
}
# input kind -> (the edit, {rule: jobs planned}) -- the table of issue 39's closing note
CASES = {
    "data: InfoBench instructions": (
        _append("data/embedded/infobench/InfoBench-embedded.json"),
        {
            "convert_instructions": 1,
            "check_drfr_human_labels": 1,  # the labels are checked against the instructions
            "file_responses": 1,
            "drfr_responses": 2,
            "drfr_judge": 1,
            "check_systems": 1,
            "validity_table": 1,
            "drfr_tables": 1,
            "drfr_browser": 1,
            "paired_tests": 1,
            "judge_audit": 1,
        },
    ),
    "system file: arena answers": (
        _append("data/embedded/systems/answers-handwritten.jsonl"),
        {
            "file_answers": 1,
            "check_systems": 1,
            "arena_judge": 2,
            "arena_tables": 1,
            "arena_browser": 1,
            "paired_tests": 1,
            "judge_audit": 1,
        },
    ),
    "human labels: one edit": (
        _append(LABELS),
        {
            "check_human_labels": 1,
            "arena_judge_checks": 2,
            "arena_tables": 1,
            "arena_browser": 1,
            "validity_table": 1,
            "judge_audit": 1,
            "paired_tests": 1,
        },
    ),
    "human labels: one DRFR edit": (
        _append("data/embedded/infobench/human-labels-handwritten.jsonl"),
        {"check_drfr_human_labels": 1, "drfr_tables": 1},
    ),
    "controls: validity.arena.per_domain": (
        _config("per_domain", _per_domain),
        ARENA_CHECKS,
    ),
    "config section: a DRFR judge's repeats": (
        _config("drfr_repeats", _drfr_judge_repeats),
        {
            "drfr_judge": 1,
            "drfr_tables": 1,
            "drfr_browser": 1,
            "validity_table": 1,
            "judge_audit": 1,
            "paired_tests": 1,
        },
    ),
    "human labels: switched off": (
        _config("labels_off", _labels_off),
        ARENA_CHECKS,
    ),
}


@pytest.mark.parametrize("kind", list(CASES))
def test_an_edited_input_reruns_exactly_its_readers_in_one_run(finished, kind):
    edit, expected = CASES[kind]
    args = edit(finished)
    jobs = dry_run_jobs(finished, *args)
    _touch(finished, *args)  # the run
    after = dry_run_jobs(finished, *args)
    if args:
        _touch(finished)  # back to the default config for the next case
    planned = {rule: n for rule, n in jobs.items() if rule not in ALWAYS}
    print(f"{kind}: {planned}")
    assert planned == expected, jobs
    assert after == {}  # one run brought every output up to date


SECRET = "sk-proj-PLANTED0123456789abcdef"


def _remote_judge(config):
    """A DRFR judge behind an endpoint that takes its key in the query string."""
    config["models"]["remote"] = {
        "backend": "openai",
        "model": "gpt-4o-mini",
        "base_url": f"https://proxy.example/v1?api-key={SECRET}",
    }
    judge = next(iter(config["drfr"]["judges"]))
    config["drfr"]["judges"][judge]["model"] = "remote"


def _everywhere(node):
    """``node`` with the key planted into every string."""
    if isinstance(node, dict):
        return {k: _everywhere(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_everywhere(v) for v in node]
    return f"x {SECRET} x" if isinstance(node, str) else node


def test_no_planted_secret_reaches_any_output_snakemakes_included(finished):
    """A key in a model's base_url: the dry run's job listing ("Params have changed ..."), the
    list of changed params, the summary and a (touch) run print it nowhere, and Snakemake's
    metadata and logs do not store it; a key in every other field: refused, unshown."""
    args = _with_config(finished, "secret", _remote_judge)
    printed = []
    for extra in ([], ["--list-changes", "params"], ["--summary"], ["--detailed-summary"]):
        result = snakemake(finished, "-n", "--profile", "profiles/local", *args, *extra)
        assert result.returncode == 0, result.stderr[-3000:]
        printed.append(result.stdout + result.stderr)
    assert "drfr_judge" in printed[0] and "Params have changed" in printed[0]
    run = snakemake(finished, "--touch", "--profile", "profiles/local", *args)
    printed.append(run.stdout + run.stderr)
    _touch(finished)  # back to the default config
    assert not [text for text in printed if "PLANTED0123456789" in text]
    stored = [
        path
        for path in (finished / ".snakemake").rglob("*")
        if path.is_file() and b"PLANTED0123456789" in path.read_bytes()
    ]
    assert stored == []

    config = _everywhere(yaml.safe_load((finished / "config/config.yaml").read_text()))
    (finished / "config/everywhere.yaml").write_text(yaml.safe_dump(config))
    refused = snakemake(finished, "-n", "--configfile", "config/everywhere.yaml")
    assert refused.returncode != 0
    assert "PLANTED0123456789" not in refused.stdout + refused.stderr


def _results(workdir: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(workdir)): p.read_bytes()
        for p in sorted((workdir / "results").rglob("*"))
        if p.is_file()
    }


def test_a_dry_run_changes_no_file_in_results(finished):
    """With an API model the dry run prints the spend plan, reading every call cache of the
    finished run: the results folder's listing and bytes are the same after it."""
    from isqaflow.models.cache import CallCache

    judged = sorted((finished / "results/drfr/judgments").rglob("*.jsonl"))[0]
    CallCache(judged.with_name(judged.name + ".calls.sqlite")).conn.close()
    args = _with_config(finished, "api_judge", _remote_judge)
    before = _results(finished)
    result = snakemake(finished, "-n", "--profile", "profiles/local", *args)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "spend" in (result.stdout + result.stderr).lower()  # the plan was made
    assert _results(finished) == before
