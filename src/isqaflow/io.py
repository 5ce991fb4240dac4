r"""Atomic file writes and record-level reading of JSON / JSON Lines.

Every output of the workflow is written through these helpers: the data goes to a
temporary file in the destination folder and is renamed into place only when it is
complete, so a killed job never leaves a half-written file that looks finished.
The temporary file is created with the process umask (0644 by default, readable by
collaborators on a shared filesystem), unlike ``tempfile.mkstemp``'s fixed 0600;
:func:`apply_umask` does the same for folders that other libraries write (model
checkpoints: safetensors writes 0600).
Reading is strict and its errors name the file, the line, the record id and the field:
bytes that are not UTF-8 (a leading byte-order mark is allowed), a key twice in one
JSON object (which JSON readers resolve silently, keeping the last), and an id twice
among records keyed by it.

Every JSON, JSON Lines and CSV input of the workflow is read here, the same way: UTF-8, a
leading byte-order mark dropped, lines split at ``\n`` only (never ``str.splitlines``, which
also splits at U+2028, U+2029, U+0085 and other characters valid inside a JSON string, so
line numbers would stop matching the file), and line numbers counted in the same way by
every reader (:func:`split_lines`); a CSV parser's error names the file and the line.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "RecordError",
    "apply_umask",
    "atomic_open",
    "decode",
    "loads",
    "read_csv",
    "read_json",
    "read_jsonl",
    "read_records",
    "read_text",
    "read_text_lines",
    "split_lines",
    "utf8_problems",
    "write_json",
    "write_jsonl",
    "write_records",
    "write_text",
]

T = TypeVar("T")


class RecordError(ValueError):
    """A malformed input record: says which file, which record and which field."""

    def __init__(
        self,
        file: str | os.PathLike,
        message: str,
        *,
        record: Any = None,
        field: str | None = None,
        line: int | None = None,
    ) -> None:
        self.file = str(file)
        self.record = record
        self.field = field
        self.line = line
        self.message = message
        where = [self.file]
        if line is not None:
            where.append(f"line {line}")
        if record is not None:
            where.append(f"record {record!r}")
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(f"{', '.join(where)}: {message}")


def current_umask() -> int:
    """The process umask (Linux: read from /proc; elsewhere set and restored at once)."""
    with (
        contextlib.suppress(OSError, ValueError),
        open("/proc/self/status", encoding="ascii") as handle,
    ):
        for line in handle:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def apply_umask(path: str | os.PathLike) -> None:
    """Give ``path`` -- a file, or a folder and everything in it -- the permissions a new
    file gets from the process umask: 0644 for files (0755 if executable) and 0755 for
    folders by default.  For writers that create files with fixed modes."""
    mask = current_umask()
    path = Path(path)
    for item in [path, *path.rglob("*")] if path.is_dir() else [path]:
        if item.is_symlink():
            continue
        mode = item.stat().st_mode
        full = 0o777 if stat.S_ISDIR(mode) or mode & 0o111 else 0o666
        os.chmod(item, full & ~mask)


def _new_temporary(path: Path) -> tuple[int, Path]:
    """A new, empty file next to ``path``, created with mode 0666 minus the umask."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{path}: no free temporary file name beside it")


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8"):
    """Open a temporary file next to ``path``; rename it onto ``path`` on success.

    On any exception the temporary file is removed and ``path`` is left untouched.
    The file gets the permissions of the process umask (0644 by default).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    binary = "b" in mode
    fd, tmp = _new_temporary(path)
    try:
        with os.fdopen(fd, mode, encoding=None if binary else encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_open(path) as handle:
        handle.write(text)


def _default(obj: Any) -> Any:
    if hasattr(obj, "model_dump"):  # pydantic models
        return obj.model_dump(mode="json")
    if hasattr(obj, "tolist"):  # numpy scalars and arrays
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"cannot serialise {type(obj).__name__} to JSON")


def dumps(obj: Any, **kwargs: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, default=_default, **kwargs)


def write_json(path: str | os.PathLike, obj: Any) -> None:
    with atomic_open(path) as handle:
        handle.write(dumps(obj, indent=2, sort_keys=False))
        handle.write("\n")


def write_jsonl(path: str | os.PathLike, records: Iterable[Any]) -> int:
    """Write one JSON document per line, atomically; returns the number written."""
    n = 0
    with atomic_open(path) as handle:
        for record in records:
            handle.write(dumps(record))
            handle.write("\n")
            n += 1
    return n


write_records = write_jsonl


BOM = "\ufeff"


def _not_utf8(
    path: Path, data: bytes, err: UnicodeDecodeError, line: int | None = None
) -> RecordError:
    """The error for bytes that are not UTF-8: the line and column, and the bytes themselves."""
    if line is None:
        line = data.count(b"\n", 0, err.start) + 1
    column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
    bad = data[err.start : err.end].hex(" ")
    return RecordError(
        path,
        f"not UTF-8: byte(s) {bad} at column {column} ({err.reason}); save the file as UTF-8",
        line=line,
    )


class _Duplicates:
    """``object_pairs_hook`` that keeps JSON's last-wins dict but remembers repeated keys,
    and which object (in parse order: inner objects first, the outermost last) held them."""

    def __init__(self) -> None:
        self.objects = 0
        self.found: list[tuple[int, str]] = []

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        self.objects += 1
        obj: dict[str, Any] = {}
        for key, value in pairs:
            if key in obj:
                self.found.append((self.objects, key))
            obj[key] = value
        return obj

    def check(self, path: Path, data: Any, line: int | None = None) -> None:
        """Raise for the first repeated key.  In a whole JSON file (``line`` None) the
        top-level object may be keyed by record id (QASPER): its repeated key names the
        record.  In a JSON Lines line, the object is one record: the key is its field."""
        if not self.found:
            return
        where, key = self.found[0]
        if (
            line is None and where == self.objects and isinstance(data, dict)
        ):  # the outermost object
            raise RecordError(
                path,
                f"key {key!r} occurs twice in the top-level object: a JSON reader "
                "keeps only the last (where records are keyed by id, a record "
                "would silently vanish)",
                record=key,
                field=key,
            )
        record = data.get("id") if isinstance(data, dict) and where == self.objects else None
        raise RecordError(
            path,
            f"key {key!r} occurs twice in one object: a JSON reader keeps only the last value",
            record=record,
            field=key,
            line=line,
        )


def loads(path: str | os.PathLike, text: str, line: int | None = None) -> Any:
    """One JSON document, strictly (no key twice in one object); ``line``: the line of a
    JSON Lines file it came from.  Not JSON is a :class:`RecordError` naming the line
    (and column)."""
    path = Path(path)
    hook = _Duplicates()
    try:
        data = json.loads(text, object_pairs_hook=hook)
    except json.JSONDecodeError as err:
        where = err.lineno if line is None else line
        raise RecordError(
            path, f"not valid JSON: {err.msg} (column {err.colno})", line=where
        ) from err
    hook.check(path, data, line)
    return data


def decode(path: str | os.PathLike, data: bytes) -> str:
    """``data`` read from ``path`` as UTF-8 text, a leading byte-order mark dropped; bytes that
    are not UTF-8 are a :class:`RecordError` naming the line and column."""
    try:
        return data.decode("utf-8").removeprefix(BOM)
    except UnicodeDecodeError as err:
        raise _not_utf8(Path(path), data, err) from None


def utf8_problems(path: str | os.PathLike, data: bytes) -> list[tuple[int, RecordError]]:
    r"""``(line, error)`` for every line of ``data`` that is not UTF-8 (lines split at ``\n``),
    for readers that report every problem of a file at once."""
    found = []
    for line_no, raw in enumerate(data.split(b"\n"), start=1):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as err:
            found.append((line_no, _not_utf8(Path(path), raw, err, line=line_no)))
    return found


def split_lines(text: str) -> Iterator[tuple[int, str]]:
    r"""``(line_number, line)`` of ``text``, split at ``\n`` only (a ``\r`` before it is kept:
    JSON and CSV read it as white space / a line end).  ``str.splitlines`` would also split
    at U+2028, U+2029, U+0085, ``\v``, ``\f`` and ``\x1c``-``\x1e``, which JSON allows
    unescaped inside strings."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not start another
    return enumerate(lines, start=1)


