"""Write a table as CSV, Markdown and LaTeX (booktabs), atomically.

CSV keeps full precision (for further analysis); Markdown and LaTeX round to
``digits`` for reading and for the paper.  LaTeX special characters in cells and
headers are escaped.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from isqaflow.io import atomic_open

_LATEX_SPECIAL = {
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))


def _flat(df: pd.DataFrame) -> pd.DataFrame:
    """One header row and the index as ordinary columns (row labels read as text, not tuples)."""
    df = df.copy()
    if isinstance(df.columns, pd.MultiIndex):
        df.columns = [" ".join(str(p) for p in col if str(p)) for col in df.columns]
    if not isinstance(df.index, pd.RangeIndex):
        df = df.reset_index()
    return df


def write_table(
    df: pd.DataFrame,
    paths: Sequence[str | os.PathLike],
    digits: int = 2,
    caption: str | None = None,
    notes: Sequence[str] = (),
) -> None:
    """Write ``df`` to each path by its suffix: .csv, .md or .tex; ``notes``: paragraphs written
    under the Markdown table (footnotes)."""
    for path in map(Path, paths):
        if path.suffix == ".csv":
            with atomic_open(path) as handle:
                df.to_csv(handle)
        elif path.suffix == ".md":
            flat = _flat(df)
            # a table without any column (a stage with nothing to report) still reads as a table
            text = (
                flat.to_markdown(floatfmt=f".{digits}f", index=False)
                if len(flat.columns)
                else "| (no rows) |\n|:--|"
            )
            with atomic_open(path) as handle:
                if caption:
                    handle.write(f"{caption}\n\n")
                handle.write(text + "\n")
                for note in notes:
                    handle.write(f"\n{note}\n")
        elif path.suffix == ".tex":
            escaped = _flat(df).rename(columns=latex_escape)
            escaped = escaped.map(lambda v: latex_escape(v) if isinstance(v, str) else v)
            body = escaped.to_latex(
                float_format=f"%.{digits}f", na_rep="--", escape=False, index=False
            )
            with atomic_open(path) as handle:
                if caption:
                    handle.write(f"% {caption}\n")
                handle.write(body)
        else:
            raise ValueError(f"{path}: unknown table format {path.suffix!r} (csv, md, tex)")


def table_paths(stem: str | os.PathLike) -> list[str]:
    return [f"{stem}.csv", f"{stem}.md", f"{stem}.tex"]
