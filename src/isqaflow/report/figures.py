"""Figures as PNG (for the report) and SVG (for papers), with a fixed, headless backend."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path


def new_figure(ncols: int = 1, width: float = 4.2, height: float = 3.2):
    import matplotlib

    matplotlib.use("Agg")
    # SVG element ids come from a random salt unless one is fixed: an unchanged figure
    # must stay byte-identical.
    matplotlib.rcParams["svg.hashsalt"] = "isqaflow"
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, ncols, figsize=(width * ncols, height), squeeze=False)
    return fig, axes[0]


def caveat(fig, warning: str) -> None:
    """Write ``warning`` -- the judge or metric the figure is built on cannot rank these systems
    (:func:`isqaflow.report.validity.cannot_rank`) -- across the top, in red, so the figure is
    never read without it; nothing when ``warning`` is empty."""
    if warning:
        fig.suptitle(warning, color="#b00000", fontsize=8, wrap=True)


def save_figure(fig, paths: Sequence[str | os.PathLike]) -> None:
    """Save to every path (PNG at 150 dpi, SVG with text as text); written to a temporary
    file first and renamed, so a failed job leaves no half-written figure."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    for path in map(Path, paths):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp{path.suffix}")
        fig.savefig(tmp, dpi=150, metadata={"Date": None} if path.suffix == ".svg" else None)
        os.replace(tmp, path)
    plt.close(fig)
