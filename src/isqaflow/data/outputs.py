"""Outputs of one's own system, read from a file and checked against the dataset.

A system that the workflow does not run itself (a RAG pipeline, a model served
elsewhere, a summarizer from another codebase) enters every suite as a file of its
outputs: ``arena.answerers.<name>: {file: ...}``, ``drfr.responders.<name>: {file:
...}``, ``isqa.file_summaries.<name>: {file: ..., dataset: ...}``.  Four formats are
read (``format:`` in the config; ``auto`` detects the format where it is
unambiguous):

* ``jsonl``: JSON Lines keyed by the dataset's ids -- one object per line with the
  id (``id``, or the suite's own key: ``query_id``/``qid`` with an optional
  ``domain``, ``instruction_id``, ``paper_id``) and the text (``answer``,
  ``response``, ``summary``, ``output``, ``pred`` or ``text``);
* ``alpaca_eval``: AlpacaEval's ``model_outputs.json``, a JSON list of
  ``{"instruction", "output", "generator"}`` keyed by the instruction's text;
* ``arena_hard``: arena-hard-auto's ``model_answer/<model>.jsonl``, keyed by ``uid``
  (v2: the answer is the last assistant message, a string or ``{"answer": ...}``) or
  ``question_id`` (v0.1: ``choices[0].turns[0].content``);
* ``ragqa_arena``: RAG-QA Arena's prediction file, a JSON list of ``{"query",
  "pred", "passages"}`` keyed by the query's text.

Every problem is found before any judge runs, all at once, each with the file, the
line and the id: bytes that are not UTF-8, text that is not JSON, a record that is not
an object or lacks its id or text, an id (or text) not in the dataset (with the closest
item and, for a text, where the two first differ: :mod:`isqaflow.data.unmatched`), an id given
twice, an empty output, several generators in one file.  Ids of the dataset that the
file lacks are an error too (their count and the first few) unless the system says
``coverage: partial``; the tables then show the system's n.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from isqaflow.data.download import file_digest
from isqaflow.data.ragqa_files import domain_of_file, process_response
from isqaflow.data.shape import EXAMPLES, domain_named_by, foreign_domains, none_match, wrong_shape
from isqaflow.data.unmatched import TEXT_FORMATS, explain_id, explain_text, file_key
from isqaflow.io import BOM, RecordError, decode, loads, split_lines, utf8_problems
from isqaflow.runtime import NamedError
from isqaflow.text.matching import match_key

FORMATS = ("auto", "jsonl", "alpaca_eval", "arena_hard", "ragqa_arena")
COVERAGES = ("full", "partial")
# The id keys and text keys a JSON Lines record may use, per suite (first match wins).
ID_FIELDS = {
    "arena": ("query_id", "qid", "id"),
    "drfr": ("instruction_id", "id"),
    "isqa": ("paper_id", "id"),
}
TEXT_FIELDS = {
    "arena": ("answer", "pred", "output", "response", "text"),
    "drfr": ("response", "output", "answer", "text"),
    "isqa": ("summary", "output", "text"),
}
# The fields a record may carry its item's own text in (what the item asks): checked against the id.
ITEM_TEXT_FIELDS = {"arena": ("query", "question"), "drfr": ("instruction",), "isqa": ("title",)}
# Every id key of the formats, to name the record of a line that is not UTF-8.
ID_KEYS = ("id", "query_id", "qid", "instruction_id", "paper_id", "uid", "question_id")
MAX_PROBLEMS = 20  # listed in one error; the count says how many there were
MISSING_SHOWN = 5


@dataclass(frozen=True)
class Item:
    """One item of the dataset a system's file answers: its key, id, domain and texts."""

    key: str  # unique within the dataset ("<domain>:<id>" for RAG queries)
    id: str
    texts: tuple[str, ...]  # what text-keyed formats match (query, instruction, title)
    domain: str | None = None


