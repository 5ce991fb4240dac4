"""Checked access to raw records, so a malformed one names its file, id and field."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from isqaflow.io import RecordError, read_json, read_jsonl, read_text_lines

_MISSING = object()
_TYPE_NAMES = {
    str: "a string",
    list: "a list",
    dict: "an object",
    bool: "true/false",
    int: "an integer",
}


class Raw:
    """A view of one raw JSON object: ``get`` checks presence and type of a field."""

    def __init__(
        self, file: str | Path, record: Any, obj: Any, path: str = "", line: int | None = None
    ):
        self.file, self.record, self.obj, self.path, self.line = str(file), record, obj, path, line
        if not isinstance(obj, dict):
            raise self.error("expected a JSON object", field=path or None)

    def error(self, message: str, field: str | None = None) -> RecordError:
        return RecordError(self.file, message, record=self.record, field=field, line=self.line)

    def _field(self, key: str | int) -> str:
        return (
            f"{self.path}[{key}]"
            if isinstance(key, int)
            else (f"{self.path}.{key}" if self.path else key)
        )

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = _MISSING) -> Any:
        value = self.obj.get(key, _MISSING)
        if value is _MISSING or (value is None and default is not _MISSING):
            if default is _MISSING:
                raise self.error("missing field", field=self._field(key))
            return default
        if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _as_tuple(kind)):
            names = " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in _as_tuple(kind))
            raise self.error(
                f"expected {names}, got {type(value).__name__}", field=self._field(key)
            )
        return value

    def id(self, key: str, kind: type | tuple[type, ...] = str) -> str:
        """An id field: present, of ``kind``, not blank; as a string."""
        value = str(self.get(key, kind)).strip()
        if not value:
            raise self.error("empty id", field=self._field(key))
        return value

    def strings(self, key: str, default: Any = _MISSING) -> list[str]:
        values = self.get(key, list, default)
        for i, value in enumerate(values):
            if not isinstance(value, str):
                raise self.error(
                    f"expected a string, got {type(value).__name__}",
                    field=f"{self._field(key)}[{i}]",
                )
        return values

    def children(self, key: str, default: Any = _MISSING) -> Iterator[Raw]:
        for i, value in enumerate(self.get(key, list, default)):
            yield Raw(self.file, self.record, value, f"{self._field(key)}[{i}]", self.line)

    def child(self, key: str) -> Raw:
        return Raw(self.file, self.record, self.get(key, dict), self._field(key), self.line)


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def iter_json_records(
    path: str | Path, id_field: str, shape: str = "auto"
) -> Iterator[tuple[Any, Any, int | None]]:
    """Yield ``(record_id, object, line)`` from a raw file of records.

    ``shape`` is ``"keyed"`` (one JSON object mapping id -> record: QASPER),
    ``"list"`` (a JSON list: HotpotQA), ``"lines"`` (JSON Lines: InFoBench, LFRQA,
    whatever the file name says) or ``"auto"`` (SciMRC, whose distribution format
    is not fixed: JSON Lines when the file has several lines that each parse, else a
    list, an object keyed by id, or a single record).

    A file without records (empty, white space, ``[]`` or ``{}``) is a
    :class:`~isqaflow.io.RecordError`: it would convert into an empty dataset.
    """
    path = Path(path)
    if shape not in ("auto", "lines", "list", "keyed", "single"):
        raise ValueError(f"unknown record file shape {shape!r}")
    if _is_blank(path):
        raise RecordError(path, "the file is empty: it holds no records")
    if shape == "auto":
        shape = _sniff(path, id_field)
    if shape == "lines":
        records = ((obj.get(id_field, f"line {line}"), obj, line) for line, obj in read_jsonl(path))
    else:
        data = read_json(path)
        if shape == "list":
            if not isinstance(data, list):
                raise RecordError(
                    path, f"expected a JSON list of records, got {type(data).__name__}"
                )
            records = (
                (obj.get(id_field, f"#{i}") if isinstance(obj, dict) else f"#{i}", obj, None)
                for i, obj in enumerate(data)
            )
        elif shape == "keyed":
            if not isinstance(data, dict):
                raise RecordError(
                    path, f"expected a JSON object keyed by {id_field}, got {type(data).__name__}"
                )
            records = ((rid, obj, None) for rid, obj in data.items())
        else:
            records = iter([(data.get(id_field, "#0"), data, None)])
    n = 0
    for record in records:
        n += 1
        yield record
    if n == 0:  # "[]", "{}" or blank lines only: a dataset that would convert into nothing
        raise RecordError(path, "the file holds no records")


def _is_blank(path: Path) -> bool:
    """Empty or white space only (read in blocks: raw files can be gigabytes)."""
    with path.open("rb") as handle:
        while block := handle.read(1 << 16):
            if block.strip():
                return False
    return True


def _sniff(path: Path, id_field: str) -> str:
    import json

    lines = []
    for _, line in read_text_lines(path):
        if line.strip():
            lines.append(line)
        if len(lines) == 2:
            break
    if len(lines) == 2:
        try:
            json.loads(lines[0])
            return "lines"
        except json.JSONDecodeError:
            pass
    data = read_json(path)
    if isinstance(data, list):
        return "list"
    if isinstance(data, dict) and id_field in data:
        return "single"
    return "keyed"


def once(seen: dict[str, Any], key: str, raw: Raw, field: str, what: str) -> None:
    """Record that ``key`` was seen at ``raw``; a second time is an error naming both places.

    ``seen`` maps each key to where it was first seen (file and line or record).
    """
    if key in seen:
        raise raw.error(f"{what} {key!r} occurs twice (first: {seen[key]})", field)
    seen[key] = (
        f"{raw.file}, line {raw.line}"
        if raw.line is not None
        else f"{raw.file}, record {raw.record!r}"
    )


def build(raw: Raw, model: type, path: str = "", **fields: Any) -> Any:
    """``model(**fields)``, with a validation failure reported as a RecordError on the raw record.

    ``path`` is where the object sits in the raw record (e.g. ``qas[2]``), so the error
    names the raw field (``qas[2].question``), not the normalized one.
    """
    from pydantic import ValidationError

    try:
        return model(**fields)
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise raw.error(first["msg"], ".".join(p for p in (path, loc) if p)) from err
