"""Style control (arena-hard-auto's Bradley-Terry with style covariates): the counts, the
normalization, the fit's style-free score and its labelled interval."""

import numpy as np
import pandas as pd
import pytest

from isqaflow.arena.ratings.style import (
    FEATURES,
    markdown_counts,
    style_controlled,
    style_differences,
)


def test_markdown_counts_follow_add_markdown_info():
    """Headers need '#'..'######' and a space at a line start; list items ordered and
    unordered; bold ** and __ spans on one line; a fenced code block's contents are removed
    first (its '# comment' and '- item' are not counted)."""
    text = (
        "# Title\n## Sub\n####### seven\n#nospace\n"
        "1. one\n  2. two\n- a\n* b\n+ c\n-no\n"
        "**bold** and __also__ and **not\nbold**\n"
        "```python\n# comment\n- item\n**x**\n```\n"
    )
    assert markdown_counts(text) == {"headers": 2, "lists": 5, "bolds": 2}
    assert markdown_counts("plain text") == {"headers": 0, "lists": 0, "bolds": 0}


def test_style_differences_are_normalized_then_standardized():
    a = np.array([[100, 2, 5, 0], [50, 0, 0, 1], [10, 1, 1, 1]], dtype=float)
    b = np.array([[50, 0, 5, 1], [50, 2, 1, 0], [30, 1, 0, 2]], dtype=float)
    raw = (a - b) / (a + b + 1)
    z = style_differences(a, b)
    np.testing.assert_allclose(z, (raw - raw.mean(0)) / raw.std(0))
    np.testing.assert_allclose(style_differences(a, b, center=False), raw / raw.std(0))
    # v2: length without the +1, markdown as densities per token
    v2 = style_differences(a, b, features="v2", center=False)
    da, db = a[:, 1:] / (a[:, :1] + 1), b[:, 1:] / (b[:, :1] + 1)
    length = (a[:, 0] - b[:, 0]) / (a[:, 0] + b[:, 0])
    np.testing.assert_allclose(v2[:, 0], length / length.std())
    dens = (da - db) / (da + db + 1)
    np.testing.assert_allclose(v2[:, 1:], dens / dens.std(0))
    with pytest.raises(ValueError, match=r"\['headers'\] do not vary"):
        style_differences(a, np.c_[b[:, :1], a[:, 1:2], b[:, 2:]])


def _length_judge(seed=0, n=600):
    """Two models as strong as the baseline; the judge prefers the longer answer. Model
    'long' writes longer answers than the baseline, 'short' shorter."""
    rng = np.random.default_rng(seed)
    battles, counts = [], []
    for q in range(n):
        base = int(rng.integers(200, 600))
        counts.append(
            {
                "model": "base",
                "question_id": f"q{q}",
                "tokens": base,
                "headers": int(rng.integers(0, 3)),  # the same markdown habits as the models
                "lists": int(rng.integers(0, 4)),
                "bolds": int(rng.integers(0, 3)),
            }
        )
        for model, factor in (("long", 1.8), ("short", 0.5)):
            tokens = int(base * factor * rng.uniform(0.3, 3.0))
            counts.append(
                {
                    "model": model,
                    "question_id": f"q{q}",
                    "tokens": tokens,
                    "headers": int(rng.integers(0, 3)),
                    "lists": int(rng.integers(0, 4)),
                    "bolds": int(rng.integers(0, 3)),
                }
            )
            x = (base - tokens) / (base + tokens + 1)  # baseline (model_a) minus model
            p_a = 1 / (1 + np.exp(-4 * x))
            winner = "model_a" if rng.random() < p_a else "model_b"
            battles.append(
                {"question_id": f"q{q}", "model_a": "base", "model_b": model, "winner": winner}
            )
    return pd.DataFrame(battles), pd.DataFrame(counts)


def test_style_control_removes_a_length_preference():
    """Plain Bradley-Terry ranks the verbose model above the baseline and the terse one below it; read at equal
    style (uncentred), both come back near the baseline's 50 and the length coefficient is
    positive (model_a's longer answer helps model_a)."""
    battles, counts = _length_judge()
    table, coef = style_controlled(battles, counts, "base", rounds=20, seed=1, center=False)
    plain = table["Bradley-Terry win rate %"]
    controlled = table["style-controlled win rate %"]
    assert plain["long"] > 70 and plain["short"] < 45
    assert abs(controlled["long"] - 50) < 8 and abs(controlled["short"] - 50) < 8
    assert coef["tokens"] > 0.5 and list(coef.index) == list(FEATURES)
    assert controlled["base"] == pytest.approx(50.0)


def test_the_interval_is_labelled_with_its_level():
    battles, counts = _length_judge(n=200)
    for level, label in ((0.9, "90%"), (0.95, "95%")):
        table, _ = style_controlled(battles, counts, "base", rounds=30, seed=2, level=level)
        lower, upper = table[f"lower ({label})"], table[f"upper ({label})"]
        score = table["style-controlled win rate %"]
        assert (lower <= score + 1e-9).all() and (score <= upper + 1e-9).all()
        assert (upper - lower)["long"] > 0
    with pytest.raises(ValueError, match="level must be in"):
        style_controlled(battles, counts, "base", rounds=1, level=95)


def test_an_answer_without_counts_is_named():
    battles, counts = _length_judge(n=20)
    with pytest.raises(
        ValueError, match=r"battle \d+: no answer counts for model_b 'short', question 'q3'"
    ):
        style_controlled(
            battles,
            counts.drop(counts.index[(counts.model == "short") & (counts.question_id == "q3")]),
            "base",
            rounds=0,
        )


def test_a_constant_feature_is_an_error_or_left_out_as_asked():
    """No answer has a header: arena-hard would divide by a zero deviation. By default that is
    an error naming the feature; with constant="drop" the fit leaves it out (its coefficient
    NaN) and is the fit on the other three features' standardized differences exactly."""
    from isqaflow.arena.ratings import style

    battles, counts = _length_judge(n=60)
    counts = counts.assign(headers=0)
    with pytest.raises(ValueError, match=r"style features \['headers'\] do not vary"):
        style_controlled(battles, counts, "base", rounds=0)
    with pytest.raises(ValueError, match="constant must be"):
        style_controlled(battles, counts, "base", rounds=0, constant="keep")
    table, coef = style_controlled(battles, counts, "base", rounds=0, constant="drop")
    assert np.isnan(coef["headers"]) and not coef.drop("headers").isna().any()
    # by hand: v0.1's (a - b) / (a + b + 1) of the three varying features, centred and scaled
    kept = ["tokens", "lists", "bolds"]
    indexed = counts.set_index(["model", "question_id"])[kept]
    a, b = (
        indexed.loc[pd.MultiIndex.from_arrays([battles[side], battles["question_id"]])].to_numpy(
            float
        )
        for side in ("model_a", "model_b")
    )
    diff = (a - b) / (a + b + 1)
    z = (diff - diff.mean(axis=0)) / diff.std(axis=0)
    models, X, Y, _ = style._design(battles, z)
    by_hand = style._win_rates(style._fit(X, Y, len(models)), models, "base")
    np.testing.assert_allclose(table["style-controlled win rate %"], by_hand.loc[table.index])
