"""The arena stage as the workflow plans it (dry runs, seconds): configuration errors fail
before any job, naming the judge."""

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
        config["arena"]["judges"]["api"] = {"model": "smollm2", "mode": "text", "rule": "calibrated"}

    result = snakemake(REPO, "-n", "--cores", "1", "--configfile", config_with(tmp_path, change))
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "arena.judges.api: rule 'calibrated' needs the label log-probabilities (mode: logprob)" in output
    assert "this judge has mode 'text'" in output


def test_calibrated_rule_with_one_random_order_fails(tmp_path):
    def change(config):
        config["arena"]["orders"] = "random"

    result = snakemake(REPO, "-n", "--cores", "1", "--configfile", config_with(tmp_path, change))
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "arena.judges.local: rule 'calibrated' averages the margins of both orders" in output
