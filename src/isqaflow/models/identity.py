"""Fingerprints of model weights and adapters: what a cached call was made with.

A local model directory is identified by the SHA-256 of its weight, config and
tokenizer files (names, sizes and contents).  Hashing gigabytes on every job would
cost seconds to minutes, so the fingerprint is memoized in a small JSON file next to
the weights (``.isqaflow-fingerprint.json``), keyed by each file's size and
modification time, and recomputed when any of them changes.  A read-only directory
is simply hashed every time.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

MEMO = ".isqaflow-fingerprint.json"
_SUFFIXES = (".safetensors", ".bin", ".json", ".model", ".txt", ".jinja", ".gguf", ".pt")


def _files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and p.suffix in _SUFFIXES and p.name != MEMO and not p.name.startswith(".")
    )


def _stat_key(root: Path, files: list[Path]) -> list[list]:
    return [
        [
            str(p.relative_to(root) if root.is_dir() else p.name),
            p.stat().st_size,
            p.stat().st_mtime_ns,
        ]
        for p in files
    ]


def directory_fingerprint(path: str | os.PathLike, memoize: bool = True) -> str:
    root = Path(path)
    files = _files(root)
    if not files:
        raise FileNotFoundError(f"{root}: no model files to fingerprint")
    key = _stat_key(root, files)
    memo = root / MEMO if (memoize and root.is_dir()) else None
    if memo is not None and memo.exists():
        with contextlib.suppress(ValueError, OSError):
            saved = json.loads(memo.read_text())
            if saved.get("files") == key:
                return saved["sha256"]
    digest = hashlib.sha256()
    for (name, size, _), file in zip(key, files, strict=True):
        digest.update(f"{name}\0{size}\0".encode())
        with open(file, "rb") as handle:
            while chunk := handle.read(1 << 22):
                digest.update(chunk)
    value = digest.hexdigest()
    if memo is not None:
        with contextlib.suppress(OSError):
            tmp = memo.with_name(memo.name + f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"sha256": value, "files": key}))
            os.replace(tmp, memo)
    return value


def model_fingerprint(path: str | os.PathLike) -> str:
    return directory_fingerprint(path)


def adapter_fingerprint(path: str | os.PathLike) -> str:
    # Adapters are small, and their folder is a workflow output: never write into it.
    return directory_fingerprint(path, memoize=False)
