"""The config of systems read from files: checked with the rest of the config (config
path named, before any job), and wired into the DAG like the models (dry runs)."""

from __future__ import annotations

import copy

import pytest
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


def file_problems(change, workdir=REPO, environ=None):
    config = copy.deepcopy(EMBEDDED)
    change(config)
    return [
        (p.path, p.message)
        for p in check_config(config, workdir, environ or {})
        if p.path.endswith(".file")
    ]


def set_file(section, key, name, value):
    return lambda config: config[section][key][name].update(file=value)


def test_a_misspelled_file_is_a_config_problem_naming_key_path_and_resolved_path():
    problems = file_problems(
        set_file(
            "arena", "answerers", "handwritten", "data/embedded/systems/answers-handwriten.jsonl"
        )
    )
    assert len(problems) == 1
    path, message = problems[0]
    assert path == "arena.answerers.handwritten.file"
    assert "'data/embedded/systems/answers-handwriten.jsonl'" in message
    assert f"resolved to {REPO}/data/embedded/systems/answers-handwriten.jsonl" in message
    assert "did you mean 'data/embedded/systems/answers-handwritten.jsonl'?" in message


def test_a_missing_folder_is_named():
    _, message = file_problems(
        set_file("drfr", "responders", "handwritten", "outputs/mine/model_outputs.json")
    )[0]
    assert f"its folder {REPO}/outputs does not exist" in message


def test_a_path_relative_to_the_folder_the_command_was_started_in(tmp_path):
    """Written relative to where the user stands (PWD), read from the workflow's folder."""
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs/answers.jsonl").write_text("{}\n")
    problems = file_problems(
        set_file("arena", "answerers", "handwritten", "runs/answers.jsonl"),
        environ={"PWD": str(tmp_path)},
    )
    [(path, message)] = problems
    assert path == "arena.answerers.handwritten.file"
    assert f"read from the workflow's folder {REPO}" in message
    assert (
        f"it exists relative to {tmp_path}, where the command was started: write {tmp_path}/runs/answers.jsonl"
        in message
    )


def test_a_folder_or_glob_must_name_prediction_files(tmp_path):
    """A folder (its *.json files) or a glob: RAG-QA Arena's per-domain files; none is an error."""
    (tmp_path / "preds").mkdir()
    (tmp_path / "preds/notes.txt").write_text("x")
    [(path, message)] = file_problems(
        set_file("arena", "answerers", "handwritten", str(tmp_path / "preds"))
    )
    assert path == "arena.answerers.handwritten.file"
    assert (
        f"'{tmp_path}/preds' (resolved to {tmp_path}/preds) is a folder without *.json files"
        in message
    )
    [(_, message)] = file_problems(
        set_file("arena", "answerers", "handwritten", "data/embedded/systems/*_psgs.json")
    )
    assert (
        f"'data/embedded/systems/*_psgs.json' (resolved to {REPO}/data/embedded/systems/*_psgs.json) matches no "
        "file" in message
    )
    (tmp_path / "preds/fiqa_from_colbert_5_psgs.json").write_text("[]")
    assert (
        file_problems(set_file("arena", "answerers", "handwritten", str(tmp_path / "preds"))) == []
    )
    assert (
        file_problems(
            set_file("arena", "answerers", "handwritten", str(tmp_path / "preds/*_psgs.json"))
        )
        == []
    )


def test_an_unreadable_file(tmp_path):
    import os

    if os.geteuid() == 0:
        import pytest

        pytest.skip("root reads every file")
    (tmp_path / "a.jsonl").write_text("{}\n")
    (tmp_path / "a.jsonl").chmod(0)
    [(_, message)] = file_problems(
        set_file("arena", "answerers", "handwritten", str(tmp_path / "a.jsonl"))
    )
    assert "cannot be read" in message


def test_a_file_deleted_after_a_run_stops_the_dry_run(tmp_path):
    """The outputs of the system's import job may all be there (a finished run): the dry run
    must fail naming the file, not say "Nothing to be done" with the last run's tables."""
    from workflow_utils import snakemake

    repo = copy_repo(tmp_path / "repo")
    assert file_problems(lambda c: None, workdir=repo) == []
    (repo / "data/embedded/systems/answers-handwritten.jsonl").unlink()
    # what a finished run leaves: the import job's outputs, newer than everything
    for out in (
        "results/arena/answers/bm25-k5/handwritten.jsonl",
        "results/systems/arena/bm25-k5/handwritten.json",
        "results/systems/checked.json",
    ):
        (repo / out).parent.mkdir(parents=True, exist_ok=True)
        (repo / out).write_text("{}\n")
    result = snakemake(repo, "-n", "--profile", "profiles/local", timeout=300)
    text = result.stdout + result.stderr
    assert result.returncode != 0
    assert "Nothing to be done" not in text
    assert (
        "arena.answerers.handwritten.file: 'data/embedded/systems/answers-handwritten.jsonl' (resolved to "
        f"{repo}/data/embedded/systems/answers-handwritten.jsonl) does not exist"
    ) in text
    assert "no job was started" in text


