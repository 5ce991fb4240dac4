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
from collections.abc import Iterable, Sequence
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


# A word after --configfile that names one of these is a target Snakemake read as a config
# file (it takes every word after the option as one): the workflow's outputs and any file
# that is not YAML or JSON.
OUTPUT_DIRS = ("results", "logs", "resources")
CONFIG_SUFFIXES = (".yaml", ".yml", ".json")


def _put_targets_first(word: str) -> str:
    return (
        f"{word!r} was read as a config file (Snakemake takes every word after --configfile as "
        f"one): put targets first, `snakemake {word} --configfile <your config files>`"
    )


def looks_like_a_target(word: str, workdir: str | os.PathLike = ".") -> bool:
    """``word`` (as given, or absolute: Snakemake's own list) is an output of the workflow in
    ``workdir`` or not a YAML/JSON file."""
    path, root = Path(word), Path(workdir).resolve()
    if path.is_absolute() and path.is_relative_to(root):
        path = path.relative_to(root)
    output = not path.is_absolute() and path.parts[:1] and path.parts[0] in OUTPUT_DIRS
    return bool(output) or path.suffix.lower() not in CONFIG_SUFFIXES


def misplaced_targets(paths: Iterable[str | os.PathLike]) -> list[ConfigProblem]:
    """A problem for every ``--configfile`` word that looks like a target (an output of the
    workflow, or a file that is not YAML or JSON)."""
    root = Path.cwd()
    return [
        ConfigProblem("--configfile", _put_targets_first(os.path.relpath(word, root)))
        for word in map(str, paths)
        if looks_like_a_target(word)
    ]


def exit_on_misplaced_targets(
    paths: Sequence[str | os.PathLike], config_files: Sequence[str] = ()
) -> None:
    """Called by the Snakefile before the schema check: a target read as a config file (an
    existing output, e.g. ``results/systems/checked.json``, merges into the config and the
    schema would list the valid top-level keys) is named alone, with "put targets first"."""
    import sys

    problems = misplaced_targets(paths)
    if problems:
        from isqaflow.configcheck import format_problems

        print(format_problems(problems, config_files), file=sys.stderr, flush=True)
        sys.exit(1)


def yaml_problem(file: str | os.PathLike, key: str = "--configfile") -> ConfigProblem | None:
    """The one problem of the YAML config file ``file`` as a config file, or ``None``: it is
    missing, not valid YAML (named with its line and column: PyYAML's mark), or not a mapping.
    Snakemake's own loader says "Config file is not valid JSON or YAML" and names neither the
    file nor the line (snakemake.common.configfile, 9.27.1)."""
    import yaml

    word, file = str(file), Path(file)
    if not file.is_file():
        return ConfigProblem(key, f"{word}: no such file")
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        what = getattr(error, "problem", None) or str(error)
        context = getattr(error, "context", None)
        return ConfigProblem(
            key, f"{word}{where}: not valid YAML: {what}" + (f" ({context})" if context else "")
        )
    if not isinstance(data, dict):
        return ConfigProblem(
            key, f"{word}: a config file is a mapping of sections, got {type(data).__name__}"
        )
    return None


def syntax_problems(paths: Iterable[str | os.PathLike]) -> list[ConfigProblem]:
    """What Snakemake, which loads ``--configfile`` files before the workflow is read, reports as
    "not valid JSON or YAML" or a traceback: each file's YAML error with its line and column,
    a missing file (a target after --configfile?), a file that is not a mapping."""
    words = list(map(str, paths))
    files = [w for w in words if not looks_like_a_target(w)]
    problems = misplaced_targets(words)
    problems += [p for p in map(yaml_problem, files) if p is not None]
    return problems + duplicate_keys(files)


def exit_on_syntax_problems(paths: Sequence[str | os.PathLike]) -> None:
    """Called by the Snakefile before it loads the workflow's own YAML files (the embedded
    default ``config/config.yaml`` and the schema, which Snakemake's ``configfile:`` and
    ``validate`` would read with a message naming neither file nor line): each file's YAML
    error with its line and column, then exit."""
    import sys

    words = [os.path.relpath(path) for path in paths]  # as the docs name them
    problems = [p for p in (yaml_problem(word, "file") for word in words) if p is not None]
    if problems:
        from isqaflow.configcheck import format_problems

        print(format_problems(problems), file=sys.stderr, flush=True)
        sys.exit(1)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m isqaflow.configcheck <the words after --configfile>``: the config
    files' syntax, before Snakemake (whose own message names neither file nor line)."""
    import sys

    words = list(sys.argv[1:] if argv is None else argv)
    problems = syntax_problems(words)
    for problem in problems:
        print(problem, file=sys.stderr)
    if not problems:
        print(f"isqaflow: {len(words)} config file(s) read: no syntax problem", file=sys.stderr)
    return 1 if problems else 0
