"""The checks of config ``peers:`` (the peers' released judgments, rules/peers.smk) that the
schema cannot make: every file there and readable, and each key used by its format only."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from isqaflow.configcheck.references import ConfigProblem
from isqaflow.configcheck.systems import GLOB_CHARS, file_problem

# format -> the keys it reads beyond format, files and judge (the schema names them all)
KEYS = {
    "arena_hard_battles": {"baseline", "answers"},
    "arena_hard_judgments": {"baseline", "answers", "strong_weight"},
    "alpaca_eval_annotations": {"baseline"},
    "infobench_eval": {"system"},
}


def peer_problems(config: Mapping[str, Any], workdir: str | Path = ".") -> list[ConfigProblem]:
    """A problem per missing or unreadable file (one file each: no folder, no glob), per key its
    format does not read, and per InFoBench entry without its ``system``."""
    problems = []
    workdir = Path(workdir)
    for name, entry in (config.get("peers") or {}).items():
        where = f"peers.{name}"
        fmt = entry.get("format")
        if fmt not in KEYS:
            continue  # the schema names it
        for key in sorted(set(entry) - {"format", "files", "judge"} - KEYS[fmt]):
            problems.append(
                ConfigProblem(
                    f"{where}.{key}",
                    f"format {fmt} does not read it; it reads: " + ", ".join(sorted(KEYS[fmt])),
                )
            )
        if fmt == "infobench_eval" and not entry.get("system"):
            problems.append(
                ConfigProblem(
                    f"{where}.system",
                    "missing: an InFoBench evaluation file does not name the model it judged",
                )
            )
        for key in ("files", "answers"):
            for i, written in enumerate(entry.get(key) or []):
                if any(c in written for c in GLOB_CHARS) or (workdir / written).is_dir():
                    problem = f"{written!r}: one released file, not a folder or a glob"
                else:
                    problem = file_problem(written, workdir)
                if problem:
                    problems.append(ConfigProblem(f"{where}.{key}[{i}]", problem))
    return problems


def length_control_problems(
    config: Mapping[str, Any], workdir: str | Path = "."
) -> list[ConfigProblem]:
    """``arena.length_control``: its gamed systems and difficulty file are read by
    length_controlled_v1 only, and the file must be there."""
    control = (config.get("arena") or {}).get("length_control") or {}
    where = "arena.length_control"
    problems = []
    if control.get("glm", "noreg") == "noreg":
        for key in ("gamed", "difficulty"):
            if control.get(key):
                problems.append(
                    ConfigProblem(f"{where}.{key}", "read by glm: length_controlled_v1 only")
                )
    elif control.get("difficulty"):
        problem = file_problem(control["difficulty"], Path(workdir))
        if problem:
            problems.append(ConfigProblem(f"{where}.difficulty", problem))
    return problems
