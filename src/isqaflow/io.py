"""Atomic file writes and record-level reading of JSON / JSON Lines.

Every output of the workflow is written through these helpers: the data goes to a
temporary file in the destination folder and is renamed into place only when it is
complete, so a killed job never leaves a half-written file that looks finished.
Reading errors name the file, the line, the record id and the field.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "RecordError",
    "atomic_open",
    "write_text",
    "write_json",
    "write_jsonl",
    "read_json",
    "read_jsonl",
    "read_records",
    "write_records",
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


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8"):
    """Open a temporary file next to ``path``; rename it onto ``path`` on success.

    On any exception the temporary file is removed and ``path`` is left untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    binary = "b" in mode
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
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


def read_json(path: str | os.PathLike) -> Any:
    path = Path(path)
    try:
        with path.open(encoding="utf-8") as handle:
            return json.load(handle)
    except json.JSONDecodeError as err:
        raise RecordError(path, f"not valid JSON: {err.msg}", line=err.lineno) from err


def read_jsonl(path: str | os.PathLike) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, object)`` for every non-empty line of a JSON Lines file."""
    path = Path(path)
    with path.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as err:
                raise RecordError(path, f"not valid JSON: {err.msg}", line=line_no) from err
            if not isinstance(obj, dict):
                raise RecordError(path, "expected a JSON object", line=line_no)
            yield line_no, obj


def read_records(path: str | os.PathLike, model: type[T], id_field: str = "id") -> list[T]:
    """Read a JSON Lines file of normalized records, validating each with a pydantic model.

    A record that fails validation raises :class:`RecordError` naming the file, the
    line, the record's id and the first offending field.
    """
    from pydantic import ValidationError

    records = []
    for line_no, obj in read_jsonl(path):
        try:
            records.append(model.model_validate(obj))  # type: ignore[attr-defined]
        except ValidationError as err:
            first = err.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or None
            raise RecordError(
                path, first["msg"], record=obj.get(id_field), field=field, line=line_no
            ) from err
    return records