@dataclass
class SystemOutputs:
    """A checked outputs file: item key -> text, and what the manifest and tables report."""

    path: str
    format: str
    sha256: str
    outputs: dict[str, str]
    lines: dict[str, int]
    coverage: str
    n_dataset: int
    missing: list[str] = field(default_factory=list)
    generator: str | None = None
    raw: dict[str, str] = field(default_factory=dict)  # the texts as in the file
    files: dict[str, str] = field(default_factory=dict)  # item key -> the file it came from
    processed: bool = False  # RAG-QA Arena's process_response applied

    def summary(self) -> dict[str, Any]:
        return {
            "file": self.path,
            "files": sorted(set(self.files.values())),
            "format": self.format,
            "sha256": self.sha256,
            "coverage": self.coverage,
            "processed": self.processed,
            "n": len(self.outputs),
            "n_dataset": self.n_dataset,
            "missing": len(self.missing),
            "missing_first": self.missing[:MISSING_SHOWN],
            "generator": self.generator,
            # which items a partial file covers (the leaderboard's source column says so)
            "covered": sorted(self.outputs) if self.coverage == "partial" else [],
        }


class OutputFileError(NamedError, ValueError):
    """Every problem of one outputs file, each naming the file, the line and the id."""

    def __init__(self, path: str, problems: Sequence[str]) -> None:
        self.path = path
        self.problems = list(problems)
        shown = self.problems[:MAX_PROBLEMS]
        more = len(self.problems) - len(shown)
        text = "\n  ".join(shown) + (f"\n  ... and {more} more" if more > 0 else "")
        super().__init__(
            f"{path}: {len(self.problems)} problem(s) in this system's outputs file:\n  {text}"
        )


def normalize_text(text: str) -> str:
    """How text-keyed formats compare a record's text with the dataset's: NFC, spaces collapsed
    (:func:`isqaflow.text.matching.match_key`)."""
    return match_key(text)


def _decode(path: str, data: bytes, problems: list[str]) -> str | None:
    """The file as text (read as every input is: :func:`isqaflow.io.decode`), or None with one
    problem per line that is not UTF-8."""
    try:
        return decode(path, data)
    except RecordError:
        pass
    lines = data.split(b"\n")
    for line_no, err in utf8_problems(path, data):
        ident = _id_of(lines[line_no - 1])
        problems.append(str(RecordError(path, err.message, record=ident, line=line_no)))
    return None


def _id_of(raw: bytes) -> Any:
    """The id of a line that is not UTF-8, when the rest of it reads as a record with an id."""
    try:
        obj = json.loads(raw.decode("utf-8", errors="replace").removeprefix(BOM))
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    return next((obj[key] for key in ID_KEYS if key in obj), None)


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _json_lines(path: str, text: str, problems: list[str]) -> list[tuple[int, Any]]:
    records = []
    for line_no, line in split_lines(text):
        if not line.strip():
            continue
        try:
            records.append((line_no, loads(path, line, line_no)))
        except RecordError as err:
            problems.append(str(err))
    return records


def _json_array(path: str, text: str, problems: list[str]) -> list[tuple[int, Any]]:
    """The elements of a JSON list, each with the line it starts on."""
    try:
        data = loads(path, text)
    except RecordError as err:
        problems.append(str(err))
        return []
    pos = len(text) - len(text.lstrip())
    if not isinstance(data, list):
        problems.append(f"{path}, line {_line_of(text, pos)}: expected a JSON list of records")
        return []
    decoder = json.JSONDecoder()
    pos += 1
    records = []
    for element in data:
        while text[pos] in " \t\r\n,":
            pos += 1
        end = decoder.raw_decode(text, pos)[1]
        records.append((_line_of(text, pos), element))
        pos = end
    return records


