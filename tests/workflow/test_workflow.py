"""The embedded default DAG end to end on a fresh copy of the repository, then reruns.

One complete run (minutes), then dry runs that check what a change reruns:
nothing after a complete run; a LoRA parameter reruns the fine-tuning and what
depends on it; a judge parameter reruns the judges and their tables; the
summarizer's decoding reruns summarization and everything downstream; editing
``refine.py`` reruns the refinement and what follows; editing one file-based system's
outputs reruns its import, the jobs that read it and the tables, and a malformed file
stops the run before any judge.  Finally the report is built.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
import yaml
from workflow_utils import dry_run_jobs, snakemake

pytestmark = pytest.mark.slow

TABLES = [
    *(
        f"isqa_{t}"
        for t in (
            "table1",
            "table2",
            "table3",
            "table4",
            "oracle",
            "feedback_stats",
            "appendix_questeval_v024",
            "ppi",
        )
    ),
    *(f"drfr_{t}" for t in ("table5", "by_constraint", "by_category", "summaries", "ppi")),
    *(
        f"arena_{t}"
        for t in (
            "win_rates",
            "ratings",
            "position_consistency",
            "no_answer",
            "retrieval",
            "agreement",
            "summaries",
            "length_controlled",
            "length_bias",
            "ppi",
        )
    ),
    "validity",
    "leaderboard",
    "paired_tests",
    "paired_matrix",
]
FIGURES = ["isqa_figure3_qasper", "drfr_constraints", "arena_ratings", "paired_tests"]


@pytest.fixture(scope="module")
def run(embedded_run) -> Path:
    """The session's one complete embedded run (tests/conftest.py)."""
    return embedded_run


def with_config(run: Path, name: str, change) -> str:
    config = yaml.safe_load((run / "config/config.yaml").read_text())
    change(config)
    (run / f"config/{name}.yaml").write_text(yaml.safe_dump(config))
    return f"config/{name}.yaml"


def test_every_table_and_figure_is_made_from_real_scores(run):
    for table in TABLES:
        for ext in ("csv", "md", "tex"):
            assert (run / f"results/tables/{table}.{ext}").stat().st_size > 0, table
        assert "<table>" in (run / f"results/tables/{table}.html").read_text(), (
            table
        )  # for the report
    for suite in ("arena", "drfr"):  # the judgment browsers, every item embedded
        assert (
            '<script type="application/json" id="items">'
            in (run / f"results/browser/{suite}.html").read_text()
        )
    for figure in FIGURES:
        for ext in ("png", "svg"):
            assert (run / f"results/figures/{figure}.{ext}").stat().st_size > 1000, figure
    long = (run / "results/tables/isqa_table1_long.csv").read_text()
    assert "w/o ISQA" in long and "w/ ISQA" in long
    scores = [
        json.loads(line) for line in open(run / "results/metrics/qasper/smollm2/scores.jsonl")
    ]
    assert all(0.0 <= s["rouge"] <= 1.0 for s in scores) and any(s["rouge"] > 0 for s in scores)
    ratings = (run / "results/tables/arena_ratings.csv").read_text()
    assert "lfrqa" in ratings and "Bradley-Terry" in ratings
    manifest = json.loads((run / "results/manifest.json").read_text())
    assert manifest["config_sha256"] and manifest["models"][0]["weights_sha256"]
    assert manifest["adapters"][0]["sha256"] and manifest["packages"]["snakemake"]


