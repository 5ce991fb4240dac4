"""A counting stand-in for an OpenAI-compatible chat API (in-process, on a free local port).

It answers ``GET /v1/models`` and ``POST /v1/chat/completions`` in the OpenAI format, counts
every completion request (``calls``) and reports usage with its own token count: words x 1.3
of the messages' contents (no OpenAI tokenizer works offline here), so a plan's chars/4
estimate is compared with a different count.  Replies: ``<rating>1</rating>`` to an arena
judge request, ``YES`` to a DRFR judge turn, otherwise a distinct short answer.

``requests_per_minute`` makes it enforce an account limit over a sliding 60-second window
(as a window of ``window_s`` seconds): a request over the limit is answered 429 with a
``Retry-After`` header (seconds) and counted in ``rejected``; ``max_in_window`` is the
most requests it ever saw inside one window.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections import deque


class ApiDouble:
    def __init__(self, requests_per_minute: int | None = None, window_s: float = 60.0) -> None:
        self.calls = 0
        self.prompt_tokens = 0
        self.rejected = 0
        self.max_in_window = 0
        self.requests_per_minute = requests_per_minute
        self.window_s = window_s
        self._times: deque[float] = deque()
        self._lock = threading.Lock()
        double = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self, status: int, body: object, headers: dict[str, str] | None = None) -> None:
                payload = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self):  # noqa: N802
                self._answer(200, {"object": "list", "data": [{"id": "double", "object": "model"}]})

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                status, reply, headers = double.handle(body)
                self._answer(status, reply, headers)

            def log_message(self, fmt, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def handle(self, body: dict) -> tuple[int, dict, dict[str, str]]:
        with self._lock:
            now = time.monotonic()
            while self._times and self._times[0] <= now - self.window_s:
                self._times.popleft()
            if self.requests_per_minute is not None and len(self._times) >= self.requests_per_minute:
                self.rejected += 1
                wait = self._times[0] + self.window_s - now
                return 429, {"error": {"message": "rate limit", "type": "requests"}}, {
                    "Retry-After": f"{max(wait, 0.01):.2f}"}
            self._times.append(now)
            self.max_in_window = max(self.max_in_window, len(self._times))
            self.calls += 1
            n = self.calls
            words = sum(len(m["content"].split()) for m in body["messages"])
            n_in = max(1, round(words * 1.3))
            self.prompt_tokens += n_in
        last = body["messages"][-1]["content"]
        if "<rating>" in last or "answer 1" in last:
            text = "<rating>1</rating>"
        elif "YES" in " ".join(m["content"] for m in body["messages"][:1]):
            text = "YES"
        else:
            text = f"An answer, number {n}."
        n_out = max(1, round(len(text.split()) * 1.3))
        reply = {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0, "model": body["model"],
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                              "finish_reason": "stop", "logprobs": None}],
                 "usage": {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out}}
        return 200, reply, {}

    def __enter__(self) -> ApiDouble:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
