"""The config of systems read from files: checked with the rest of the config (config
path named, before any job), and wired into the DAG like the models (dry runs)."""

from __future__ import annotations

import copy

import yaml
from workflow_utils import REPO, copy_repo, dry_run_jobs

from isqaflow.configcheck import check_config

EMBEDDED = yaml.safe_load((REPO / "config/config.yaml").read_text())


def problems_of(change):
    config = copy.deepcopy(EMBEDDED)
    change(config)
    return [(p.path, p.message) for p in check_config(config, REPO, {})]


def test_the_embedded_config_has_a_file_based_system_in_every_suite():
    assert "file" in EMBEDDED["arena"]["answerers"]["handwritten"]
    assert "file" in EMBEDDED["drfr"]["responders"]["handwritten"]
    assert EMBEDDED["isqa"]["file_summaries"]["handwritten"]["dataset"] == "qasper"
    assert check_config(EMBEDDED, REPO, {}) == []


def test_a_missing_file_stops_the_dag_naming_it(tmp_path):
    """Like a dataset's raw file: Snakemake's missing input, when the DAG is built."""
    from workflow_utils import snakemake

    repo = copy_repo(tmp_path / "repo")
    config = copy.deepcopy(EMBEDDED)
    config["arena"]["answerers"]["handwritten"]["file"] = "data/nowhere.jsonl"
    (repo / "config/missing.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(repo, "-n", "--configfile", "config/missing.yaml", timeout=300)
    assert result.returncode != 0
    assert "data/nowhere.jsonl" in result.stdout + result.stderr


def test_file_summaries_need_a_paper_dataset_and_their_own_name():
    def change(config):
        config["isqa"]["file_summaries"]["handwritten"]["dataset"] = "qaspr"
        config["isqa"]["file_summaries"]["smollm2"] = {"file": "data/embedded/systems/summaries-handwritten.jsonl",
                                                        "dataset": "qasper"}

    paths = [p for p, _ in problems_of(change)]
    assert "isqa.file_summaries.handwritten.dataset" in paths
    assert "isqa.file_summaries.smollm2" in paths


def test_judged_systems_may_name_a_file_based_summarizer():
    def change(config):
        config["isqa"]["judged_systems"] = ["baseline_2", "handwritten", "handwriten"]

    problems = problems_of(change)
    assert [p for p, _ in problems] == ["isqa.judged_systems[2]"]
    assert "did you mean 'handwritten'" in problems[0][1]


def test_the_dag_treats_file_systems_like_models(tmp_path):
    """Dry run of the embedded config: each file-based system's outputs come from its
    import rule, the judges and scorers see them, the leaderboard lists them; without
    file-based systems there is no import and no check job."""
    repo = copy_repo(tmp_path / "repo")
    jobs = dry_run_jobs(repo)
    for rule in ("file_answers", "file_responses", "file_summaries", "check_systems", "leaderboard"):
        assert jobs[rule] == 1, rule
    assert jobs["rag_answers"] == 2 and jobs["drfr_responses"] == 2  # the models only
    assert jobs["score_summaries"] == 2 and jobs["drfr_summaries"] == 2 and jobs["arena_summaries"] == 2
    config = copy.deepcopy(EMBEDDED)
    del config["arena"]["answerers"]["handwritten"], config["drfr"]["responders"]["handwritten"]
    config["isqa"]["file_summaries"] = {}
    config["isqa"]["judged_systems"] = ["baseline_2", "isqa-lora-human"]
    (repo / "config/models_only.yaml").write_text(yaml.safe_dump(config))
    jobs = dry_run_jobs(repo, "--configfile", "config/models_only.yaml")
    assert not {"file_answers", "file_responses", "file_summaries", "check_systems"} & set(jobs)
    assert jobs["leaderboard"] == 1 and jobs["score_summaries"] == 1