def test_the_judges_audit_flags_self_preference_and_records_the_canaries(run):
    tables = run / "results/tables"
    for table in (
        "self_preference",
        "noise",
        "noise_win_rates",
        "canaries",
        "panel",
        "panel_loo",
        "panel_reliability",
    ):
        for ext in ("csv", "md"):
            assert (tables / f"judges_{table}.{ext}").stat().st_size > 0, table
        assert "<table>" in (tables / f"judges_{table}.html").read_text(), table  # for the report
    selfpref = pd.read_csv(tables / "judges_self_preference.csv", index_col=0)
    arena = selfpref[(selfpref.suite == "arena") & (selfpref.judge == "local")].set_index("system")
    assert bool(arena.loc["smollm2", "self_family"]) and not bool(
        arena.loc["handwritten", "self_family"]
    )
    assert arena.loc["smollm2", "n"] > 0  # its win rate under the arena judge
    noise = pd.read_csv(tables / "judges_noise.csv", index_col=0)
    assert (noise.repeats == 1).all() and noise.flip_rate.isna().all()  # the default judges once
    assert (
        set(noise.suite) == {"arena", "drfr"}
        and noise.flip_rate_is.str.startswith("0 by construction").all()
    )
    # Dawid-Skene beside kappa: SmolLM2 picks the first answer in both orders (docs/validity.md),
    # so the judge's position bias is positive
    reliability = pd.read_csv(tables / "judges_panel_reliability.csv", index_col=0)
    reliability = reliability[reliability["suite"] == "arena"]  # DRFR: one judge, no panel
    assert set(reliability["judge"]) == {"local", "local-raw"}
    assert (reliability["position_bias"] > 0).all()
    # the default's panel: local and local-raw (its calls local's), their agreement in the leaderboard
    panel = pd.read_csv(tables / "judges_panel.csv", index_col=0).iloc[0]
    assert (
        panel["judges"] == "local, local-raw" and panel["kappa_kind"] == "Cohen" and panel["n"] > 0
    )
    assert "not independent judges" in panel["note"]
    assert (
        "Arena judge panel (bm25-k5: local, local-raw; panel verdict majority): Cohen's kappa"
        in (tables / "leaderboard.md").read_text()
    )
    calls = {
        judge: sqlite3.connect(run / f"results/arena/judgments/bm25-k5/{judge}.jsonl.calls.sqlite")
        .execute("SELECT key FROM calls")
        .fetchall()
        for judge in ("local", "local-raw")
    }
    assert sorted(calls["local-raw"]) == sorted(calls["local"])  # local-raw made no call of its own
    manifest = json.loads((run / "results/manifest.json").read_text())
    assert any(key.startswith("arena judge/local/") for key in manifest["canaries"])


JUDGED_TABLES = [
    *(
        f"isqa_{t}"
        for t in (
            "table1",
            "table2",
            "table3",
            "table4",
            "oracle",
            "feedback_stats",
            "appendix_questeval_v024",
            "ppi",
        )
    ),
    *(f"drfr_{t}" for t in ("table5", "by_constraint", "by_category", "summaries", "ppi")),
    *(
        f"arena_{t}"
        for t in (
            "win_rates",
            "ratings",
            "position_consistency",
            "agreement",
            "summaries",
            "length_controlled",
            "length_bias",
            "ppi",
        )
    ),
    "leaderboard",
]


def test_every_judge_and_metric_shows_its_known_answer_controls(run):
    validity = pd.read_csv(run / "results/tables/validity.csv")
    assert set(validity["instrument"]) == {
        "arena judge",
        "Arena-Hard judge",
        "DRFR judge",
        "QAGS",
        "QuestEval",
        "feedback model",
    }
    assert set(validity[validity["instrument"].isin(["arena judge", "DRFR judge"])]["rule"]) == {
        "raw",
        "calibrated",
    }
    for table in JUDGED_TABLES:
        caption = (run / f"results/tables/{table}.md").read_text().split("\n\n", 1)[0]
        assert "Controls (known answers" in caption, table


def test_qags_is_defined_for_nearly_every_summary(run):
    scores = pd.read_json(run / "results/metrics/qasper/smollm2/scores.jsonl", lines=True)
    assert scores["qags"].notna().mean() >= 0.9
    # padded to K as W4ngatang/qags does: a defined QAGS rests on questions kept or padded
    defined = scores["qags"].notna()
    assert ((scores.loc[defined, "qags_questions"] + scores.loc[defined, "qags_padded"]) >= 1).all()
    assert (scores["qags_copies_excluded"] >= 0).all() and scores[
        "qags_source_answerability"
    ].notna().any()


def test_the_calibrated_arena_ratings_are_not_all_equal(run):
    ratings = pd.read_csv(run / "results/tables/arena_ratings.csv", header=[0, 1], index_col=0)
    elo = ratings[("Elo", "rating")]
    assert elo.nunique() > 1


def test_results_are_readable_by_collaborators(run):
    """Written with the process umask (0644 by default), not the temporary files' 0600."""
    umask = os.umask(0)
    os.umask(umask)
    files = [
        p for p in (run / "results").rglob("*") if p.is_file() and ".calls.sqlite" not in p.name
    ]
    assert files
    for path in files:
        assert path.stat().st_mode & 0o777 == 0o666 & ~umask, path