def detect_format(path: str, text: str) -> str:
    """The format of a file whose format is ``auto``, from its first record; an error when unclear."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            first = next(iter(json.loads(stripped)), None)
        except json.JSONDecodeError:
            return "json_list"  # reported by the reader with its line
        if isinstance(first, dict) and {"instruction", "output"} <= set(first):
            return "alpaca_eval"
        if isinstance(first, dict) and {"query", "pred"} <= set(first):
            return "ragqa_arena"
        raise OutputFileError(
            path,
            [
                (
                    f"{path}, line 1: a JSON list whose records are neither AlpacaEval's "
                    "{instruction, output} nor RAG-QA Arena's {query, pred}; set format:"
                )
            ],
        )
    first_line = next((line for _, line in split_lines(text) if line.strip()), "")
    try:
        first = json.loads(first_line)
    except json.JSONDecodeError:
        return "jsonl"  # reported by the reader with its line
    if isinstance(first, dict) and (
        {"messages", "uid"} <= set(first) or {"choices", "question_id"} <= set(first)
    ):
        return "arena_hard"
    return "jsonl"


def _arena_hard_record(obj: dict) -> tuple[Any, str, Any, str | None, str | None]:
    """(id, id field, text, text field, generator) of an arena-hard answer (v2 ``uid`` /
    ``messages``; v0.1 ``question_id`` / ``choices``).  The structure is checked on the way:
    where it is not what arena-hard-auto writes, ``text`` is a :class:`_Shape` naming the
    field and what was found there."""
    if "uid" in obj:
        messages = obj.get("messages")
        if not isinstance(messages, list):
            return (
                obj["uid"],
                "uid",
                _Shape(f"expected a list of messages, got {_kind(messages)}"),
                "messages",
                obj.get("model"),
            )
        text: Any = _Shape("no message with role 'assistant'")
        field = "messages"
        for i, message in enumerate(messages):
            if not isinstance(message, dict):
                return (
                    obj["uid"],
                    "uid",
                    _Shape(f"expected a message object, got {_kind(message)}"),
                    f"messages[{i}]",
                    obj.get("model"),
                )
            if message.get("role") == "assistant":
                content, field = message.get("content"), f"messages[{i}].content"
                if isinstance(content, dict):
                    content, field = (
                        content.get("answer", _Shape("an object without 'answer'")),
                        f"{field}.answer",
                    )
                text = content
        return obj["uid"], "uid", text, field, obj.get("model")
    ident = obj.get("question_id")
    choices = obj.get("choices")
    if not isinstance(choices, list) or not choices:
        return (
            ident,
            "question_id",
            _Shape(f"expected a list of choices, got {_kind(choices)}"),
            "choices",
            obj.get("model_id"),
        )
    if not isinstance(choices[0], dict):
        return (
            ident,
            "question_id",
            _Shape(f"expected a choice object, got {_kind(choices[0])}"),
            "choices[0]",
            obj.get("model_id"),
        )
    turns = choices[0].get("turns")
    if not isinstance(turns, list) or not turns:
        return (
            ident,
            "question_id",
            _Shape(f"expected a list of turns, got {_kind(turns)}"),
            "choices[0].turns",
            obj.get("model_id"),
        )
    if not isinstance(turns[0], dict):
        return (
            ident,
            "question_id",
            _Shape(f"expected a turn object, got {_kind(turns[0])}"),
            "choices[0].turns[0]",
            obj.get("model_id"),
        )
    return (
        ident,
        "question_id",
        turns[0].get("content"),
        "choices[0].turns[0].content",
        obj.get("model_id"),
    )


class _Shape(str):
    """What a format adapter found where the structure differs (a message, not an output)."""


def _kind(value: Any) -> str:
    return "nothing" if value is None else f"{type(value).__name__} {_short(value)}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def read_system_outputs(
    path: str | Path | Sequence[str | Path],
    suite: str,
    items: Sequence[Item],
    fmt: str = "auto",
    coverage: str = "full",
    process: bool = True,
    name: str | None = None,
) -> SystemOutputs:
    """Read and check one system's outputs against the dataset's ``items``.

    ``path``: the file, or the files of one system (RAG-QA Arena's one file per domain,
    :mod:`isqaflow.data.ragqa_files`; ``name``: how the system's ``file:`` was written).
    ``suite``: arena, drfr or isqa (which id and text keys a JSON Lines record may use).
    ``process``: RAG-QA Arena's ``process_response`` on a ``ragqa_arena`` file's answers
    (its own reading; False judges the text as given).  Raises :class:`OutputFileError`
    listing every problem.
    """
    paths = [str(p) for p in path] if isinstance(path, (list, tuple)) else [str(path)]
    source = name or paths[0]
    if fmt not in FORMATS:
        raise ValueError(f"{source}: unknown format {fmt!r}; one of {list(FORMATS)}")
    if coverage not in COVERAGES:
        raise ValueError(f"{source}: unknown coverage {coverage!r}; one of {list(COVERAGES)}")
    if not paths:
        raise OutputFileError(source, [f"{source}: no file"])
    problems: list[str] = []
    domains = sorted({i.domain for i in items if i.domain})
    # (file, line, record, the domain the file's name gives) of every file
    records: list[tuple[str, int, Any, str | None]] = []
    formats: dict[str, list[str]] = {}
    for file in paths:
        text = _decode(file, Path(file).read_bytes(), problems)
        if text is None:
            continue
        file_fmt = detect_format(file, text) if fmt == "auto" else fmt
        read = (
            _json_array if file_fmt in ("alpaca_eval", "ragqa_arena", "json_list") else _json_lines
        )
        # the wrong shape (CSV, a JSON list read as JSON Lines, ...): said once, with a few of
        # the lines it makes fail, not one problem per line
        shape = wrong_shape(text, file_fmt)
        if shape:
            failed: list[str] = []
            read(file, text, failed)
            problems += [f"{file}: {shape}", *failed[:EXAMPLES]]
            if len(failed) > EXAMPLES:
                problems.append(f"{file}: ... and {len(failed) - EXAMPLES} more lines like these")
            continue
        found = read(file, text, problems)
        if file_fmt == "json_list":  # invalid JSON: detection could not look inside
            continue
        formats.setdefault(file_fmt, []).append(file)
        hint = (
            domain_of_file(file, domains) if len(paths) > 1 or file_fmt == "ragqa_arena" else None
        )
        records += [(file, line_no, obj, hint) for line_no, obj in found]
    if len(formats) > 1:
        problems.append(
            f"{source}: files of different formats {sorted(formats)}; one format per system"
        )
    if problems and not records:
        raise OutputFileError(source, problems)
    fmt = next(iter(formats), fmt)

    by_id: dict[str, list[Item]] = {}
    by_text: dict[str, list[Item]] = {}
    for item in items:
        for alias in {item.id, item.key}:
            by_id.setdefault(alias, []).append(item)
        for t in dict.fromkeys(normalize_text(t) for t in item.texts):
            by_text.setdefault(t, []).append(item)

    outputs: dict[str, str] = {}
    raw: dict[str, str] = {}  # as in the file, before process_response
    lines: dict[str, int] = {}
    files: dict[str, str] = {}
    generators: set[str] = set()
    unmatched = 0
    checked = 0  # records that reached the look-up in the dataset
    # (the record's domain, the problem) of every record not in the dataset: listed one by
    # one only where no diagnosis of the whole file (another domain, another benchmark) applies
    not_found: list[tuple[str | None, str]] = []
    present: set[str] = set()  # items the file has a record of, good or bad
    for file, line_no, obj, hint in records:
        where = f"{file}, line {line_no}"
        if not isinstance(obj, dict):
            problems.append(f"{where}: expected a JSON object, got {type(obj).__name__}")
            continue
        domain = obj.get("domain")
        if fmt == "jsonl":
            id_key = next((k for k in ID_FIELDS[suite] if k in obj), None)
            text_key = next((k for k in TEXT_FIELDS[suite] if k in obj), None)
            if id_key is None:
                problems.append(f"{where}: no id field (one of {list(ID_FIELDS[suite])})")
                continue
            ident, value = obj[id_key], obj.get(text_key) if text_key else None
            if text_key is None:
                problems.append(
                    f"{where}, id {ident!r}: no text field (one of {list(TEXT_FIELDS[suite])})"
                )
                continue
            candidates = by_id.get(str(ident), [])
        elif fmt == "arena_hard":
            ident, id_key, value, text_key, generator = _arena_hard_record(obj)
            if ident is None:
                problems.append(f"{where}: no uid or question_id")
                continue
            if generator:
                generators.add(str(generator))
            candidates = by_id.get(str(ident), [])
        else:
            id_key, text_key = (
                ("instruction", "output") if fmt == "alpaca_eval" else ("query", "pred")
            )
            ident, value = obj.get(id_key), obj.get(text_key)
            if not isinstance(ident, str):
                problems.append(f"{where}: no {id_key!r} text")
                continue
            if fmt == "alpaca_eval" and obj.get("generator"):
                generators.add(str(obj["generator"]))
            if text_key not in obj:
                problems.append(f"{where}, {id_key} {ident[:60]!r}: no {text_key!r} field")
                continue
            candidates = by_text.get(normalize_text(ident), [])
        label = (
            f"id {ident!r}" if fmt in ("jsonl", "arena_hard") else f"{id_key} {str(ident)[:60]!r}"
        )
        if fmt in ("jsonl", "arena_hard") and (
            not isinstance(ident, (str, int)) or isinstance(ident, bool)
        ):
            problems.append(
                f"{where}, field {id_key!r}: an id is a string or an integer, got {_kind(ident)}"
            )
            continue
        checked += 1
        if domain is not None:
            candidates = [c for c in candidates if c.domain == domain]
        elif len(candidates) > 1 and hint is not None:  # the domain of a per-domain file
            candidates = [c for c in candidates if c.domain == hint]
        if not candidates:
            hint = ""
            if unmatched < MAX_PROBLEMS:  # difflib over the dataset: for the records shown
                pool = [i for i in items if domain is None or i.domain == domain]
                hint = (
                    explain_text(ident, pool, normalize_text)
                    if fmt in TEXT_FORMATS
                    else explain_id(ident, pool)
                )
            unmatched += 1
            named = domain or (domain_of_file(file, domains) or domain_named_by(file))
            not_found.append(
                (
                    named if domains else None,
                    f"{where}, {label}: not in the dataset"
                    + (f" (domain {domain!r})" if domain else "")
                    + hint,
                )
            )
            continue
        if len(candidates) > 1:
            problems.append(
                f"{where}, {label}: ambiguous, matches {[c.key for c in candidates]}; add a 'domain'"
            )
            continue
        item = candidates[0]
        present.add(item.key)
        paired = (
            _paired_with_another(obj, suite, item, by_text)
            if fmt in ("jsonl", "arena_hard")
            else None
        )
        if paired:
            problems.append(
                f"{where}, {label}, field {paired[0]!r}: this is the text of {paired[1]!r}, not of "
                f"{item.key!r}: the id and the text disagree (a shifted column?)"
            )
            continue
        if isinstance(value, _Shape):
            problems.append(
                f"{where}, {label}, field {text_key!r}: {value} (not arena-hard-auto's answer file?)"
            )
            continue
        if not isinstance(value, str):
            problems.append(
                f"{where}, {label}, field {text_key!r}: the output is {_kind(value)}, not text"
            )
            continue
        if not value.strip():
            problems.append(f"{where}, {label}: empty output")
            continue
        if item.key in outputs:
            first = (
                f"line {lines[item.key]}"
                if files[item.key] == file
                else f"{files[item.key]}, line {lines[item.key]}"
            )
            problems.append(f"{where}, {label}: duplicate, {item.key!r} first on {first}")
            continue
        raw[item.key] = value
        outputs[item.key] = process_response(value) if process and fmt == "ragqa_arena" else value
        lines[item.key] = line_no
        files[item.key] = file
    problems[:0] = _not_found_problems(source, not_found, domains, checked)
    if len(generators) > 1:
        problems.append(
            f"{source}: outputs of several generators {sorted(generators)}; one system per file"
        )
    missing = [item.key for item in items if item.key not in outputs]
    if not problems and not outputs:
        problems.append(f"{source}: no outputs")
    # an item whose record is there but bad (empty, not text, ...) is that record's problem
    # already: not also "missing"
    absent = [item for item in items if item.key not in outputs and item.key not in present]
    if absent and coverage == "full" and outputs:
        # in the file's own keys: a text-keyed file lists the texts it lacks
        first = [file_key(item, fmt) for item in absent][:MISSING_SHOWN]
        noun = {"alpaca_eval": "instructions", "ragqa_arena": "queries"}.get(fmt, "ids")
        problems.append(
            f"{source}: {len(absent)} of {len(items)} dataset {noun} missing, first "
            f"[{', '.join(first)}]; add them, or set coverage: partial"
        )
    if problems:
        raise OutputFileError(source, problems)
    return SystemOutputs(
        path=source,
        format=fmt,
        sha256=_digest(paths),
        outputs=outputs,
        lines=lines,
        coverage=coverage,
        n_dataset=len(items),
        missing=missing,
        generator=next(iter(generators), None),
        raw=raw,
        files=files,
        processed=process and fmt == "ragqa_arena",
    )


def _not_found_problems(
    source: str, not_found: Sequence[tuple[str | None, str]], domains: Sequence[str], checked: int
) -> list[str]:
    """The records not in the dataset: a sentence for each domain the run has not, then either
    "0 of N records match" with a few examples (no record matched: another benchmark's file?)
    or each one."""
    per_domain: dict[str, int] = {}
    for domain, _ in not_found:
        if domain is not None and domain not in domains:
            per_domain[domain] = per_domain.get(domain, 0) + 1
    lines = [f"{source}: {sentence}" for sentence in foreign_domains(per_domain, domains)]
    rest = [problem for domain, problem in not_found if domain not in per_domain]
    if rest and len(rest) == checked > EXAMPLES:  # a few strays are listed as they are
        return [f"{source}: {none_match(checked)}", *rest[:EXAMPLES]] + (
            [f"{source}: ... and {len(rest) - EXAMPLES} more"] if len(rest) > EXAMPLES else []
        )
    return lines + rest


def _paired_with_another(
    obj: dict, suite: str, item: Item, by_text: dict[str, list[Item]]
) -> tuple[str, str] | None:
    """(field, other item's key) when an id-keyed record also carries the item's text (query,
    instruction, title: ``ITEM_TEXT_FIELDS``) and that text is another item's, not its own."""
    for field_name in ITEM_TEXT_FIELDS[suite]:
        text = obj.get(field_name)
        if not isinstance(text, str) or not text.strip():
            continue
        normalized = normalize_text(text)
        if normalized in {normalize_text(t) for t in item.texts}:
            return None
        others = [i for i in by_text.get(normalized, []) if i.key != item.key]
        if others:
            return field_name, others[0].key
    return None


def _digest(paths: Sequence[str]) -> str:
    """The file's SHA-256; of several files, the SHA-256 of their names and SHA-256s."""
    if len(paths) == 1:
        return file_digest(paths[0])
    lines = "".join(f"{file_digest(p)}  {Path(p).name}\n" for p in sorted(paths))
    return hashlib.sha256(lines.encode()).hexdigest()


def rag_items(queries: Iterable[Any]) -> list[Item]:
    """Items of RAG queries (:class:`isqaflow.data.schema.RagQuery`): key ``<domain>:<id>``."""
    return [
        Item(key=f"{q.domain}:{q.id}", id=q.id, texts=(q.question,), domain=q.domain)
        for q in queries
    ]


def instruction_items(instructions: Iterable[Any]) -> list[Item]:
    """Items of InFoBench instructions: the instruction alone, or followed by its input."""
    items = []
    for i in instructions:
        texts = (
            (i.instruction, f"{i.instruction}\n\n{i.input}")
            if i.input.strip()
            else (i.instruction,)
        )
        items.append(Item(key=i.id, id=i.id, texts=texts))
    return items


def paper_items(papers: Iterable[Any]) -> list[Item]:
    return [Item(key=p.id, id=p.id, texts=(p.title,)) for p in papers]


def merge_checks(
    check_paths: Sequence[str | Path], out_path: str | Path
) -> dict[str, dict[str, Any]]:
    """Entry point of rule check_systems: the check record of every file-based system,
    as ``{system: {suite: record}}`` (what the leaderboard's source column shows)."""
    from isqaflow.io import read_json, write_json

    merged: dict[str, dict[str, Any]] = {}
    for path in check_paths:
        record = read_json(path)
        merged.setdefault(record["system"], {})[record["suite"]] = record
    write_json(out_path, merged)
    return merged
