"""Figures: saved atomically as PNG and SVG, and byte-identical when nothing changed."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from isqaflow.report.figures import new_figure, save_figure


def _draw(paths) -> None:
    fig, axes = new_figure(ncols=2)
    for ax in axes:
        ax.plot([1, 2, 3], [3, 1, 2], marker="o", label="line")
        ax.legend()
    save_figure(fig, paths)


def test_an_unchanged_figure_is_byte_identical(tmp_path):
    """SVG element ids come from a random salt unless it is fixed: two saves of the same
    figure must give the same bytes, or every run would change the figure files."""
    _draw([tmp_path / "a.svg", tmp_path / "a.png"])
    _draw([tmp_path / "b.svg", tmp_path / "b.png"])
    assert (tmp_path / "a.svg").read_bytes() == (tmp_path / "b.svg").read_bytes()
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()


def test_the_same_figure_from_two_processes_is_byte_identical(tmp_path):
    """The salt is per process otherwise: a rerun job is a new process."""
    script = textwrap.dedent("""
        import sys
        from pathlib import Path
        from isqaflow.report.figures import new_figure, save_figure
        fig, axes = new_figure()
        axes[0].plot([1, 2, 3], [3, 1, 2], label="line")
        axes[0].legend()
        save_figure(fig, [Path(sys.argv[1])])
    """)
    for name in ("p.svg", "q.svg"):
        subprocess.run([sys.executable, "-c", script, str(tmp_path / name)], check=True)
    assert (tmp_path / "p.svg").read_bytes() == (tmp_path / "q.svg").read_bytes()


def test_the_front_pages_forest_plot_is_the_same_from_two_processes():
    """results/at_a_glance.html inlines forest plots as SVG (isqaflow.report.front.forest_svg):
    drawn without the fixed salt, each run rewrote the page's element ids."""
    script = textwrap.dedent("""
        from isqaflow.report.front import forest_svg
        print(forest_svg("DRFR (95% CI)", [("a", 0.5, 0.4, 0.6), ("b", 0.7, float("nan"), float("nan"))]))
    """)
    pages = [
        subprocess.run(
            [sys.executable, "-c", script], check=True, capture_output=True, text=True
        ).stdout
        for _ in range(2)
    ]
    assert pages[0].startswith("<svg") and ' id="' in pages[0]  # ids, salted
    assert pages[0] == pages[1]