def test_every_isqa_step_is_recorded_for_every_paper(run):
    config = yaml.safe_load((run / "config/config.yaml").read_text())
    steps = config["isqa"]["refine"]["steps"]
    papers = [json.loads(line)["id"] for line in open(run / "results/data/papers/qasper.jsonl")]
    for run_cfg in config["isqa"]["runs"]:
        path = (
            run
            / f"results/summaries/qasper/smollm2/isqa-{run_cfg['feedback']}-{run_cfg['questions']}.steps.jsonl"
        )
        records = [json.loads(line) for line in open(path)]
        assert [r["paper_id"] for r in records] == papers
        for record in records:
            # Algorithm 1 as printed: N summaries s_1..s_N, feedback on each
            assert [s["step"] for s in record["steps"]] == list(range(1, steps + 1))
            assert record["final_summary"] == record["steps"][-1]["summary"]
            for step in record["steps"]:
                assert len(step["feedback"]) == config["isqa"]["refine"]["batch_size"]
                assert all(
                    {
                        "raw",
                        "status",
                        "answer",
                        "evidence",
                        "f1",
                        "decision",
                        "finish_reason",
                        "input_tokens",
                        "new_tokens",
                    }
                    <= set(f)
                    for f in step["feedback"]
                )


def test_nothing_to_do_after_a_complete_run(run):
    assert dry_run_jobs(run) == {}


def test_lora_parameter_reruns_finetuning_and_only_what_depends_on_it(run):
    def change(config):
        config["finetune"]["smollm2-hotpotqa"]["settings"]["r"] = 4

    jobs = dry_run_jobs(run, "--configfile", with_config(run, "lora_r4", change))
    assert jobs.pop("finetune_feedback") == 1
    assert jobs.pop("isqa_refine") == 2  # the two runs with the adapter, not the base model's
    assert jobs.pop("drfr_responses") == 1  # the fine-tuned responder only
    assert set(jobs) == {
        "evaluate_feedback",
        "score_summaries",
        "isqa_tables",
        "human_eval_sheets",
        "drfr_judge",
        "drfr_summaries",
        "drfr_tables",
        "arena_summaries",
        "arena_tables",
        "validity_table",
        "leaderboard",
        "judge_audit",
        "manifest",
        "all",
        "drfr_browser",
        "table_html",
        "paired_tests",
        "arena_browser",
    }


def test_judge_parameter_reruns_only_the_judges_and_their_tables(run):
    def change(config):  # (orders: random would be a configuration error with rule calibrated)
        config["arena"]["judges"]["local"]["tie_band"] = 0.25

    jobs = dry_run_jobs(run, "--configfile", with_config(run, "tie_band", change))
    assert set(jobs) == {
        "arena_judge",
        "arena_judge_checks",
        "arena_summaries",
        "arena_tables",
        "validity_table",
        "leaderboard",
        "judge_audit",
        "manifest",
        "all",
        "arena_browser",
        "table_html",
        "paired_tests",
    }

    def change_drfr(config):
        config["drfr"]["judges"]["local"].update(mode="text", rule="raw")

    jobs = dry_run_jobs(run, "--configfile", with_config(run, "drfr_text", change_drfr))
    assert set(jobs) == {
        "drfr_judge",
        "drfr_summaries",
        "drfr_tables",
        "validity_table",
        "leaderboard",
        "manifest",
        "judge_audit",
        "all",
        "drfr_browser",
        "table_html",
        "paired_tests",
    }


def test_summarizer_change_reruns_summarization_and_everything_downstream(run):
    def change(config):
        config["isqa"]["summary_generation"]["max_new_tokens"] += 8

    jobs = dry_run_jobs(run, "--configfile", with_config(run, "longer_summaries", change))
    assert jobs.pop("isqa_refine") == 3
    assert set(jobs) == {  # validity: the feedback-model control reads the first summaries
        "baseline_summaries",
        "generic_feedback",
        "score_summaries",
        "isqa_tables",
        "human_eval_sheets",
        "drfr_summaries",
        "drfr_tables",
        "arena_summaries",
        "arena_tables",
        "validity_table",
        "leaderboard",
        "manifest",
        "all",
        "table_html",
        "arena_browser",
        "drfr_browser",
        "paired_tests",  # (its caption: the validity summary)
        "judge_audit",  # (its captions too)
    }


