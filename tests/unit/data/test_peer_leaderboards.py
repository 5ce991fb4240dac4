"""The peers' published-number files (isqaflow.data.peers): arena-hard's
misc/past_leaderboards.md and AlpacaEval's length_controlled_v1 coefficients, on small files
written here (every malformed case) and on the real ones where ../shared/data/peers has them."""

from __future__ import annotations

import pytest
from conftest import SHARED_DATA

from isqaflow.data.peers import read_alpaca_eval_lc_weights, read_arena_hard_past_leaderboards
from isqaflow.io import RecordError

BOARD = """# Old Leaderboards

**Arena-Hard-v0.1 (Style Control)**

```console
model-x                   | score: 49.7  | 95% CI: (-2.3, 2.5)  | average #tokens: 354
gpt-4-0314                | score: 50.0  | 95% CI:  (0.0, 0.0)  | average #tokens: 423
```

```console
model-x                   | score:  7.1  | 95% CI: (-1.3, 1.2)  | average #tokens: 354
```
"""


def test_past_leaderboards_blocks_titles_and_relative_intervals(tmp_path):
    path = tmp_path / "past.md"
    path.write_text(BOARD)
    read = read_arena_hard_past_leaderboards(path)
    table = read.table
    assert table["block"].tolist() == [1, 1, 2]
    # the title belongs to the block after it only; the second block has none
    assert table["title"].tolist() == ["Arena-Hard-v0.1 (Style Control)"] * 2 + [""]
    first = table.iloc[0]
    assert (first["model"], first["score"], first["ci_lower"], first["ci_upper"]) == (
        "model-x",
        49.7,
        -2.3,
        2.5,
    )
    assert table["tokens"].tolist() == [354, 423, 354]
    assert table.iloc[2]["score"] == 7.1  # a padded "score:  7.1"
    assert dict(read.counts) == {"rows": 3, "blocks": 2}


@pytest.mark.parametrize(
    "text, message, line",
    [
        (BOARD.replace("| score: 49.7", "| points: 49.7"), "not a leaderboard row", 6),
        (BOARD.replace("gpt-4-0314 ", "model-x    "), "'model-x' twice in block 1", 7),
        (BOARD.rstrip("`\n") + "\n", "block 2 is not closed", None),
    ],
)
def test_malformed_past_leaderboards_name_the_line(tmp_path, text, message, line):
    path = tmp_path / "past.md"
    path.write_text(text)
    with pytest.raises(RecordError, match=message) as err:
        read_arena_hard_past_leaderboards(path)
    assert err.value.line == line and err.value.file == str(path)


WEIGHTS = (
    ",np.tanh(std_delta_len),instruction_difficulty,not_gamed_baseline.astype(float)\n"
    "model-x,-0.5,0.8,-1.25\n"
    "baseline,0.0,0.0,0.0\n"
)


def test_lc_weights_in_this_projects_length_direction(tmp_path):
    path = tmp_path / "weights.csv"
    path.write_text(WEIGHTS)
    table = read_alpaca_eval_lc_weights(path).table
    assert list(table.columns) == ["theta", "phi", "psi"]
    # alpaca_eval's length term is baseline minus model: a negative weight favours length
    assert table.loc["model-x"].tolist() == [-1.25, 0.5, 0.8]
    assert table.loc["baseline"].abs().sum() == 0


@pytest.mark.parametrize(
    "text, message, record, field, line",
    [
        (WEIGHTS.replace("instruction_difficulty", "difficulty"), "missing columns", None, None, 1),
        (
            WEIGHTS.replace("0.8", "n/a"),
            "not a finite number: 'n/a'",
            "model-x",
            "instruction_difficulty",
            2,
        ),
        (
            WEIGHTS.replace("0.0,0.0,0.0", "inf,0,0"),
            "not a finite number: 'inf'",
            "baseline",
            "np.tanh(std_delta_len)",
            3,
        ),
        (WEIGHTS.replace("\nbaseline,", "\nmodel-x,"), "model twice", "model-x", None, None),
    ],
)
def test_malformed_lc_weights_name_the_model_and_field(
    tmp_path, text, message, record, field, line
):
    path = tmp_path / "weights.csv"
    path.write_text(text)
    with pytest.raises(RecordError, match=message) as err:
        read_alpaca_eval_lc_weights(path)
    assert (err.value.record, err.value.field, err.value.line) == (record, field, line)


def test_the_real_files():
    peers = SHARED_DATA / "peers"
    if not peers.is_dir():
        pytest.skip(f"the peers' released files are not present ({peers})")
    past = read_arena_hard_past_leaderboards(peers / "arena-hard/misc/past_leaderboards.md").table
    styled = past[past["title"] == "Arena-Hard-v0.1 (Style Control)"].set_index("model")
    plain = past[past["block"] == 2].set_index("model")
    assert styled.loc["gpt-4-0613", "score"] == 49.7 and plain.loc["gpt-4-0613", "score"] == 37.9
    assert styled.loc["gpt-3.5-turbo-0125", "tokens"] == 329
    weights = read_alpaca_eval_lc_weights(
        peers / "alpaca_eval/length_controlled_v1_weights_baseline_gpt4_1106_preview.csv"
    ).table
    assert len(weights) == 200 and weights.loc["gpt4_1106_preview"].abs().sum() == 0
