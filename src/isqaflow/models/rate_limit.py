"""Client-side rate limits of API requests (requests and tokens per minute), the prompt-token estimate."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any


class RateLimiter:
    """Requests and tokens per minute over a sliding 60-second window, shared by threads.

    :meth:`acquire` blocks until a request of ``tokens`` fits, then books it and
    returns the booking; :meth:`settle` replaces the booked estimate with the tokens
    the server reported.  A single request larger than the token limit waits for an
    empty window rather than forever.
    """

    WINDOW_S = 60.0

    def __init__(self, requests_per_minute: int | None = None, tokens_per_minute: int | None = None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        for label, value in (("requests_per_minute", requests_per_minute), ("tokens_per_minute", tokens_per_minute)):
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
                fits_requests = self.requests_per_minute is None or len(self._booked) < self.requests_per_minute
                fits_tokens = (self.tokens_per_minute is None or not self._booked
                               or used + tokens <= self.tokens_per_minute)
                if fits_requests and fits_tokens:
                    booking = [now, float(tokens)]
                    self._booked.append(booking)
                    return booking
                wait = max(self._booked[0][0] + self.WINDOW_S - now, 0.01)  # the oldest booking leaves
            self.waited_s += wait
            self.sleep(wait)

    def settle(self, booking: list[float], tokens: int) -> None:
        with self._lock:
            booking[1] = float(tokens)


def estimate_tokens(messages: Any) -> int:
    """A request's prompt tokens before the server counts them: words x 1.3 (at least 1)."""
    text = messages if isinstance(messages, str) else " ".join(m["content"] for m in messages)
    return max(1, round(len(text.split()) * 1.3))