def test_file_summaries_need_a_paper_dataset_and_their_own_name():
    def change(config):
        config["isqa"]["file_summaries"]["handwritten"]["dataset"] = "qaspr"
        config["isqa"]["file_summaries"]["smollm2"] = {
            "file": "data/embedded/systems/summaries-handwritten.jsonl",
            "dataset": "qasper",
        }

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
    for rule in (
        "file_answers",
        "file_responses",
        "file_summaries",
        "check_systems",
        "leaderboard",
    ):
        assert jobs[rule] == 1, rule
    assert jobs["rag_answers"] == 2 and jobs["drfr_responses"] == 2  # the models only
    assert (
        jobs["score_summaries"] == 2
        and jobs["drfr_summaries"] == 2
        # one per dataset and arena judge: the default's panel has two (local, local-raw)
        and jobs["arena_summaries"] == 2 * len(EMBEDDED["arena"]["judges"]) == 4
    )
    config = copy.deepcopy(EMBEDDED)
    del config["arena"]["answerers"]["handwritten"], config["drfr"]["responders"]["handwritten"]
    config["isqa"]["file_summaries"] = {}
    config["isqa"]["judged_systems"] = ["baseline_2", "isqa-lora-human"]
    (repo / "config/models_only.yaml").write_text(yaml.safe_dump(config))
    jobs = dry_run_jobs(repo, "--configfile", "config/models_only.yaml")
    assert not {"file_answers", "file_responses", "file_summaries", "check_systems"} & set(jobs)
    assert jobs["leaderboard"] == 1 and jobs["score_summaries"] == 1


def test_an_overlay_adds_a_system_without_editing_the_default(tmp_path):
    """A config file with only some sections is merged onto config/config.yaml; a whole config
    (every top-level section, as config/paper.yaml) still replaces it."""
    from isqaflow.configcheck.files import is_overlay
    from isqaflow.configcheck.schema import load_schema

    required = load_schema(REPO / "config/schema.yaml")["required"]
    assert not is_overlay([REPO / "config/paper.yaml"], required)
    assert not is_overlay([REPO / "config/paper.yaml", tmp_path / "mine.yaml"], required)
    repo = copy_repo(tmp_path / "repo")
    (repo / "mine").mkdir()
    lines = (
        (repo / "data/embedded/systems/answers-handwritten.jsonl")
        .read_text()
        .splitlines(keepends=True)
    )
    (repo / "mine/answers.jsonl").write_text("".join(lines[:3]))
    overlay = {
        "arena": {"answerers": {"my-rag": {"file": "mine/answers.jsonl", "coverage": "partial"}}}
    }
    (repo / "mine/systems.yaml").write_text(yaml.safe_dump(overlay))
    assert is_overlay([repo / "mine/systems.yaml"], required)
    jobs = dry_run_jobs(repo, "--configfile", "mine/systems.yaml")
    assert jobs["file_answers"] == 2  # handwritten (the default's) and my-rag
    assert (
        jobs["rag_answers"] == 2 and jobs["leaderboard"] == 1
    )  # the default's models, as without the overlay


def test_a_typo_in_an_overlay_is_named_with_the_overlay(tmp_path):
    from workflow_utils import snakemake

    repo = copy_repo(tmp_path / "repo")
    (repo / "mine.yaml").write_text(
        "arena:\n  answerers:\n    my-rag: {fiel: mine/answers.jsonl}\n"
    )
    result = snakemake(
        repo, "-n", "--profile", "profiles/local", "--configfile", "mine.yaml", timeout=120
    )
    text = result.stdout + result.stderr
    assert result.returncode == 1
    assert (
        "1 problem in the config (config/config.yaml, " in text
        and "mine.yaml); no job was started" in text
    )
    assert "arena.answerers.my-rag.fiel: unknown key (did you mean 'file'?)" in text


@pytest.mark.parametrize(("section", "key"), [("drfr", "responders"), ("isqa", "file_summaries")])
def test_a_folder_is_one_file_only_for_rag_qa_arenas_answers(tmp_path, section, key):
    """A folder of *.json files passed for every suite; only RAG-QA Arena's per-domain prediction
    files (an arena answerer) come as a folder or a glob."""
    folder = tmp_path / "outputs"
    folder.mkdir()
    (folder / "model_outputs.json").write_text("[]\n")
    for written in (str(folder), str(folder / "*.json")):
        problems = file_problems(set_file(section, key, "handwritten", written))
        assert len(problems) == 1 and problems[0][0] == f"{section}.{key}.handwritten.file", (
            problems
        )
        assert "outputs are one file" in problems[0][1]


@pytest.mark.parametrize(
    ("section", "key", "own"),
    [
        ("arena", "answerers", "results/arena/answers/bm25-k5/handwritten.jsonl"),
        ("drfr", "responders", "results/drfr/responses/infobench/handwritten.jsonl"),
        ("isqa", "file_summaries", "results/summaries/qasper/handwritten/file.jsonl"),
        ("arena", "answerers", "results/systems/arena/bm25-k5/handwritten.json"),
    ],
)
def test_a_system_file_may_not_be_its_own_import_jobs_output(tmp_path, section, key, own):
    """The import job would overwrite its own input (and after a finished run the file exists,
    so the check passed)."""
    repo = tmp_path / "repo"
    (repo / own).parent.mkdir(parents=True)
    (repo / own).write_text("{}\n")
    problems = file_problems(set_file(section, key, "handwritten", own), workdir=repo)
    problems = [p for p in problems if p[0] == f"{section}.{key}.handwritten.file"]
    assert len(problems) == 1 and "overwrite its own input" in problems[0][1], problems
    # another system's outputs (a model's answers imported as a file) are a file like any other
    other = own.replace("handwritten", "smollm2")
    (repo / other).parent.mkdir(parents=True, exist_ok=True)
    (repo / other).write_text("{}\n")
    problems = file_problems(set_file(section, key, "handwritten", other), workdir=repo)
    assert not [p for p in problems if p[0] == f"{section}.{key}.handwritten.file"], problems
