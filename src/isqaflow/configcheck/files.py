"""The config files themselves: overlays, and a key written twice in one mapping.

A config file given on the command line with every top-level section (``config/paper.yaml``)
replaces the embedded default; one with only some sections is an overlay, merged onto the
default (:func:`is_overlay`, used by the Snakefile): one's own systems are added in a file of
their own, without editing ``config/config.yaml``.

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
                    problems.append(
                        ConfigProblem(
                            path,
                            f"written twice in {file} (lines {first[name]} and {line}): "
                            "YAML keeps only the last, silently",
                        )
                    )
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


def is_overlay(paths: Iterable[str | os.PathLike], required: Iterable[str]) -> bool:
    """Whether the config files ``paths`` are all overlays: none has every ``required``
    top-level section (the schema's), so they are merged onto the default config."""
    import yaml

    for file in map(Path, paths):
        data = yaml.safe_load(file.read_text(encoding="utf-8")) if file.is_file() else None
        if isinstance(data, dict) and set(required) <= set(data):
            return False
    return True


# The pools of systems an overlay may take a default's entry out of (``handwritten: null``),
# and the lists that name their entries: a removed name leaves them too (the default's
# ``isqa.judged_systems`` lists ``handwritten``; dropping the system should not also mean
# rewriting the list).
SYSTEM_POOLS = {
    ("arena", "answerers"): (),
    ("drfr", "responders"): (),
    ("isqa", "file_summaries"): (("isqa", "judged_systems"), ("human_eval", "systems")),
}


# The keys of a RAG domain an overlay may take out: the corpus, where every answerer of the
# run brings its own answers (an overlay merges key by key, so without the null the
# default's corpus would stay).
DOMAIN_KEYS = ("corpus", "corpus_format")


def drop_removed_entries(config: dict) -> list[str]:
    """Remove every system set to ``null`` (an overlay's ``arena.answerers.handwritten: null``)
    from its pool, and its name from the lists that name it (``isqa.judged_systems``,
    ``human_eval.systems``, each ``arena.runs[].answerers``), and a domain's ``corpus: null``
    and ``corpus_format: null``, in place; returns the removed entries' config paths.  Called
    by the Snakefile before the schema check, which would otherwise refuse the ``null``
    ("expected a mapping")."""
    removed: list[str] = []
    domains = ((config.get("datasets") or {}).get("rag") or {}).get("domains")
    for name, entry in (domains if isinstance(domains, dict) else {}).items():
        for key in DOMAIN_KEYS:
            if isinstance(entry, dict) and key in entry and entry[key] is None:
                del entry[key]
                removed.append(f"datasets.rag.domains.{name}.{key}")
    for (section, pool), lists in SYSTEM_POOLS.items():
        entries = (config.get(section) or {}).get(pool)
        if not isinstance(entries, dict):
            continue
        gone = {name for name, entry in entries.items() if entry is None}
        removed += [f"{section}.{pool}.{name}" for name in entries if name in gone]
        for name in gone:
            del entries[name]
        named = [config.get(where) or {} for where, _ in lists]
        keys = [key for _, key in lists]
        if pool == "answerers":
            named += [r for r in config[section].get("runs") or [] if isinstance(r, dict)]
            keys += ["answerers"] * (len(named) - len(keys))
        for holder, key in zip(named, keys, strict=True):
            if isinstance(holder.get(key), list):
                holder[key] = [n for n in holder[key] if n not in gone]
    return removed