def test_editing_refine_reruns_the_refinement_and_what_follows(run):
    refine = run / "src/isqaflow/isqa/refine.py"
    original = refine.read_text()
    try:
        refine.write_text(original + "\n# an edit\n")
        jobs = dry_run_jobs(run)
    finally:
        refine.write_text(original)
    assert jobs.pop("isqa_refine") == 3
    assert set(jobs) == {
        "score_summaries",
        "isqa_tables",
        "human_eval_sheets",
        "drfr_summaries",
        "drfr_tables",
        "arena_summaries",
        "arena_tables",
        "validity_table",
        "leaderboard",
        "manifest",
        "all",
        "table_html",
        "arena_browser",
        "drfr_browser",
        "paired_tests",
        "judge_audit",
    }
    assert dry_run_jobs(run) == {}


# One's own system's file edited -> the jobs that read its outputs and the tables (the other
# judges do not read it: they do not rerun).
SYSTEM_FILE_RERUNS = {
    "answers-handwritten.jsonl": {
        "file_answers",
        "check_systems",
        "arena_judge",
        "arena_tables",
        "arena_browser",
        "paired_tests",
        "judge_audit",
    },
    "model_outputs.json": {
        "file_responses",
        "check_systems",
        "drfr_judge",
        "drfr_tables",
        "validity_table",
        "drfr_browser",
        "paired_tests",
        "judge_audit",
    },
    "summaries-handwritten.jsonl": {
        "file_summaries",
        "check_systems",
        "score_summaries",
        "drfr_summaries",
        "arena_summaries",
        "drfr_tables",
        "arena_tables",
        "arena_browser",
        "drfr_browser",
    },
}


@pytest.mark.parametrize("name", sorted(SYSTEM_FILE_RERUNS))
def test_editing_a_systems_file_reruns_only_its_jobs_and_the_tables(run, name):
    path = run / "data/embedded/systems" / name
    original = path.read_bytes()
    try:
        path.write_bytes(original + b"\n")  # new content (an unchanged checksum reruns nothing)
        jobs = dry_run_jobs(run)
    finally:
        path.write_bytes(original)
    # that system's jobs only (table_html: one job per table rendered for the report), once per
    # judge: the default's two arena judges (local-raw reads local's calls)
    judges = {"arena_judge": 2, "arena_summaries": 2}
    assert all(
        count == judges.get(rule, 1) for rule, count in jobs.items() if rule != "table_html"
    ), jobs
    assert set(jobs) == SYSTEM_FILE_RERUNS[name] | {"leaderboard", "manifest", "all", "table_html"}


# name -> (suite, the file's content, what the error must say)
MALFORMED = {
    "unknown_id": (
        "arena",
        '{"domain": "fiqa", "query_id": "4021", "answer": "Pay it off."}\n'
        '{"domain": "fiqa", "query_id": "9999", "answer": "No such query."}\n',
        r"unknown_id\.jsonl, line 2, id '9999': not in the dataset",
    ),
    "duplicate": (
        "drfr",
        '{"instruction_id": "user_oriented_task_1", "response": "Yes."}\n'
        '{"instruction_id": "user_oriented_task_1", "response": "Again."}\n',
        r"duplicate\.jsonl, line 2, id 'user_oriented_task_1': duplicate",
    ),
    "empty": (
        "isqa",
        '{"paper_id": "2101.00417", "summary": "   "}\n',
        r"empty\.jsonl, line 1, id '2101.00417': empty output",
    ),
    "not_utf8": (
        "isqa",
        b'{"paper_id": "2101.00417", "summary": "caf\xe9"}\n',
        r"not_utf8\.jsonl, line 1, record '2101.00417': not UTF-8: byte\(s\) e9",
    ),
    "missing_ids": (
        "arena",
        '{"domain": "fiqa", "query_id": "4021", "answer": "Pay it off."}\n',
        r"missing_ids\.jsonl: 14 of 15 dataset ids missing, first \['fiqa:4187'",
    ),
}
JUDGES = (
    "arena_judge",
    "arena_judge_checks",
    "arena_summaries",
    "drfr_judge",
    "drfr_summaries",
    "score_summaries",
    "metric_controls",
)


