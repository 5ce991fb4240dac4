"""Dawid-Skene (isqaflow.dawid_skene) against crowd-kit's DawidSkene on seeded panels, and on a
panel whose truth is known."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from isqaflow.dawid_skene import dawid_skene

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REFERENCE = FIXTURES / "dawid_skene_crowdkit.json"
CROWDKIT_PYTHON = os.environ.get("ISQAFLOW_CROWDKIT_PYTHON")


def check_case(case: dict) -> None:
    rows = case["rows"]
    fit = dawid_skene(
        [r["task"] for r in rows], [r["worker"] for r in rows], [r["label"] for r in rows]
    )
    assert fit.iterations == case["iterations"]
    classes = list(fit.classes)
    assert classes == sorted(case["priors"])
    np.testing.assert_allclose(fit.priors, [case["priors"][c] for c in classes], rtol=0, atol=1e-9)
    for entry in case["errors"]:
        w, k = fit.raters.index(entry["worker"]), classes.index(entry["label"])
        np.testing.assert_allclose(fit.errors[w, k], [entry[c] for c in classes], rtol=0, atol=1e-9)
    # a label a rater never gave has no row in crowd-kit's matrix: probability 0 here
    given = {(e["worker"], e["label"]) for e in case["errors"]}
    for w, rater in enumerate(fit.raters):
        for k, label in enumerate(classes):
            if (rater, label) not in given:
                assert (fit.errors[w, k] == 0).all()
    for i, item in enumerate(fit.items):
        np.testing.assert_allclose(
            fit.probas[i], [case["probas"][item][c] for c in classes], rtol=0, atol=1e-9
        )
    assert dict(zip(fit.items, fit.labels(), strict=True)) == case["labels"]


def test_equal_to_crowdkit_on_the_committed_fixture():
    reference = json.loads(REFERENCE.read_text())
    assert len(reference["cases"]) == 12
    for case in reference["cases"]:
        check_case(case)


@pytest.mark.skipif(
    not CROWDKIT_PYTHON,
    reason="ISQAFLOW_CROWDKIT_PYTHON does not name a Python with crowd-kit (a test-only venv)",
)
def test_equal_to_crowdkit_live(tmp_path):
    """The fixture's script rerun with crowd-kit itself: the same cases, the same fits."""
    out = tmp_path / "reference.json"
    subprocess.run(
        [CROWDKIT_PYTHON, str(FIXTURES / "make_dawid_skene_reference.py"), str(out)], check=True
    )
    for case in json.loads(out.read_text())["cases"]:
        check_case(case)


def test_recovers_the_raters_accuracy_on_a_known_truth():
    """Five raters of 2,000 items drawn from the model itself (accuracies 0.9 to 0.5, errors
    uniform over the two other labels): each fitted accuracy within 0.01 of the rater's share
    correct against the truth, and the fit's labels closer to the truth than the majority vote.
    (With three such raters crowd-kit and this fit both give the best one 0.945 for 0.904:
    Dawid-Skene needs enough raters to tell a rater's skill from the items'.)"""
    rng = np.random.default_rng(3)
    classes = np.array(["1", "2", "tie"])
    truth = rng.choice(3, size=2000, p=[0.4, 0.4, 0.2])
    items, raters, labels, correct = [], [], [], []
    votes = np.zeros((2000, 3))
    for rater, accuracy in zip("abcde", (0.9, 0.8, 0.7, 0.6, 0.5), strict=True):
        right = rng.random(2000) < accuracy
        other = (truth + rng.integers(1, 3, size=2000)) % 3
        said = np.where(right, truth, other)
        correct.append((said == truth).mean())
        votes[np.arange(2000), said] += 1
        items += list(range(2000))
        raters += [rater] * 2000
        labels += list(classes[said])
    fit = dawid_skene(items, raters, labels)
    np.testing.assert_allclose(fit.accuracy(), correct, rtol=0, atol=0.01)
    ds = (np.array(fit.labels()) == classes[truth]).mean()
    majority = (votes.argmax(axis=1) == truth).mean()
    assert ds > majority + 0.02  # 0.939 against 0.909


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="one item, rater and label per row, got 2, 1 and 2"):
        dawid_skene(["t1", "t2"], ["w"], ["1", "2"])
    with pytest.raises(ValueError, match="at least one label"):
        dawid_skene([], [], [])
