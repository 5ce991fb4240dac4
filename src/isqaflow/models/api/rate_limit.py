"""Client-side rate limits of API requests (requests and tokens per minute), the prompt-token estimate.

:class:`RateLimiter` holds one process's requests; :class:`SharedRateLimiter` holds every
process's requests to one account (endpoint, key variable, model) together: the sliding
window's bookings live in a small JSON file that each request updates under an exclusive
``fcntl`` lock, so concurrent jobs of a run -- on one machine or on cluster nodes sharing the
file system -- stay inside the account's configured limits together, not each on its own.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


class RateLimiter:
    """Requests and tokens per minute over a sliding 60-second window, shared by threads.

    :meth:`acquire` blocks until a request of ``tokens`` fits, then books it and
    returns the booking; :meth:`settle` replaces the booked estimate with the tokens
    the server reported.  A single request larger than the token limit waits for an
    empty window rather than forever.
    """

    WINDOW_S = 60.0

    def __init__(
        self,
        requests_per_minute: int | None = None,
        tokens_per_minute: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        for label, value in (
            ("requests_per_minute", requests_per_minute),
            ("tokens_per_minute", tokens_per_minute),
        ):
            if value is not None and value < 1:
                raise ValueError(f"{label} must be at least 1, got {value}")
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute
        self.clock, self.sleep = clock, sleep
        self._booked: deque[list[float]] = deque()  # [time, tokens]
        self._lock = threading.Lock()
        self.waited_s = 0.0

    def acquire(self, tokens: int) -> list[float]:
        while True:
            with self._lock:
                now = self.clock()
                while self._booked and self._booked[0][0] <= now - self.WINDOW_S:
                    self._booked.popleft()
                used = sum(booking[1] for booking in self._booked)
                fits_requests = (
                    self.requests_per_minute is None or len(self._booked) < self.requests_per_minute
                )
                fits_tokens = (
                    self.tokens_per_minute is None
                    or not self._booked
                    or used + tokens <= self.tokens_per_minute
                )
                if fits_requests and fits_tokens:
                    booking = [now, float(tokens)]
                    self._booked.append(booking)
                    return booking
                wait = max(
                    self._booked[0][0] + self.WINDOW_S - now, 0.01
                )  # the oldest booking leaves
            self.waited_s += wait
            self.sleep(wait)

    def settle(self, booking: list[float], tokens: int) -> None:
        with self._lock:
            booking[1] = float(tokens)


class SharedRateLimiter:
    """:class:`RateLimiter`'s window shared by processes through ``path`` (wall-clock times).

    Bookings are ``[time, tokens, id]``; :meth:`acquire` books a request when it fits the
    window, else sleeps (outside the lock) until the oldest booking leaves it; :meth:`settle`
    moves the booking to the reply's time.  Every request must be settled (also a failed one:
    tokens 0), else its booking stays in the window from its sending time.
    """

    WINDOW_S = 60.0

    def __init__(
        self,
        path: str | Path,
        requests_per_minute: int | None = None,
        tokens_per_minute: int | None = None,
    ) -> None:
        RateLimiter(requests_per_minute, tokens_per_minute)  # the same checks of the limits
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute
        self._lock = threading.Lock()
        self.waited_s = 0.0

    @contextlib.contextmanager
    def _window(self) -> Iterator[list[list[Any]]]:
        with self._lock, open(self.path.with_name(self.path.name + ".lock"), "a") as lock:
            fcntl.lockf(lock, fcntl.LOCK_EX)
            try:
                booked = (
                    json.loads(self.path.read_text(encoding="utf-8")) if self.path.exists() else []
                )
                now = time.time()
                booked = [b for b in booked if b[0] > now - self.WINDOW_S]
                yield booked
                tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
                tmp.write_text(json.dumps(booked), encoding="utf-8")
                os.replace(tmp, self.path)
            finally:
                fcntl.lockf(lock, fcntl.LOCK_UN)

    def acquire(self, tokens: int) -> str:
        while True:
            with self._window() as booked:
                now = time.time()
                used = sum(b[1] for b in booked)
                fits_requests = (
                    self.requests_per_minute is None or len(booked) < self.requests_per_minute
                )
                fits_tokens = (
                    self.tokens_per_minute is None
                    or not booked
                    or used + tokens <= self.tokens_per_minute
                )
                if fits_requests and fits_tokens:
                    ticket = uuid.uuid4().hex
                    booked.append([now, float(tokens), ticket])
                    return ticket
                wait = max(min(b[0] for b in booked) + self.WINDOW_S - now, 0.01)
            self.waited_s += wait
            time.sleep(wait)

    def settle(self, ticket: str, tokens: int) -> None:
        """The reported tokens replace the estimate, and the booking counts from the reply's
        arrival: the server counted the request at some moment between sending and reply, so
        the window holds it until the latest of them (a booking that already left stays out)."""
        with self._window() as booked:
            for booking in booked:
                if booking[2] == ticket:
                    booking[0] = time.time()
                    booking[1] = float(tokens)


def account_file(directory: str | Path, base_url: str | None, key_env: str, model: str) -> Path:
    """The shared window of one account and model: its endpoint, its key variable (the name, never
    the key) and the model id, hashed into a file name under ``directory``."""
    key = json.dumps([base_url or "https://api.openai.com/v1", key_env, model])
    return Path(directory) / f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


def account_limiter(
    requests_per_minute: int | None,
    tokens_per_minute: int | None,
    base_url: str | None,
    key_env: str,
    model: str,
    directory: str | Path | None,
) -> RateLimiter | SharedRateLimiter | None:
    """The limiter of an API model: none without limits; the account's window shared through
    ``directory`` (the workflow's, :mod:`.budget`); else this process's own."""
    if not (requests_per_minute or tokens_per_minute):
        return None
    if directory:
        return SharedRateLimiter(
            account_file(directory, base_url, key_env, model),
            requests_per_minute,
            tokens_per_minute,
        )
    return RateLimiter(requests_per_minute, tokens_per_minute)


def retry_after(err: BaseException) -> float | None:
    """The seconds a 429 (or 503) reply asks to wait (``retry-after-ms`` or ``retry-after``), else None."""
    headers = getattr(getattr(err, "response", None), "headers", None) or {}
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:  # an HTTP date: not used by the APIs we call; fall back to backoff
            return None
    return None


def estimate_tokens(messages: Any) -> int:
    """A request's prompt tokens before the server counts them: words x 1.3 (at least 1)."""
    text = messages if isinstance(messages, str) else " ".join(m["content"] for m in messages)
    return max(1, round(len(text.split()) * 1.3))