def test_a_malformed_systems_file_stops_the_run_before_any_job_that_reads_it(run):
    """Five malformed files, one run (--keep-going: each import job fails on its own): every
    error names the file, the line and the id, and no job that reads a malformed system starts
    (the judges of all answerers or responders, the summaries' judges and scorers of the broken
    summarizers, the systems' check); under --keep-going the jobs that read none (the controls,
    the model summarizers' judges) may run."""
    import re

    folder = run / "data/embedded/systems/broken"
    folder.mkdir()
    for name, (_, content, _) in MALFORMED.items():
        path = folder / f"{name}.jsonl"
        (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)

    def change(config):
        for name, (suite, _, _) in MALFORMED.items():
            entry = {"file": f"data/embedded/systems/broken/{name}.jsonl", "format": "jsonl"}
            if suite == "arena":
                config["arena"]["answerers"][name] = entry
            elif suite == "drfr":
                config["drfr"]["responders"][name] = {**entry, "coverage": "partial"}
            else:
                config["isqa"]["file_summaries"][name] = {
                    **entry,
                    "dataset": "qasper",
                    "coverage": "partial",
                }

    try:
        result = snakemake(
            run,
            "--profile",
            "profiles/local",
            "--keep-going",
            "--configfile",
            with_config(run, "broken", change),
            timeout=600,
        )
    finally:
        shutil.rmtree(folder)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    for name, (_, _, message) in MALFORMED.items():
        assert re.search(message, output), (name, output[-3000:])
    started = set(re.findall(r"^(?:local)?rule (\w+):", output, flags=re.MULTILINE))
    assert {"file_answers", "file_responses", "file_summaries"} <= started
    assert not started & {"arena_judge", "drfr_judge", "check_systems"}, started
    # each started job's block: "rule X:" ... "wildcards: ..."; none names a broken summarizer
    blocks = re.split(r"^(?:local)?rule ", output, flags=re.MULTILINE)[1:]
    broken = {n for n, (suite, _, _) in MALFORMED.items() if suite == "isqa"}
    readers = [
        b.split(":", 1)[0]
        for b in blocks
        if b.split(":", 1)[0] in JUDGES
        and any(f"summarizer={n}" in b.split("\n\n", 1)[0] for n in broken)
    ]
    assert readers == [], readers
    assert dry_run_jobs(run) == {}  # the complete run is untouched


def test_the_leaderboard_lists_file_based_systems_beside_the_models(run):
    board = pd.read_csv(run / "results/tables/leaderboard.csv", index_col=0)
    assert {
        "handwritten",
        "smollm2",
        "smollm2-nocot",
        "smollm2-feedback",
        "smollm2 baseline_2",
    } <= set(board.index)
    source = board.loc["handwritten", "source"]
    # each partial cell says which items it covers: "arena (3/15, partial: fiqa 1 science 1 ...)"
    assert "arena (3/15, partial: " in source and "drfr (4/12, partial: " in source
    assert "isqa (2/3, partial: " in source
    assert "(n=3)" in board.loc["handwritten", "arena win % vs LFRQA [bm25-k5.local]"]
    assert (
        "(n=4)" in board.loc["handwritten", "DRFR overall"]
        and "(n=2)" in board.loc["handwritten", "QAGS"]
    )
    assert "(n=15)" in board.loc["smollm2", "arena win % vs LFRQA [bm25-k5.local]"]
    assert "(n=12)" in board.loc["smollm2", "DRFR overall"]
    caption = (run / "results/tables/leaderboard.md").read_text().split("\n\n")[0]
    for instrument in ("DRFR judge", "arena judge", "QAGS", "QuestEval"):
        assert f"{instrument} " in caption and "correct" in caption, instrument
    lc = pd.read_csv(run / "results/tables/arena_length_controlled.csv")
    assert {"handwritten", "smollm2"} <= set(lc["system"])
    identified = lc["LC status"] == "identified"
    assert lc["LC status"][~identified].str.startswith("not identified: ").all()
    assert lc.loc[~identified, ["LC win rate %", "LC lower", "LC upper"]].isna().all().all()
    assert lc.loc[identified, "LC win rate %"].between(0, 100).all()
    assert (lc.loc[identified, "LC lower"] <= lc.loc[identified, "LC upper"]).all()
    bias = pd.read_csv(run / "results/tables/arena_length_bias.csv")
    assert set(bias["kind"]) <= {"all_pairs", "head_to_head"}  # never against the reference
    assert ((bias["lower"] <= bias["longer wins %"]) | bias["pairs"].eq(0)).all()
    manifest = json.loads((run / "results/manifest.json").read_text())
    checked = json.loads((run / "results/systems/checked.json").read_text())
    recorded = {d["dataset"]: d["sha256"] for d in manifest["datasets"]}
    for suite in ("arena", "drfr", "isqa"):
        assert recorded[f"systems/{suite}/handwritten"] == checked["handwritten"][suite]["sha256"]


