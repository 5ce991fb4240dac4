"""The config files themselves: a key written twice in one mapping.

YAML readers (PyYAML, so Snakemake's ``--configfile``) keep the last of two equal keys
without a word, so a second ``bm25:`` under ``arena.retrievers``, or a second ``papers:``
under ``human_eval``, silently replaces the first.  Each repeated key is a problem naming
the file, the line of both occurrences and the key's path.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from isqaflow.configcheck.references import ConfigProblem


def duplicate_keys(paths: Iterable[str | os.PathLike]) -> list[ConfigProblem]:
    """Every key written twice in one mapping of the YAML files ``paths`` (missing files skipped)."""
    import yaml

    problems: list[ConfigProblem] = []

    def walk(node, where: str) -> None:
        if isinstance(node, yaml.MappingNode):
            first: dict[str, int] = {}
            for key, value in node.value:
                name = str(key.value)
                path = f"{where}.{name}" if where else name
                line = key.start_mark.line + 1
                if name in first and name != "<<":
                    problems.append(ConfigProblem(
                        path, f"written twice in {file} (lines {first[name]} and {line}): "
                              "YAML keeps only the last, silently"))
                first.setdefault(name, line)
                walk(value, path)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, f"{where}[{i}]")

    for file in map(Path, paths):
        if not file.is_file():
            continue
        try:
            root = yaml.compose(file.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
        except yaml.YAMLError:
            continue  # Snakemake has reported it already, when it loaded the file
        walk(root, "")
    return problems
