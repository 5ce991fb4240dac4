"""Settings dataclasses from config mappings: an unknown key is an error that names it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

T = TypeVar("T")


def reads_file(entry: Mapping[str, Any]) -> bool:
    """Whether a system entry (an answerer, responder or summarizer) is read from a file of
    its outputs (``file:``) rather than run from a model (``model:``): such a system
    generates nothing, needs no model, no GPU and no serving check."""
    return "file" in entry


def from_mapping(cls: type[T], values: Mapping[str, Any] | None, what: str) -> T:
    values = dict(values or {})
    known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown {what} setting(s) {unknown}; known: {sorted(known)}")
    return cls(**values)
