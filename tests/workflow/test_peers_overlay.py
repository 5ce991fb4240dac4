"""config/peers.yaml: the peers' released judgments through the workflow, nothing judged.

The dry run of target ``peers`` plans the conversion of each released file and the table jobs,
and no job that holds a model (fast: one dry run).  The run itself (slow: about a minute with two
of AlpacaEval's sixteen annotation files, whose length-controlled fits are most of the time;
the whole overlay takes ~7 min on 2 cores) builds the tables and the leaderboard under
results/peers/, whose numbers are the published ones docs/reproduction.md reproduces from the
same files: Arena-Hard-Auto's scores of gpt-4-0613 (37.90) and gpt-3.5-turbo-0125 (23.34)
against gpt-4-0314, in the suite's own table arena_hard_scores (its leaderboard column) and from
the arena's Bradley-Terry ratings of the same battles, read beside; AlpacaEval's raw win rates,
InFoBench's GPT-4 DRFR 87.6."""

from __future__ import annotations

import csv
import os

import pandas as pd
import pytest
from workflow_utils import REPO, copy_repo, dry_run_jobs, snakemake

from isqaflow.report.leaderboard import read_ratings

SHARED = REPO.parent / "shared"
PEERS = SHARED / "data/peers"
PEER_JOBS = {
    "peer_judgments": 4,  # arena-hard's battles and judgments, AlpacaEval, InFoBench
    "peer_arena_tables": 1,
    "peer_arena_hard_tables": 1,
    "peer_drfr_tables": 1,
    "peer_validity_table": 1,
    "peer_leaderboard": 1,
    "peers": 1,
}
# two of AlpacaEval's models, to keep the run short (a list replaces the overlay's whole)
TWO_ALPACA = """\
peers:
  alpaca_eval_2:
    files:
      - ../shared/data/peers/alpaca_eval/annotations/alpaca-7b.json
      - ../shared/data/peers/alpaca_eval/annotations/claude-2.1.json
"""

pytestmark = pytest.mark.skipif(
    not PEERS.is_dir(), reason=f"the peers' released files are not present ({PEERS})"
)


def _repo(tmp_path):
    repo = copy_repo(tmp_path / "repo")
    # the overlay's ../shared/data/peers, as from a checkout beside ../shared
    os.symlink(SHARED.resolve(), tmp_path / "shared")
    return repo


def test_the_overlay_plans_the_peers_tables_and_no_model_job(tmp_path):
    repo = _repo(tmp_path)
    assert dry_run_jobs(repo, "peers", "--configfile", "config/peers.yaml") == PEER_JOBS


def test_a_missing_released_file_is_named_before_any_job(tmp_path):
    repo = _repo(tmp_path)
    (repo / "gone.yaml").write_text(
        "peers:\n  infobench-gpt4:\n    files: [../shared/data/peers/infobench/GPT4.jsonl]\n"
    )
    result = snakemake(
        repo, "peers", "-n", "--cores", "1", "--configfile", "config/peers.yaml", "gone.yaml"
    )
    assert result.returncode == 1
    assert "no job was started" in result.stderr
    assert "peers.infobench-gpt4.files[0]: '../shared/data/peers/infobench/GPT4.jsonl'" in (
        result.stderr
    )


def _published(path, key, value):
    with path.open(newline="", encoding="utf-8") as handle:
        return {row[key]: float(row[value]) for row in csv.DictReader(handle)}


