"""A persistent call cache: no finished model call is ever made twice.

Calls are keyed by the SHA-256 of (kind, backend, model identity -- id or path plus
revision or weights hash, adapter hash, dtype --, the exact request, the generation
parameters, and for a judge that repeats each judgment the repetition's index).  Results are committed to SQLite after every batch the backend finishes
(its ``on_batch`` callback; see :mod:`.base`), so a job that is killed and rerun
repeats at most the batch that was in flight.

The database runs in WAL mode with a busy timeout, so several processes on one
machine can share a file safely.  On a cluster, jobs on different nodes would share
it over a network filesystem where SQLite locking is unreliable; the workflow
therefore gives every job its own cache file next to its outputs.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import random
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from isqaflow.models.base import (
    BatchCallback,
    Generation,
    GenerationParams,
    LanguageModel,
    Request,
    canonical_request,
)

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key      TEXT PRIMARY KEY,
    kind     TEXT NOT NULL,
    model    TEXT NOT NULL,
    request  TEXT NOT NULL,
    params   TEXT NOT NULL,
    response TEXT NOT NULL,
    created  REAL NOT NULL
)
"""


def call_key(
    kind: str,
    identity: dict[str, Any],
    request: Any,
    params: dict[str, Any],
    repetition: int | None = None,
) -> str:
    """The cache key of one call.  ``repetition`` (a judge's repeated judgments, ``repeats`` > 1)
    enters the key only when given, so a single judgment keeps the key it always had."""
    fields = {"kind": kind, "model": identity, "request": request, "params": params}
    if repetition is not None:
        fields["repetition"] = int(repetition)
    payload = json.dumps(
        fields,
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class CallCache:
    def __init__(self, path: str | Path, timeout: float = 120.0) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
        self._retry(lambda: self.conn.execute("PRAGMA journal_mode=WAL"))
        self._retry(lambda: self.conn.execute("PRAGMA synchronous=NORMAL"))
        self._retry(lambda: self.conn.execute(SCHEMA))
        self.hits = 0
        self.misses = 0

    @staticmethod
    def _retry(action, attempts: int = 8):
        # The busy timeout covers most contention; WAL checkpoints can still raise
        # "database is locked" under heavy parallel writing, so back off and retry.
        for attempt in range(attempts):
            try:
                return action()
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) and "busy" not in str(err) or attempt == attempts - 1:
                    raise
                time.sleep(min(5.0, 0.05 * 2**attempt) * (1 + random.random()))

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        keys = list(dict.fromkeys(keys))
        found: dict[str, Any] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._retry(
                lambda marks=marks, chunk=chunk: self.conn.execute(
                    f"SELECT key, response FROM calls WHERE key IN ({marks})", chunk
                ).fetchall()
            )
            found.update((key, json.loads(resp)) for key, resp in rows)
        return found

    def put_many(self, rows: Sequence[tuple[str, str, dict, Any, dict, Any]]) -> None:
        """Store ``(key, kind, identity, request, params, response)`` rows in one transaction."""
        now = time.time()
        data = [
            (
                key,
                kind,
                json.dumps(identity, sort_keys=True),
                json.dumps(request, ensure_ascii=False),
                json.dumps(params, sort_keys=True),
                json.dumps(response, ensure_ascii=False),
                now,
            )
            for key, kind, identity, request, params, response in rows
        ]

        def write():
            with self.conn:  # one transaction; commits on exit
                self.conn.execute("BEGIN IMMEDIATE")
                self.conn.executemany("INSERT OR REPLACE INTO calls VALUES (?,?,?,?,?,?,?)", data)

        self._retry(write)

    def __len__(self) -> int:
        return self._retry(lambda: self.conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    def close(self) -> None:
        self.conn.close()


def copy_calls(sources: Iterable[str | Path], dest: str | Path) -> int:
    """Copy the calls stored in the caches ``sources`` (other jobs' files, read only) into the
    cache ``dest``; returns how many rows ``dest`` gained.

    A judge that makes the same calls as another (the same model, prompt, requests and
    parameters, another verdict rule: ``reuse_calls``) then finds them there instead of making
    them again.  A call is only ever served under its own key (:func:`call_key`: model identity,
    exact request, parameters, repetition), so a judge whose calls differ in any of these finds
    none of the copied rows and makes its calls itself.  A source that does not exist (a job
    that made no call) is skipped.
    """
    sources = [Path(source) for source in sources]
    if not sources:
        return 0
    cache = CallCache(dest)
    try:
        before = len(cache)
        for source in sources:
            if not source.exists():
                log.info("no call cache at %s: nothing to reuse", source)
                continue
            reader = sqlite3.connect(
                f"{source.resolve().as_uri()}?mode=ro", uri=True, timeout=120.0
            )
            try:
                rows = reader.execute(
                    "SELECT key, kind, model, request, params, response, created FROM calls"
                )
                rows = rows.fetchall()
            finally:
                reader.close()

            def write(rows=rows):
                with cache.conn:  # one transaction; commits on exit
                    cache.conn.execute("BEGIN IMMEDIATE")
                    cache.conn.executemany(
                        "INSERT OR IGNORE INTO calls VALUES (?,?,?,?,?,?,?)", rows
                    )

            cache._retry(write)
        gained = len(cache) - before
    finally:
        cache.close()
    log.info(
        "call cache %s: %d calls copied from %s",
        dest,
        gained,
        ", ".join(map(str, sources)) or "nothing",
    )
    return gained


def _reports_batches(method: Any) -> bool:
    """Whether a backend method takes the ``on_batch`` callback."""
    try:
        return "on_batch" in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


class CachedModel(LanguageModel):
    """Any :class:`LanguageModel` with a :class:`CallCache` in front of it.

    Identical requests within a call are computed once.  All misses of a call go to
    the backend at once, so it plans them as it would without the cache (length
    order, shared prefixes); each batch it reports through ``on_batch`` is committed
    at once, in its own transaction.  A commit costs ~0.03 ms for one row and ~0.4 ms
    for 16 (WAL mode, measured on a 2-core EPYC), far below any model batch, so
    commits are not throttled: a killed job loses at most the batch in flight.
    A backend without ``on_batch`` gets the misses in chunks of ``flush_every``
    requests instead, each committed before the next starts.
    """

    def __init__(
        self, inner: LanguageModel, cache: CallCache, flush_every: int | None = None
    ) -> None:
        self.inner = inner
        self.cache = cache
        self.backend = inner.backend
        self.flush_every = flush_every or max(4 * getattr(inner, "batch_size", 8), 16)
        self._identity = inner.identity()
        self._streams = {
            "generate": _reports_batches(inner.generate),
            "score": _reports_batches(getattr(inner, "score_batch", None)),
        }
        self.calls_made = 0
        #: the repetition index of the calls now made (None: not repeated; see :func:`call_key`)
        self.repetition: int | None = None

    def identity(self) -> dict[str, Any]:
        return dict(self._identity)

    def __getattr__(self, name: str) -> Any:  # tokenizer, render, name... of the backend
        return getattr(self.inner, name)

    def _cached(self, kind: str, payloads: list[Any], params: dict[str, Any], compute) -> list[Any]:
        """Results for ``payloads`` from the cache; misses go to ``compute(indices, on_batch)``
        (all at once, each reported batch committed) or, for a backend that reports no
        batches, to ``compute(indices, None)`` in committed chunks.  Identical payloads
        are computed once."""
        keys = [
            call_key(kind, self._identity, payload, params, self.repetition) for payload in payloads
        ]
        found = self.cache.get_many(keys)
        todo: dict[str, int] = {}
        for i, key in enumerate(keys):
            if key not in found and key not in todo:
                todo[key] = i
        self.cache.hits += len(keys) - len(todo)
        self.cache.misses += len(todo)
        if todo:
            log.info(
                "%s: %d of %d %s calls in the call cache, %d to compute",
                getattr(self.inner, "name", self.backend),
                len(keys) - len(todo),
                len(keys),
                kind,
                len(todo),
            )
        pending = list(todo.items())  # (key, index into payloads)

        def commit(done: Sequence[tuple[int, Any]]) -> None:
            """Store results given as (position in ``pending``, result)."""
            done = [(pos, out) for pos, out in done if pending[pos][0] not in found]
            if not done:
                return
            self.cache.put_many(
                [
                    (pending[pos][0], kind, self._identity, payloads[pending[pos][1]], params, out)
                    for pos, out in done
                ]
            )
            found.update((pending[pos][0], out) for pos, out in done)
            self.calls_made += len(done)

        def run(start: int, stop: int, on_batch: BatchCallback | None) -> None:
            outs = compute([i for _, i in pending[start:stop]], on_batch)
            if len(outs) != stop - start:
                raise RuntimeError(
                    f"{getattr(self.inner, 'name', self.backend)}: the backend returned "
                    f"{len(outs)} {kind} results for {stop - start} requests"
                )
            commit(list(enumerate(outs, start)))  # what the backend returned without reporting it

        if self._streams[kind]:
            if pending:
                run(0, len(pending), commit)
        else:
            for start in range(0, len(pending), self.flush_every):
                run(start, min(start + self.flush_every, len(pending)), None)
        return [found[key] for key in keys]

    def generate(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        def compute(idx: list[int], commit: BatchCallback | None) -> list[dict[str, Any]]:
            batch = [requests[i] for i in idx]
            if commit is None:
                return [g.as_dict() for g in self.inner.generate(batch, params)]

            def report(done: list[tuple[int, Generation]]) -> None:
                commit([(pos, g.as_dict()) for pos, g in done])

            return [g.as_dict() for g in self.inner.generate(batch, params, on_batch=report)]

        results = self._cached(
            "generate", [canonical_request(r) for r in requests], params.as_dict(), compute
        )
        return [Generation.from_dict(r) for r in results]

    def score_batch(self, items: Sequence[tuple[Request, Sequence[str]]]) -> list[list[float]]:
        def compute(idx: list[int], commit: BatchCallback | None) -> list[list[float]]:
            batch = [items[i] for i in idx]
            if commit is None:
                return self.inner.score_batch(batch)
            return self.inner.score_batch(batch, on_batch=commit)

        payloads = [
            {"context": canonical_request(ctx), "candidates": list(cands)} for ctx, cands in items
        ]
        return [list(r) for r in self._cached("score", payloads, {}, compute)]

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def truncate_text(self, text: str, max_tokens: int) -> tuple[str, int]:
        return self.inner.truncate_text(text, max_tokens)

    def close(self) -> None:
        self.inner.close()
