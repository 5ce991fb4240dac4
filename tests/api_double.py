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
        self.sent: list[
            list[dict]
        ] = []  # the messages of every completion request counted in calls
        self.prompt_tokens = 0
        self.rejected = 0
        self.max_in_window = 0
        self.requests_per_minute = requests_per_minute
        self.window_s = window_s
        self._times: deque[float] = deque()
        self._lock = threading.Lock()
        double = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(
                self, status: int, body: object, headers: dict[str, str] | None = None
            ) -> None:
                payload = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self):  # noqa: N802
                self._answer(*double.get(self.path))

            def do_POST(self):  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._answer(*double.post(self.path, self.headers.get("Content-Type", ""), raw))

            def log_message(self, fmt, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def get(self, path: str) -> tuple[int, object, dict[str, str]]:
        return 200, {"object": "list", "data": [{"id": "double", "object": "model"}]}, {}

    def post(self, path: str, content_type: str, raw: bytes) -> tuple[int, object, dict[str, str]]:
        return self.handle(json.loads(raw or b"{}"))

    def handle(self, body: dict) -> tuple[int, dict, dict[str, str]]:
        with self._lock:
            now = time.monotonic()
            while self._times and self._times[0] <= now - self.window_s:
                self._times.popleft()
            if (
                self.requests_per_minute is not None
                and len(self._times) >= self.requests_per_minute
            ):
                self.rejected += 1
                wait = self._times[0] + self.window_s - now
                return (
                    429,
                    {"error": {"message": "rate limit", "type": "requests"}},
                    {"Retry-After": f"{max(wait, 0.01):.2f}"},
                )
            self._times.append(now)
            self.max_in_window = max(self.max_in_window, len(self._times))
            self.calls += 1
            self.sent.append(body["messages"])
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
        reply = {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": n_in,
                "completion_tokens": n_out,
                "total_tokens": n_in + n_out,
            },
        }
        return 200, reply, {}

    def __enter__(self) -> ApiDouble:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


class BatchDouble(ApiDouble):
    """:class:`ApiDouble` with OpenAI's files and batches endpoints, its replies built from the
    ``openai`` package's own types (``FileObject``, ``Batch``, ``BatchRequestCounts``).

    ``POST /v1/files`` (multipart, purpose batch) keeps the file; ``POST /v1/batches`` creates a
    batch (counted in ``batches_created``); ``GET /v1/batches/<id>`` answers ``in_progress`` for
    ``polls_pending`` polls, then runs every line through :meth:`ApiDouble.handle` (counted as
    calls, as online ones) and answers ``completed`` with an output file; ``GET
    /v1/files/<id>/content`` returns a file.  A batch never completes while ``hold`` is set.
    """

    def __init__(self, polls_pending: int = 2) -> None:
        super().__init__()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.batches_created = 0
        self.polls_pending = polls_pending
        self.hold = False

    def _batch(self, batch_id: str) -> dict:
        from openai.types import Batch
        from openai.types.batch_request_counts import BatchRequestCounts

        entry = self.batches[batch_id]
        total = len(self.files[entry["input_file_id"]].splitlines())
        done = total if entry["status"] == "completed" else 0
        return Batch(
            id=batch_id,
            object="batch",
            endpoint=entry["endpoint"],
            completion_window="24h",
            created_at=0,
            input_file_id=entry["input_file_id"],
            status=entry["status"],
            output_file_id=entry.get("output_file_id"),
            request_counts=BatchRequestCounts(completed=done, failed=0, total=total),
        ).model_dump()

    def get(self, path: str) -> tuple[int, object, dict[str, str]]:
        parts = path.strip("/").split("/")  # v1 batches <id> | v1 files <id> content
        if parts[1:2] == ["batches"]:
            with self._lock:
                entry = self.batches[parts[2]]
                entry["polls"] += 1
                run = (
                    entry["status"] != "completed"
                    and entry["polls"] > self.polls_pending
                    and not self.hold
                )
                if not run and entry["status"] != "completed":
                    entry["status"] = "in_progress"
            if run:
                lines = [
                    json.loads(line) for line in self.files[entry["input_file_id"]].splitlines()
                ]
                out = []
                for line in lines:
                    status, reply, _ = self.handle(line["body"])
                    out.append(
                        {
                            "id": f"batch_req_{line['custom_id']}",
                            "custom_id": line["custom_id"],
                            "response": {"status_code": status, "request_id": "r", "body": reply},
                            "error": None,
                        }
                    )
                file_id = f"file-out-{parts[2]}"
                self.files[file_id] = "".join(json.dumps(row) + "\n" for row in out).encode()
                entry.update(status="completed", output_file_id=file_id)
            return 200, self._batch(parts[2]), {}
        if parts[1:2] == ["files"] and parts[3:] == ["content"]:
            return 200, self.files[parts[2]], {}
        return super().get(path)

    def post(self, path: str, content_type: str, raw: bytes) -> tuple[int, object, dict[str, str]]:
        from openai.types import FileObject

        if path.endswith("/files"):
            from email.parser import BytesParser

            message = BytesParser().parsebytes(
                b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw
            )
            fields = {
                part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
                for part in message.get_payload()
            }
            file_id = f"file-{len(self.files)}"
            self.files[file_id] = fields["file"]
            return (
                200,
                FileObject(
                    id=file_id,
                    object="file",
                    bytes=len(fields["file"]),
                    created_at=0,
                    filename="batch.jsonl",
                    purpose=fields["purpose"].decode(),
                    status="processed",
                ).model_dump(),
                {},
            )
        if path.endswith("/batches"):
            body = json.loads(raw)
            with self._lock:
                self.batches_created += 1
                batch_id = f"batch-{self.batches_created}"
                self.batches[batch_id] = {
                    "endpoint": body["endpoint"],
                    "input_file_id": body["input_file_id"],
                    "status": "validating",
                    "polls": 0,
                }
            return 200, self._batch(batch_id), {}
        return super().post(path, content_type, raw)