@pytest.mark.slow
def test_the_overlay_gives_the_published_numbers(tmp_path):
    repo = _repo(tmp_path)
    (repo / "two.yaml").write_text(TWO_ALPACA)
    result = snakemake(
        repo,
        "peers",
        "--profile",
        "profiles/local",
        "--cores",
        "2",
        "--configfile",
        "config/peers.yaml",
        "two.yaml",
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    tables = repo / "results/peers/tables"
    published = _published(
        PEERS / "arena-hard/leaderboard/arena_hard_leaderboard_20240731.csv", "model", "score"
    )
    # arena-hard: its released files fill the suite's own table, one fit for the judge
    # gpt-4-1106-preview (the battles file and Pythia's judgment file), the baseline at 50
    scores = pd.read_csv(tables / "arena_hard_scores.csv").set_index("model")
    assert set(scores["judge"]) == {"gpt-4-1106-preview"}
    assert scores.loc["gpt-4-0314", "score"] == 50.0 and scores.loc["gpt-4-0314", "baseline"]
    for model in ("gpt-4-0613", "gpt-3.5-turbo-0125"):
        assert scores.loc[model, "score"] == pytest.approx(published[model], abs=0.01)
        assert scores.loc[model, "questions"] == 500
        assert pd.isna(scores.loc[model, "games_left_out"])  # a battles file: no games
    assert scores.loc["Pythia-12B-DPO-UltraFeedback", "questions"] == 12
    caption = (tables / "arena_hard_scores.md").read_text().split("\n\n")[0]
    assert caption.startswith("Released judgments of Arena-Hard-Auto (lmarena/arena-hard-auto)")
    assert "Style control: off (the released answers carry no token counts" in caption
    # the arena's tables read the same battles beside: its Bradley-Terry win rate against the
    # gpt-4-0314 anchor is the same score
    ratings = read_ratings(tables / "arena_ratings.csv")
    ratings = ratings[ratings["setting"] == "peers.arena-hard-v0.1"].set_index("model")
    anchor = ratings.loc["gpt-4-0314", "Bradley-Terry rating"]
    for model in ("gpt-4-0613", "gpt-3.5-turbo-0125"):
        rating = ratings.loc[model, "Bradley-Terry rating"]
        score = 100 / (1 + 10 ** ((anchor - rating) / 400))
        assert score == pytest.approx(published[model], abs=0.01)
    # AlpacaEval: the raw win rate (ties half: the mean soft preference) of each model
    lc = pd.read_csv(tables / "arena_length_controlled.csv")
    lc = lc[lc["setting"] == "peers.alpaca_eval_2"].set_index("system")
    published = _published(
        PEERS / "alpaca_eval/weighted_alpaca_eval_gpt4_turbo_leaderboard.csv", "", "win_rate"
    )
    for model in ("alpaca-7b", "claude-2.1"):
        assert lc.loc[model, "win rate (ties half) %"] == pytest.approx(published[model], abs=1e-9)
    # InFoBench: GPT-4's DRFR, InFoBench's bool_ratio (0.876)
    drfr = pd.read_csv(tables / "drfr_table5_long.csv").set_index("model")
    assert drfr.loc["gpt-4", "Overall"] == pytest.approx(0.876, abs=1e-12)
    # the leaderboard: the systems with a DRFR, a rating or (AlpacaEval: soft preferences, no
    # battles) a win rate against its baseline, and AlpacaEval's baseline; none of the workflow's own
    board = pd.read_csv(tables / "leaderboard.csv", index_col=0)
    assert set(board.index) == {
        "gpt-4",
        "gpt-4-0314",
        "gpt-4-0613",
        "gpt-3.5-turbo-0125",
        "Pythia-12B-DPO-UltraFeedback",
        "alpaca-7b",
        "claude-2.1",
        "gpt4_1106_preview",
    }
    assert board.loc["claude-2.1", "source"] == "released judgments (tatsu-lab/alpaca_eval)"
    # arena-hard's column is its suite's (as the embedded leaderboard's), not the arena's ratings
    assert board.loc["gpt-4-0613", "Arena-Hard score"].startswith(
        f"{scores.loc['gpt-4-0613', 'score']:.1f} ["
    )
    assert board.loc["gpt-4-0314", "rank Arena-Hard score"] == "1 of 4"
    assert board.loc["gpt-4-0314", "source"] == (
        "baseline; released judgments (lmarena/arena-hard-auto)"
    )
    assert not [c for c in board.columns if c.startswith(("Bradley-Terry", "Elo"))]
    md = (tables / "leaderboard.md").read_text()
    assert "Arena-Hard-Auto (released judgments):" in md and "RAG-QA Arena" not in md
    assert not (repo / "results/arena").exists() and not (repo / "results/drfr").exists()
