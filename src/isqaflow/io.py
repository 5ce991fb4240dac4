"""Atomic file writes and record-level reading of JSON / JSON Lines.

Every output of the workflow is written through these helpers: the data goes to a
temporary file in the destination folder and is renamed into place only when it is
complete, so a killed job never leaves a half-written file that looks finished.
The temporary file is created with the process umask (0644 by default, readable by
collaborators on a shared filesystem), unlike ``tempfile.mkstemp``'s fixed 0600;
:func:`apply_umask` does the same for folders that other libraries write (model
checkpoints: safetensors writes 0600).
Reading errors name the file, the line, the record id and the field.
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


def current_umask() -> int:
    """The process umask (Linux: read from /proc; elsewhere set and restored at once)."""
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status", encoding="ascii") as handle:
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