def test_editing_the_job_runtime_reruns_every_job(run):
    """Every script runs isqaflow.runtime (logging, threads, the call-cache path): it is in
    every rule's code hash."""
    runtime = run / "src/isqaflow/runtime.py"
    original = runtime.read_text()
    try:
        runtime.write_text(original + "\n# an edit\n")
        jobs = dry_run_jobs(run)
    finally:
        runtime.write_text(original)
    rules = {
        line.split()[1].rstrip(":")
        for path in (run / "rules").rglob("*.smk")
        for line in path.read_text().splitlines()
        if line.startswith("rule ")
    }
    # every rule but those the embedded config never needs: downloads, filled human sheets,
    # hub weights (its models are converted locally) and the ColBERT retriever (paper scale)
    unused = {
        "download",
        "extract",
        "human_eval_results",
        "fetch_weights",
        "colbert_index",
        "retrieve_colbert",
        # the peers' released judgments (config peers:, empty here; target peers)
        "peer_judgments",
        "peer_arena_tables",
        "peer_arena_hard_tables",
        "peer_drfr_tables",
        "peer_validity_table",
        "peer_leaderboard",
        "peers",
        # the GPU smoke job (no stage of the embedded default asks for a GPU) and the MLflow
        # export (tracking: off by default)
        "gpu_smoke",
        "track_run",
    }
    assert set(jobs) == (rules | {"all"}) - unused
    assert dry_run_jobs(run) == {}


def test_a_moved_checkout_reruns_nothing(run, tmp_path):
    """No parameter holds the checkout's absolute path (the manifest finds its workflow
    from the script), so the same results in another directory are up to date."""
    moved = tmp_path / "moved"
    shutil.copytree(run, moved, symlinks=True)
    assert dry_run_jobs(moved) == {}


def test_report_gathers_every_table_and_figure(run, tmp_path):
    result = snakemake(run, "--profile", "profiles/local", "--report", "report.zip", timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    shutil.unpack_archive(run / "report.zip", tmp_path)
    names = {p.name for p in tmp_path.rglob("*")}
    for table in TABLES:
        assert f"{table}.csv" in names, table
    for figure in FIGURES:
        assert f"{figure}.png" in names, figure
    assert "manifest.json" in names
    # every table shown inline (an .html result), and the judgment browsers
    for table in TABLES:
        assert f"{table}.html" in names, table
    assert {"arena.html", "drfr.html"} <= names


def test_drfr_ppi_anchors_the_handwritten_responses_on_their_embedded_labels(run):
    """Issue 40: the embedded human labels (8 of the handwritten responder's 16 questions, drawn
    at random) give drfr_ppi its row with n human and N judged stated."""
    table = pd.read_csv(run / "results/tables/drfr_ppi.csv")
    row = table[table["responder"] == "handwritten"].iloc[0]
    assert (row["n human"], row["N judged"], row["human %"]) == (8, 16, 100)
    assert not pd.isna(row["PPI %"])
    others = table[~table["responder"].isin(["handwritten", "smollm2"])]
    assert (others["n human"] == 0).all() and others["note"].str.contains("no human label").all()


def test_drfr_ppi_gives_an_interval_where_people_disagree_with_the_judge(run):
    """Issue 40: people's labels of 24 of smollm2's 47 judged questions (drawn at random; 8 YES)
    against the embedded judge's near-constant YES: the PPI row has an interval, far below the
    judge's, and gives the judge no weight (lambda 0) -- the embedded run shows PPI at work."""
    table = pd.read_csv(run / "results/tables/drfr_ppi.csv")
    row = table[table["responder"] == "smollm2"].iloc[0]
    assert (row["n human"], row["N judged"]) == (24, 47), row.to_dict()
    assert row["human %"] == pytest.approx(100 * 8 / 24)
    assert row["PPI lower"] < row["PPI %"] < row["PPI upper"], row.to_dict()
    # the judge's interval and people's do not overlap: the judge alone would mislead
    assert row["PPI upper"] < row["judge lower"], row.to_dict()
    assert pd.isna(row["note"]) or "no PPI interval" not in row["note"]