def read_text(path: str | os.PathLike) -> str:
    """A whole UTF-8 text file, a leading byte-order mark dropped; bytes that are not UTF-8
    are a :class:`RecordError` naming the line and column."""
    path = Path(path)
    return decode(path, path.read_bytes())


def read_json(path: str | os.PathLike) -> Any:
    """A JSON file, strictly: UTF-8 (a leading byte-order mark is allowed), no key twice in an
    object; each problem a :class:`RecordError` naming the file and line."""
    path = Path(path)
    return loads(path, read_text(path))


def read_text_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """``(line_number, line)`` of a UTF-8 text file, line endings kept, a leading byte-order
    mark dropped; bytes that are not UTF-8 are a :class:`RecordError` naming the line."""
    path = Path(path)
    with path.open("rb") as handle:
        for line_no, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise _not_utf8(path, raw, err, line=line_no) from None
            yield line_no, line.removeprefix(BOM) if line_no == 1 else line


def read_jsonl(path: str | os.PathLike) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, object)`` for every non-empty line of a JSON Lines file
    (checked as :func:`read_json` checks a file, line by line)."""
    path = Path(path)
    for line_no, line in read_text_lines(path):
        if not line.strip():
            continue
        obj = loads(path, line, line_no)
        if not isinstance(obj, dict):
            raise RecordError(path, "expected a JSON object", line=line_no)
        yield line_no, obj


def read_csv(
    path: str | os.PathLike, required: Iterable[str] = (), delimiter: str = ","
) -> tuple[list[str], Iterator[tuple[int, dict[str, str]]]]:
    r"""A CSV file with a header row: ``(header, rows)``, each row ``(line, {column: cell})``
    where ``line`` is the line its record starts on (header = line 1; a quoted cell may span
    lines).  Read as every input is (:func:`read_text`: UTF-8, byte-order mark dropped; lines
    split at ``\n``).  A missing ``required`` column, a parser error (``csv.Error``: a stray
    quote, a NUL byte) and a row with more cells than the header are :class:`RecordError`s
    naming the file and the line; blank rows are skipped, short rows filled with "".
    """
    import csv

    path = Path(path)
    lines = [line + "\n" for _, line in split_lines(read_text(path))]
    reader = csv.reader(lines, delimiter=delimiter, strict=True)

    def parse() -> list[str] | None:
        try:
            return next(reader, None)
        except csv.Error as err:
            raise RecordError(path, f"not valid CSV: {err}", line=reader.line_num) from None

    header = [name.strip() for name in parse() or []]
    missing = [c for c in required if c not in header]
    if missing:
        raise RecordError(
            path,
            f"missing column(s) {missing}; the header (line 1) has {header}",
            field=missing[0],
            line=1,
        )

    def rows() -> Iterator[tuple[int, dict[str, str]]]:
        while True:
            line = reader.line_num + 1
            cells = parse()
            if cells is None:
                return
            if not any(cell.strip() for cell in cells):
                continue
            if len(cells) > len(header):
                raise RecordError(
                    path,
                    f"{len(cells)} cells in a row under a header of {len(header)} "
                    "columns (an unquoted delimiter?)",
                    line=line,
                )
            yield line, dict(zip(header, cells + [""] * (len(header) - len(cells))))

    return header, rows()


def read_records(path: str | os.PathLike, model: type[T], id_field: str = "id") -> list[T]:
    """Read a JSON Lines file of normalized records, validating each with a pydantic model.

    A record that fails validation raises :class:`RecordError` naming the file, the
    line, the record's id and the first offending field.  A model whose records are
    keyed by their id (a ``unique_id`` class attribute naming the field, as the
    schemas of :mod:`isqaflow.data.schema` have) must not repeat one: a stage that
    maps records by id would keep only the last.
    """
    from pydantic import ValidationError

    unique = getattr(model, "unique_id", None)
    seen: dict[Any, int] = {}
    records = []
    for line_no, obj in read_jsonl(path):
        try:
            record = model.model_validate(obj)  # type: ignore[attr-defined]
        except ValidationError as err:
            first = err.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or None
            raise RecordError(
                path, first["msg"], record=obj.get(id_field), field=field, line=line_no
            ) from err
        if unique:
            key = getattr(record, unique)
            if key in seen:
                raise RecordError(
                    path,
                    f"{unique} {key!r} occurs twice (first on line {seen[key]})",
                    record=key,
                    field=unique,
                    line=line_no,
                )
            seen[key] = line_no
        records.append(record)
    return records
