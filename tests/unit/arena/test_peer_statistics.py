"""The statistics on the peers' released files (../shared/data/peers): AlpacaEval's
length_controlled_v1 against alpaca_eval's own code on the real annotations and against the
published leaderboard and coefficients; arena-hard's style control on its released battles.

Each test skips with its reason where the data, or the test-only environment it needs, is
absent: ``ISQAFLOW_ALPACA_EVAL_PYTHON`` (default /tmp/alpaca-venv/bin/python, alpaca-eval
0.6.6: tests/fixtures/make_lc_v1_reference.py says how to build it) and
``ISQAFLOW_TIKTOKEN_PYTHON`` (default /tmp/s36-tok/bin/python, a Python with ``quicktok-v1``,
which bundles tiktoken's cl100k_base -- the encoding arena-hard v0.1 counted tokens with --
since tiktoken itself downloads its files)."""

import json
import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from isqaflow.arena.ratings.length_inputs import (
    RAW_WIN_RATE,
    RAW_WIN_RATE_SE,
    identification,
    raw_win_rate,
)
from isqaflow.arena.ratings.length_v1 import difficulty_from_weights, fit_v1, predict_from_weights
from isqaflow.arena.ratings.style import markdown_counts, style_controlled
from isqaflow.data.peers import (
    read_alpaca_eval_annotations,
    read_alpaca_eval_lc_weights,
    read_arena_hard_answers,
    read_arena_hard_battles,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SHARED = Path(__file__).resolve().parents[3].parent / "shared" / "data"  # as conftest's shared_data
ALPACA = ("alpaca_eval", "annotations")
GAMED = ("gpt-3.5-turbo-1106_verbose", "gpt-3.5-turbo-1106_concise")  # stand-ins: see below
ARENA_MODELS = ("gpt-4-0314", "gpt-4-0613", "gpt-3.5-turbo-0125")


def _python(variable, default):
    python = os.environ.get(variable, default)
    if not Path(python).exists():
        pytest.skip(f"{variable} ({python}) absent: the test-only environment is not built")
    return python


@pytest.fixture(scope="module")
def alpaca():
    root = SHARED / "peers" / "alpaca_eval"
    if not root.is_dir():
        pytest.skip(f"{root} absent")
    frames = []
    for path in sorted((root / "annotations").glob("*.json")):
        t = read_alpaca_eval_annotations(path).table
        frames.append(
            pd.DataFrame(
                {
                    "system": path.stem,
                    "baseline": t["generator_1"],
                    "query": t["instruction"],
                    "preference": t["preference"] - 1,  # the model's (output_2's) preference
                    "len_system": t["output_2"].str.len(),
                    "len_baseline": t["output_1"].str.len(),
                }
            )
        )
    # the one reader of the coefficients file (theta, phi, psi; phi in this project's direction)
    weights = read_alpaca_eval_lc_weights(
        root / "length_controlled_v1_weights_baseline_gpt4_1106_preview.csv"
    ).table[["theta", "phi", "psi"]]
    board = pd.read_csv(root / "weighted_alpaca_eval_gpt4_turbo_leaderboard.csv", index_col=0)
    return pd.concat(frames, ignore_index=True), weights, board


def test_v1_equals_alpaca_eval_on_the_real_annotations(alpaca, tmp_path):
    """Real soft preferences of claude-2.1 and phi-2 (803 of 805 instructions), two real
    systems standing in for the gamed baselines (AlpacaEval's own, gpt4_1106_preview made
    verbose and concise, are published only on the Hub), the difficulty the published
    coefficients imply: alpaca_eval's function and ours agree to 1e-9."""
    python = _python("ISQAFLOW_ALPACA_EVAL_PYTHON", "/tmp/alpaca-venv/bin/python")
    prefs, weights, _ = alpaca
    order = prefs.loc[prefs["system"] == GAMED[0], "query"].tolist()  # alpaca_eval's lookup order
    code = {q: i for i, q in enumerate(order)}
    gamma = difficulty_from_weights(prefs, weights, ridge=1.0).reindex(order)
    systems = ["claude-2.1", "phi-2"]
    chosen = prefs[prefs["system"].isin(systems + list(GAMED))].assign(
        query=lambda d: d["query"].map(code)
    )
    assert chosen["query"].notna().all()
    inputs = tmp_path / "in.json"
    inputs.write_text(
        json.dumps(
            {
                "preferences": chosen.drop(columns="baseline").to_dict("records"),
                "systems": systems,
                "gamed": list(GAMED),
                "difficulty": gamma.tolist(),
            }
        )
    )
    out = tmp_path / "out.json"
    subprocess.run(
        [python, str(FIXTURES / "make_lc_v1_reference.py"), "--oracle", str(inputs), str(out)],
        check=True,
        capture_output=True,
    )
    reference = json.loads(out.read_text())
    difficulty = pd.Series(gamma.to_numpy(), index=range(len(order)))
    gamed = chosen[chosen["system"].isin(GAMED)]
    for system in systems:
        fit = fit_v1(chosen[chosen["system"] == system], difficulty, gamed)
        expected = reference[system]
        assert fit.lc == pytest.approx(expected["length_controlled_winrate"], abs=1e-9), system
        assert fit.theta == pytest.approx(
            expected["weights"]["not_gamed_baseline.astype(float)"], abs=1e-9
        )


def test_published_coefficients_with_an_implied_difficulty(alpaca):
    """With the published per-model coefficients, the LC win rate needs only the instruction
    difficulty (on the Hub, not here): implied from the *other* 15 models' annotations under
    their published coefficients (a unit-variance prior, ridge 1), it lands nearer the published
    LC than the raw win rate does, for every model but the stronger FuseChat (most difficulties
    come from weaker models). The gaps are printed (docs/fidelity.md records them)."""
    prefs, weights, board = alpaca
    gaps, raw_gaps = {}, {}
    for system, mine in prefs.groupby("system"):
        gamma = difficulty_from_weights(prefs[prefs["system"] != system], weights, ridge=1.0)
        lc = predict_from_weights(
            weights.loc[system, "theta"],
            weights.loc[system, "psi"],
            mine["query"].map(gamma).fillna(0.0),
        )
        published = board.loc[system, "length_controlled_winrate"]
        gaps[system] = lc - published
        raw_gaps[system] = 100 * mine["preference"].mean() - published
    gaps, raw_gaps = pd.Series(gaps), pd.Series(raw_gaps)
    print(pd.DataFrame({"implied - published": gaps, "raw - published": raw_gaps}).round(2))
    assert gaps.abs().mean() < raw_gaps.abs().mean()
    closer = gaps.abs() < raw_gaps.abs()
    assert closer.drop("FuseChat-Llama-3.1-8B-Instruct").all(), gaps[~closer]


def test_the_raw_win_rate_and_its_standard_error_are_the_published_ones(alpaca):
    """The raw win rate and its standard error (the leaderboard's interval for AlpacaEval's
    systems) equal the published win_rate and standard_error of every model here."""
    prefs, _, board = alpaca
    for system, mine in prefs.groupby("system"):
        got = raw_win_rate(mine["preference"])
        assert got[RAW_WIN_RATE] == pytest.approx(board.loc[system, "win_rate"], abs=1e-9)
        assert got[RAW_WIN_RATE_SE] == pytest.approx(board.loc[system, "standard_error"], abs=1e-9)


def test_identification_on_the_real_annotations(alpaca):
    """gpt-3.5-turbo-1106_concise is longer than the baseline in 8 of 805 pairs (and as long
    in 5): no longer identified (41 needed on each side); claude-2.1 (110 longer) still is."""
    prefs, _, _ = alpaca
    status = {
        s: identification(m["len_system"], m["len_baseline"]) for s, m in prefs.groupby("system")
    }
    assert status["gpt-3.5-turbo-1106_concise"].startswith(
        "not identified: the system is not shorter in 13 and not longer in 797 of 805 pairs (at least 41"
    )
    assert status["claude-2.1"] == "identified"


@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    root = SHARED / "peers" / "arena-hard"
    if not root.is_dir():
        pytest.skip(f"{root} absent")
    python = _python("ISQAFLOW_TIKTOKEN_PYTHON", "/tmp/s36-tok/bin/python")
    answers = pd.concat(
        [
            read_arena_hard_answers(
                root / "data" / "arena-hard-v0.1" / "model_answer" / f"{m}.jsonl"
            ).table
            for m in ARENA_MODELS
        ],
        ignore_index=True,
    )
    texts = tmp_path_factory.mktemp("tok") / "texts.json"
    texts.write_text(json.dumps(answers["answer"].tolist()))
    script = (
        "import json, sys, quicktok; enc = quicktok.encoding_for_model('gpt-3.5-turbo'); "
        "print(json.dumps([len(enc.encode(t)) for t in json.load(open(sys.argv[1]))]))"
    )
    tokens = json.loads(
        subprocess.run(
            [python, "-c", script, str(texts)], check=True, capture_output=True, text=True
        ).stdout
    )
    counts = pd.concat(
        [
            answers[["model", "question_id"]],
            pd.DataFrame([markdown_counts(t) for t in answers["answer"]]),
        ],
        axis=1,
    ).assign(tokens=tokens)
    battles = read_arena_hard_battles(root / "data" / "arena_hard_battles.jsonl").table
    board = pd.read_csv(
        root / "leaderboard" / "arena_hard_leaderboard_20240731.csv", index_col="model"
    )
    return battles, counts, board


def test_style_control_on_arena_hards_released_battles(arena):
    """The token counts are arena-hard's (average #tokens 354 and 329, as its tables print);
    the same fit without style columns is the published Bradley-Terry score (37.90, 23.34, to
    0.01). Style-controlled, arena-hard's way (centred), three models' battles give about 37 and
    23 where the full-leaderboard fit published 49.7 and 34.6: centring puts "equal style" at
    the mean difference of the battles fitted, here two models both terser than the baseline,
    and the length coefficient comes from these two models only. Read at a difference of 0
    (uncentred), both terser models rise above their plain scores."""
    battles, counts, board = arena
    means = counts.groupby("model")["tokens"].mean()
    assert int(means["gpt-4-0613"]) == 354 and int(means["gpt-3.5-turbo-0125"]) == 329
    table, coef = style_controlled(battles, counts, "gpt-4-0314", rounds=20, seed=0)
    for model in ("gpt-4-0613", "gpt-3.5-turbo-0125"):
        assert table.loc[model, "Bradley-Terry win rate %"] == pytest.approx(
            board.loc[model, "score"], abs=0.01
        )
    assert coef["tokens"] > 0  # model_a's longer answer helps model_a
    uncentred, _ = style_controlled(battles, counts, "gpt-4-0314", rounds=0, center=False)
    print(table.round(2), uncentred.round(2), coef.round(3), sep="\n")
    for model in ("gpt-4-0613", "gpt-3.5-turbo-0125"):
        assert (
            uncentred.loc[model, "style-controlled win rate %"]
            > table.loc[model, "Bradley-Terry win rate %"] + 2
        )
