"""Seeded random generators derived from a run's seed and a stable key.

A generator per key (a paper id, a summary text) makes each draw independent of
which other items a job processes, so adding a paper does not change the batches or
candidates drawn for the others.
"""

from __future__ import annotations

import hashlib

import numpy as np


def keyed_rng(seed: int, key: str) -> np.random.Generator:
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))
