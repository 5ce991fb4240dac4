"""Dawid-Skene: each rater's confusion matrix and the items' latent true labels, by EM.

Dawid and Skene (1979, Applied Statistics 28(1), 20-28): every item has a latent true class
``z`` with prior ``p[c]``; rater ``w`` gives label ``k`` to an item of class ``c`` with probability
``e_w[k, c]`` (its confusion matrix), independently of the other raters given ``z``.  EM
alternates the posterior of each item's class (E-step) with the priors and confusion matrices
that maximise the expected likelihood (M-step).

The steps are crowd-kit's ``DawidSkene`` (1.4.2, ``crowdkit/aggregation/classification/
dawid_skene.py``) so that the numbers are the field's: initialised from the majority vote's
label shares per item; the confusion counts clipped below at 1e-10 for the labels a rater gave
(a label it never gave keeps probability 0 -- crowd-kit's rows exist only for observed labels);
stopping when the evidence lower bound per label grows by less than ``tol``; the final
posteriors and priors clipped below at 1e-10 as crowd-kit leaves them; ties in the most likely
class broken by the first class in sorted order.  tests/unit/test_dawid_skene.py checks
equality with crowd-kit on a committed fixture (tests/fixtures/dawid_skene_crowdkit.json,
written by tests/fixtures/make_dawid_skene_reference.py) and, where ``ISQAFLOW_CROWDKIT_PYTHON``
names a Python with crowd-kit, live.  crowd-kit is not a dependency: it installs beside our pins
but would add a package for forty lines of numpy.

Ground floor (numpy only): it knows raters, items and labels, not judges or suites.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["EPS", "DawidSkeneFit", "dawid_skene"]

EPS = 1e-10  # crowd-kit's _EPS


@dataclass(frozen=True)
class DawidSkeneFit:
    """The fitted model: ``classes`` (sorted), ``items`` and ``raters`` (first appearance),
    ``priors`` (K), ``errors`` (raters x observed label x true class: P(label | class)),
    ``probas`` (items x K: each item's posterior over its true class), ``iterations`` run."""

    classes: tuple[Hashable, ...]
    items: tuple[Hashable, ...]
    raters: tuple[Hashable, ...]
    priors: np.ndarray
    errors: np.ndarray
    probas: np.ndarray
    iterations: int

    def labels(self) -> list[Hashable]:
        """Each item's most likely true class (the first class in sorted order on a tie)."""
        return [self.classes[i] for i in np.argmax(self.probas, axis=1)]

    def accuracy(self) -> np.ndarray:
        """Per rater, the probability it gives an item's true class: sum_c p[c] e_w[c, c]."""
        diagonal = np.diagonal(self.errors, axis1=1, axis2=2)
        return diagonal @ self.priors


def _m_step(counts_of: np.ndarray, given: np.ndarray, probas: np.ndarray) -> np.ndarray:
    """Confusion matrices from the posteriors: per rater the posterior mass of each true class
    on the items it gave each label, clipped below at EPS where it gave that label, normalised
    over labels per true class."""
    errors = np.einsum("wik,ic->wkc", counts_of, probas)
    errors = np.where(given[:, :, None], np.maximum(errors, EPS), 0.0)
    return errors / errors.sum(axis=1, keepdims=True)


def _log_terms(counts_of: np.ndarray, errors: np.ndarray, log) -> np.ndarray:
    """items x K: the sum over an item's labels of log e_w[label, c] (only labels given)."""
    with np.errstate(divide="ignore"):
        logs = np.where(errors > 0, log(np.where(errors > 0, errors, 1.0)), 0.0)
    return np.einsum("wik,wkc->ic", counts_of, logs)


def dawid_skene(
    items: Sequence[Hashable],
    raters: Sequence[Hashable],
    labels: Sequence[Hashable],
    n_iter: int = 100,
    tol: float = 1e-5,
) -> DawidSkeneFit:
    """Fit Dawid-Skene to one label per row (``items[i]``, ``raters[i]``, ``labels[i]``).

    Raises ValueError when the three differ in length, or there is no row."""
    if not (len(items) == len(raters) == len(labels)):
        raise ValueError(
            f"dawid_skene needs one item, rater and label per row, got {len(items)}, "
            f"{len(raters)} and {len(labels)}"
        )
    if not len(labels):
        raise ValueError("dawid_skene needs at least one label")
    classes = tuple(sorted(set(labels)))
    item_ids = tuple(dict.fromkeys(items))
    rater_ids = tuple(dict.fromkeys(raters))
    i_of = {t: n for n, t in enumerate(item_ids)}
    w_of = {w: n for n, w in enumerate(rater_ids)}
    k_of = {c: n for n, c in enumerate(classes)}
    n_items, n_raters, n_classes = len(item_ids), len(rater_ids), len(classes)
    # counts_of[w, i, k]: how often rater w gave item i label k
    counts_of = np.zeros((n_raters, n_items, n_classes))
    for item, rater, label in zip(items, raters, labels, strict=True):
        counts_of[w_of[rater], i_of[item], k_of[label]] += 1
    given = counts_of.sum(axis=1) > 0
    votes = counts_of.sum(axis=0)
    probas = votes / votes.sum(axis=1, keepdims=True)  # the majority vote's shares
    priors = probas.mean(axis=0)
    errors = _m_step(counts_of, given, probas)
    loss, iterations = -np.inf, 0
    for _ in range(n_iter):
        iterations += 1
        log_lik = np.log2(np.maximum(priors, EPS)) + _log_terms(counts_of, errors, np.log2)
        scaled = np.exp2(log_lik - log_lik.max(axis=1, keepdims=True))
        probas = scaled / scaled.sum(axis=1, keepdims=True)
        priors = probas.mean(axis=0)
        errors = _m_step(counts_of, given, probas)
        # the evidence lower bound per label: expected joint log-likelihood plus entropy
        joint = (probas * _log_terms(counts_of, errors, np.log)).sum()
        joint += (
            probas * counts_of.sum(axis=(0, 2))[:, None] * np.log(np.maximum(priors, EPS))
        ).sum()
        clipped = np.maximum(probas, EPS)
        new_loss = (joint - (np.log(clipped) * clipped).sum()) / len(labels)
        probas = clipped  # crowd-kit clips its posteriors in place here and returns them so
        if new_loss - loss < tol:
            break
        loss = new_loss
    return DawidSkeneFit(
        classes=classes,
        items=item_ids,
        raters=rater_ids,
        priors=np.maximum(priors, EPS),
        errors=errors,
        probas=probas,
        iterations=iterations,
    )
