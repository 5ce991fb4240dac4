"""The arena stage as the workflow plans it (dry runs, seconds each): configuration errors
fail before any job, naming the judge; every judge's checks job writes its control records,
and the human-labelled pairs only when the config has human labels."""

from __future__ import annotations

import yaml
from workflow_utils import REPO, snakemake


def config_with(tmp_path, change) -> str:
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    change(config)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_calibrated_rule_with_a_text_judge_fails_naming_the_judge(tmp_path):
    def change(config):
        config["arena"]["judges"]["api"] = {
            "model": "smollm2",
            "mode": "text",
            "rule": "calibrated",
        }

    result = snakemake(REPO, "-n", "--cores", "1", "--configfile", config_with(tmp_path, change))
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert (
        "arena.judges.api: rule 'calibrated' needs the label log-probabilities (mode: logprob)"
        in output
    )
    assert "this judge has mode 'text'" in output


def test_calibrated_rule_with_one_random_order_fails(tmp_path):
    def change(config):
        config["arena"]["orders"] = "random"

    result = snakemake(REPO, "-n", "--cores", "1", "--configfile", config_with(tmp_path, change))
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "arena.judges.local: rule 'calibrated' averages the margins of both orders" in output


def planned(tmp_path, change=None, *targets) -> tuple[int, str]:
    args = [*targets, "-n", "--cores", "1"]  # targets first: --configfile takes several values
    if change:
        args += ["--configfile", config_with(tmp_path, change)]
    result = snakemake(REPO, *args)
    return result.returncode, result.stdout + result.stderr


def test_every_judge_writes_its_control_records_with_the_human_pairs(tmp_path):
    code, output = planned(tmp_path)
    assert code == 0, output[-3000:]
    job = output.split("rule arena_judge_checks:", 1)[1].split("\n\n", 1)[0]
    assert (
        "results/validity/arena/local.jsonl" in job and "results/arena/agreement/local.jsonl" in job
    )
    assert "rule arena_human_pairs" not in output


def test_without_human_labels_the_checks_write_the_controls_only(tmp_path):
    def change(config):
        config["datasets"]["rag"]["human_labels"] = None

    code, output = planned(tmp_path, change, "results/validity/arena/local.jsonl")
    assert code == 0, output[-3000:]
    job = output.split("rule arena_judge_checks:", 1)[1].split("\n\n", 1)[0]
    assert "results/arena/agreement/local.jsonl" not in job
    code, output = planned(tmp_path, change, "results/arena/agreement/local.jsonl")
    assert code != 0 and "No rule to produce results/arena/agreement/local.jsonl" in output


def test_controls_switched_off_leave_the_validity_files_out_of_the_targets(tmp_path):
    def change(config):
        config["validity"]["arena"]["controls"] = []
        config["datasets"]["rag"]["human_labels"] = None

    code, output = planned(tmp_path, change)
    assert code == 0, output[-3000:]
    assert "rule arena_judge_checks:" not in output
