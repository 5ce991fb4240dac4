"""Judging only one's own system (docs/own-systems.md, "Judging only your system"): an overlay
sets the default's systems to null and names the suite as the target; the dry run plans the
jobs of that suite with that system and nothing else."""

from __future__ import annotations

import copy

import yaml
from workflow_utils import REPO, copy_repo, dry_run_jobs, snakemake

from isqaflow.configcheck.files import drop_removed_entries

EMBEDDED = yaml.safe_load((REPO / "config/config.yaml").read_text())

# The overlay of docs/own-systems.md ("Judging only your system"), the answers' path aside.
ONLY_MY_RAG = """\
arena:
  answerers: {smollm2: null, smollm2-nocot: null, handwritten: null, my-rag: {file: mine/answers.jsonl, coverage: partial}}
drfr:
  responders: {handwritten: null}
isqa:
  file_summaries: {handwritten: null}
  judged_systems: []
"""


def test_a_null_entry_removes_a_default_system_and_its_name_from_the_lists():
    config = copy.deepcopy(EMBEDDED)
    config["arena"]["answerers"]["handwritten"] = None
    config["isqa"]["file_summaries"]["handwritten"] = None
    config["arena"]["runs"][0]["answerers"] = ["smollm2", "handwritten"]
    config["datasets"]["rag"]["domains"]["fiqa"].update(corpus=None, corpus_format=None)
    removed = drop_removed_entries(config)
    assert removed == [
        "datasets.rag.domains.fiqa.corpus",
        "datasets.rag.domains.fiqa.corpus_format",
        "arena.answerers.handwritten",
        "isqa.file_summaries.handwritten",
    ]
    assert set(config["datasets"]["rag"]["domains"]["fiqa"]) == {"annotations"}
    assert "handwritten" not in config["arena"]["answerers"]
    assert set(config["arena"]["answerers"]) == {"smollm2", "smollm2-nocot"}
    assert config["arena"]["runs"][0]["answerers"] == ["smollm2"]
    assert config["isqa"]["judged_systems"] == ["baseline_2", "isqa-lora-human"]
    assert config["drfr"]["responders"]["handwritten"]["format"] == "alpaca_eval"  # untouched
    assert drop_removed_entries(copy.deepcopy(EMBEDDED)) == []


def _mine(repo):
    (repo / "mine").mkdir()
    lines = (repo / "data/embedded/systems/answers-handwritten.jsonl").read_text().splitlines()
    (repo / "mine/answers.jsonl").write_text("\n".join(lines[:3]) + "\n")


def test_judging_only_my_rag_system_plans_no_job_of_another_suite(tmp_path):
    """Before: `handwritten: null` was refused ("expected a mapping, got None"), and the arena's
    tables needed every ISQA summary judged (baseline, feedback model, refinement)."""
    repo = copy_repo(tmp_path / "repo")
    _mine(repo)
    (repo / "mine.yaml").write_text(ONLY_MY_RAG)
    jobs = dry_run_jobs(repo, "arena", "--configfile", "mine.yaml")
    assert jobs == {
        "convert_gguf_model": 1,  # the judge's weights
        "convert_rag": 3,  # the three domains' queries and passages
        "retrieve": 6,  # the retrieval recall table: two retrievers x three domains
        "check_human_labels": 1,
        "file_answers": 1,  # my-rag, the one answerer
        "check_systems": 1,
        "arena_judge": 2,  # the default's two arena judges
        "arena_judge_checks": 2,
        "arena_tables": 1,
        "arena": 1,
    }
    # human labels left out for this suite: no check of them
    (repo / "mine.yaml").write_text(ONLY_MY_RAG + "datasets:\n  rag:\n    human_labels: null\n")
    jobs = dry_run_jobs(repo, "arena", "--configfile", "mine.yaml")
    assert "check_human_labels" not in jobs and jobs["arena_judge"] == 2


NO_CORPUS = """\
datasets:
  rag:
    domains:
      fiqa: {corpus: null, corpus_format: null}
      science: {corpus: null, corpus_format: null}
      technology: {corpus: null, corpus_format: null}
"""


def test_without_a_corpus_only_answers_from_files_are_judged(tmp_path):
    """Before: every domain needed a corpus (required by the schema), so a user whose
    answerers all bring their answers borrowed one, and the run retrieved from it."""
    repo = copy_repo(tmp_path / "repo")
    _mine(repo)
    (repo / "mine.yaml").write_text(ONLY_MY_RAG)
    (repo / "no-corpus.yaml").write_text(NO_CORPUS)
    jobs = dry_run_jobs(repo, "arena", "--configfile", "mine.yaml", "no-corpus.yaml")
    assert "retrieve" not in jobs and jobs["convert_rag"] == 3 and jobs["arena_judge"] == 2
    # the default's model answerers need passages: named before any job
    result = snakemake(repo, "-n", "--profile", "profiles/local", "--configfile", "no-corpus.yaml")
    text = result.stdout + result.stderr
    assert result.returncode == 1
    assert (
        "arena.runs[0].answerers: answerer 'smollm2' answers from retrieved passages, "
        "but domain 'fiqa' has no corpus" in text
    )


def test_a_domain_without_a_corpus_writes_its_queries_and_no_passage(tmp_path):
    from isqaflow.data.convert import write_rag
    from isqaflow.io import read_jsonl

    annotations = REPO / "data/embedded/lfrqa/annotations_fiqa_with_citation.jsonl"
    queries, passages = tmp_path / "q.jsonl", tmp_path / "p.jsonl"
    n, m = write_rag("fiqa", [annotations], None, None, 100, queries, passages)
    assert m == 0 and passages.read_text() == ""
    assert n == len(list(read_jsonl(queries))) == len(annotations.read_text().splitlines())


def test_a_pool_left_empty_is_a_config_error_naming_it(tmp_path):
    """An arena without answerers is a valid run (its judges' controls only); DRFR needs one."""
    repo = copy_repo(tmp_path / "repo")
    names = ", ".join(f"{n}: null" for n in EMBEDDED["drfr"]["responders"])
    (repo / "none.yaml").write_text(f"drfr:\n  responders: {{{names}}}\n")
    result = snakemake(repo, "-n", "--profile", "profiles/local", "--configfile", "none.yaml")
    text = result.stdout + result.stderr
    assert result.returncode == 1
    assert "expected a mapping" not in text and "drfr.responders" in text
