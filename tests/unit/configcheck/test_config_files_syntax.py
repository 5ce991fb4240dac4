"""What Snakemake says badly about the --configfile words: a target after the option, a YAML
syntax error, a missing file (isqaflow.configcheck.files; issue 41 item 7)."""

from __future__ import annotations

import subprocess
import sys

from workflow_utils import copy_repo, snakemake

from isqaflow.configcheck.files import misplaced_targets, syntax_problems


def test_a_yaml_error_names_the_file_line_and_column(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.yaml").write_text("arena:\n  answerers: {my-rag: {file: x}\n")
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    found = [str(p) for p in syntax_problems(["mine.yaml", "list.yaml", "nope.yaml", "arena"])]
    assert found == [
        "--configfile: 'arena' was read as a config file (Snakemake takes every word after "
        "--configfile as one): put targets first, `snakemake arena --configfile <your config "
        "files>`",
        "--configfile: mine.yaml, line 3, column 1: not valid YAML: expected ',' or '}', but "
        "got '<stream end>' (while parsing a flow mapping)",
        "--configfile: list.yaml: a config file is a mapping of sections, got list",
        "--configfile: nope.yaml: no such file",
    ]
    result = subprocess.run(
        [sys.executable, "-m", "isqaflow.configcheck", "mine.yaml"], capture_output=True, text=True
    )
    assert result.returncode == 1 and "mine.yaml, line 3, column 1" in result.stderr


def test_outputs_and_non_config_files_are_targets(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    words = ["results/systems/checked.json", "arena", "mine.yaml", str(tmp_path / "logs/x.json")]
    assert [p.message.split("'")[1] for p in misplaced_targets(words)] == [
        "results/systems/checked.json",
        "arena",
        "logs/x.json",
    ]


def test_a_target_after_configfile_is_named_before_the_schema(tmp_path):
    """Before: an existing result file after --configfile merged into the config, and the
    schema listed the valid top-level keys."""
    repo = copy_repo(tmp_path / "repo")
    (repo / "mine.yaml").write_text("arena:\n  answerers: {handwritten: null}\n")
    (repo / "results/systems").mkdir(parents=True)
    (repo / "results/systems/checked.json").write_text('{"handwritten": {}}\n')
    result = snakemake(
        repo,
        "-n",
        "--profile",
        "profiles/local",
        "--configfile",
        "mine.yaml",
        "results/systems/checked.json",
    )
    text = result.stdout + result.stderr
    assert result.returncode == 1
    assert "'results/systems/checked.json' was read as a config file" in text
    assert "put targets first" in text and "valid keys here" not in text


def test_a_yaml_error_in_the_embedded_default_names_its_file_and_line(tmp_path):
    """Before: Snakemake's `configfile:` said "Config file is not valid JSON or YAML", naming
    neither the file nor the line."""
    repo = copy_repo(tmp_path / "repo")
    config = repo / "config/config.yaml"
    lines = config.read_text().count("\n")
    config.write_text(config.read_text() + "extra: [1, 2\n")
    result = snakemake(repo, "-n", "--profile", "profiles/local")
    text = result.stdout + result.stderr
    assert result.returncode == 1
    assert (
        f"file: config/config.yaml, line {lines + 2}, column 1: not valid YAML: expected ',' or "
        "']', but got '<stream end>' (while parsing a flow sequence)"
    ) in text
    assert "not valid JSON or YAML" not in text
