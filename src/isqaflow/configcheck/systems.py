"""Systems read from files (``file:`` entries): the file is there, is a file, and can be read
(a folder or a glob: RAG-QA Arena's per-domain prediction files, at least one, each readable).

A system's outputs file is an input of its import job only; when it was missing,
Snakemake said nothing as long as that job's outputs existed ("Nothing to be done", with
the tables of the last run), and planned no arena job under ``--forceall``.  Checked here
instead, with the rest of the config, before any rule is parsed: each problem names the
config key, the path as written and the path it resolved to, and says where a relative
path is read from (the workflow's folder, not the folder the command was started in).
"""

from __future__ import annotations

import difflib
import glob
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from isqaflow.configcheck.references import References
from isqaflow.io import RecordError, read_csv
from isqaflow.settings import ABSTRACT_PLAYER, REFERENCE_PLAYER, reads_file

#: The suites' system sections whose names are rows of the leaderboard.
SYSTEM_SECTIONS = (("arena", "answerers"), ("drfr", "responders"), ("isqa", "file_summaries"))


def system_entries(config: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(config path, entry) of every system read from a file, in the three suites."""
    for section, key in SYSTEM_SECTIONS:
        entries = (config.get(section) or {}).get(key) or {}
        for name, entry in entries.items():
            if isinstance(entry, Mapping) and reads_file(entry):
                yield f"{section}.{key}.{name}", entry


def check_system_names(refs: References) -> None:
    """A system's name is its row in the leaderboard and its player in the arena's ratings:

    * not the name of a player that is no system (LFRQA's reference, the abstract): its
      battles and ratings would merge with the reference's;
    * one name in several suites is one system: the same model (and adapter) in each, or
      a file in each -- not a model in one suite and another model, or a file, in another
      (their numbers would share one leaderboard row).
    """
    reserved = {
        REFERENCE_PLAYER: "LFRQA's reference answers in the arena",
        ABSTRACT_PLAYER: "the papers' abstracts in the summaries' arena",
    }
    seen: dict[str, tuple[str, tuple[Any, ...]]] = {}  # name -> (its first config path, what it is)
    for section, key in SYSTEM_SECTIONS:
        for name, entry in ((refs.config.get(section) or {}).get(key) or {}).items():
            path = f"{section}.{key}.{name}"
            if str(name).lower() in reserved:
                refs.problem(
                    path,
                    f"the name {name!r} is the arena's player for {reserved[str(name).lower()]}; "
                    "give this system another name",
                )
                continue
            if not isinstance(entry, Mapping) or not (
                reads_file(entry)
                or key == "file_summaries"
                or str(entry.get("model")) in refs.section("models")
            ):
                continue  # a wrong model name is reported by its section
            # a model by its checkpoint: two entries of one checkpoint (say, batch sizes) are one system
            what = (
                ("file",)
                if reads_file(entry) or key == "file_summaries"
                else (
                    "model",
                    refs.section("models")[str(entry["model"])].get("model"),
                    entry.get("adapter"),
                )
            )
            if name in seen and seen[name][1] != what:
                first, other = seen[name]
                refs.problem(
                    path,
                    f"{name!r} is also {_described(other)} in {first}, and here "
                    f"{_described(what)}: one leaderboard row would mix two systems; "
                    "give one of them another name",
                )
            seen.setdefault(name, (path, what))


def _described(what: tuple[Any, ...]) -> str:
    if what[0] == "file":
        return "a system read from a file"
    return f"model {what[1]!r}" + (f" with adapter {what[2]!r}" if what[2] else "")


GLOB_CHARS = "*?["


def system_files(written: str, workdir: str | os.PathLike = ".") -> list[str]:
    """The files a system's ``file:`` names: the file; the ``*.json`` files of a folder or the
    files a glob matches (RAG-QA Arena's one prediction file per domain, :mod:`isqaflow.data.ragqa_files`),
    sorted.  Relative paths stay relative (to ``workdir``, where they are looked up)."""
    path = Path(written).expanduser()
    base = Path(workdir)
    if any(c in written for c in GLOB_CHARS):
        found = (Path(p) for p in glob.glob(str(path if path.is_absolute() else base / path)))
    elif (path if path.is_absolute() else base / path).is_dir():
        found = (path if path.is_absolute() else base / path).glob("*.json")
    else:
        return [str(path)]
    files = sorted(p for p in found if p.is_file())
    return [str(p if path.is_absolute() else p.relative_to(base)) for p in files]


#: What each suite's import job writes for a system read from a file (rules/systems.smk), as
#: globs relative to the workflow's folder: a system's file may not be one of its own outputs.
OWN_OUTPUTS = {
    "answerers": ("results/arena/answers/*/{name}.jsonl", "results/systems/arena/*/{name}.json"),
    "responders": ("results/drfr/responses/*/{name}.jsonl", "results/systems/drfr/*/{name}.json"),
    "file_summaries": (
        "results/summaries/*/{name}/file.jsonl",
        "results/systems/isqa/*/{name}.json",
    ),
}


#: The formats a folder or a glob of files is read in (RAG-QA Arena's per-domain prediction
#: files; auto detects each file's format).
FOLDER_FORMATS = ("auto", "ragqa_arena")

ONE_SYSTEM = {"answerers": "answerer", "responders": "responder", "file_summaries": "summarizer"}


def check_system_files(refs: References) -> None:
    """Every ``file:`` of a system entry names readable files (relative to ``refs.workdir``); a
    folder or a glob only for an arena answerer (RAG-QA Arena's per-domain prediction files);
    never the file the system's own import job writes (it would overwrite its input)."""
    for path, entry in system_entries(refs.config):
        written = str(entry["file"])
        key, name = path.split(".")[1], path.split(".", 2)[2]
        resolved = Path(written).expanduser()
        resolved = resolved if resolved.is_absolute() else refs.workdir / resolved
        if key != "answerers" and (any(c in written for c in GLOB_CHARS) or resolved.is_dir()):
            what = "a glob" if any(c in written for c in GLOB_CHARS) else "a folder"
            refs.problem(
                f"{path}.file",
                f"{written!r} (resolved to {os.path.normpath(resolved)}) is {what}: a "
                f"{ONE_SYSTEM[key]}'s outputs are one file (a folder or a glob "
                "holds RAG-QA Arena's per-domain prediction files, for arena.answerers)",
            )
            continue
        own = _own_output(resolved, key, name, refs.workdir)
        if own:
            refs.problem(
                f"{path}.file",
                f"{written!r} is {own}, which this system's import job writes from "
                "the file: it would overwrite its own input; point file: at the "
                "system's original outputs",
            )
            continue
        problem = file_problem(written, refs.workdir, refs.environ.get("PWD"))
        fmt = entry.get("format", "auto")
        if problem:
            refs.problem(f"{path}.file", problem)
        elif fmt not in FOLDER_FORMATS and (
            any(c in written for c in GLOB_CHARS) or resolved.is_dir()
        ):
            # planned, its import job read each file as one and failed with a "not valid
            # JSON" line per line, never saying that a folder needs RAG-QA Arena's format
            what = "a glob" if any(c in written for c in GLOB_CHARS) else "a folder"
            refs.problem(
                f"{path}.format",
                f"{written!r} is {what}, read as RAG-QA Arena's per-domain prediction files; "
                f"format {fmt!r} reads one file: set format: ragqa_arena (or auto), or point "
                "file: at one file",
            )


def _own_output(resolved: Path, key: str, name: str, workdir: Path) -> str | None:
    """The output pattern of the system's own import job that ``resolved`` is, if any."""
    target = Path(os.path.normpath(resolved.absolute()))
    for pattern in OWN_OUTPUTS[key]:
        if target.match(
            str(Path(os.path.normpath(workdir.absolute())) / pattern.format(name=name))
        ):
            return pattern.format(name=name)
    return None


def file_problem(written: str, workdir: Path, started_in: str | None = None) -> str | None:
    """What is wrong with the outputs file ``written`` (None when it can be read): a folder
    or a glob must name at least one file, each readable.

    ``started_in``: the folder the command was started in (the shell's ``PWD``), when it
    differs from the workflow's folder: a relative path found there, not here, is named.
    """
    workdir = Path(workdir).absolute()
    path = Path(written).expanduser()
    resolved = path if path.is_absolute() else workdir / path
    where = f"{written!r} (resolved to {os.path.normpath(resolved)})"
    if any(c in written for c in GLOB_CHARS) or resolved.is_dir():
        files = system_files(written, workdir)
        if not files:
            what = (
                "matches no file"
                if any(c in written for c in GLOB_CHARS)
                else "is a folder without *.json files (a folder holds RAG-QA Arena's per-domain prediction files)"
            )
            return f"{where} {what}; a relative path is read from the workflow's folder {workdir}"
        for file in files:
            problem = (
                file_problem(str(workdir / file), workdir)
                if not any(c in file for c in GLOB_CHARS)
                else None
            )
            if problem:
                return problem
        return None
    if not resolved.exists():
        hint = _relative_hint(path, workdir, started_in) or _close_name(path, resolved)
        return (
            f"{where} does not exist; a relative path is read from the workflow's folder "
            f"{workdir}{hint}"
        )
    if not resolved.is_file():
        return f"{where} is not a regular file"
    if not os.access(resolved, os.R_OK):
        return f"{where} cannot be read (permission denied)"
    return None


def _relative_hint(path: Path, workdir: Path, started_in: str | None) -> str:
    if path.is_absolute() or not started_in or Path(started_in).absolute() == workdir:
        return ""
    there = Path(started_in).absolute() / path
    if there.is_file():
        return (
            f"; it exists relative to {started_in}, where the command was started: "
            f"write {os.path.normpath(there)}"
        )
    return ""


def _close_name(path: Path, resolved: Path) -> str:
    """'; did you mean ...' naming the closest file of the same folder (as ``path`` is written),
    or the missing folder."""
    folder = resolved.parent
    if not folder.is_dir():
        missing = folder
        while not missing.parent.is_dir():
            missing = missing.parent
        return f"; its folder {missing} does not exist"
    names = sorted(p.name for p in folder.iterdir())
    close = difflib.get_close_matches(resolved.name, names, n=1, cutoff=0.6)
    return f"; did you mean {str(path.parent / close[0])!r}?" if close else ""


def check_human_labels_file(refs: References) -> None:
    """``datasets.rag.human_labels``: one readable CSV file (not a folder) with at least one row
    after its header -- an empty file is refused like every empty input, here, before any job
    (its rows are checked against the converted queries by rule check_human_labels)."""
    written = (refs.section("datasets", "rag") or {}).get("human_labels")
    if not written:
        return
    path = "datasets.rag.human_labels"
    resolved = Path(str(written)).expanduser()
    resolved = resolved if resolved.is_absolute() else refs.workdir / resolved
    if resolved.is_dir() or any(c in str(written) for c in GLOB_CHARS):
        refs.problem(path, f"{written!r} is not one file: the human labels are one CSV file")
        return
    if not resolved.is_file():
        return  # a missing input: Snakemake names it (rule check_human_labels)
    try:
        _, rows = read_csv(resolved)
        first = next(rows, None)
    except RecordError as err:
        refs.problem(path, str(err))
        return
    if first is None:
        refs.problem(
            path,
            f"{written!r} holds no rows after its header: no human label to compare the judges "
            "with; leave datasets.rag.human_labels out for a run without them",
        )
