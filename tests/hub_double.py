"""A local stand-in for the Hugging Face Hub: the HTTP endpoints huggingface_hub's
``snapshot_download`` uses (repository info at a revision, the file tree at a commit, each
file's metadata and contents), serving repositories held in memory, with the Hub's error
headers for gated and missing repositories.  Point ``HF_ENDPOINT`` at :attr:`HubDouble.url`."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlparse


class HubDouble:
    def __init__(self):
        self.repos: dict[
            str, dict
        ] = {}  # repo id -> {"commit", "files": {path: bytes}, "gated", "branch"}
        self.requests: list[
            tuple[str, str, str | None]
        ] = []  # (method, path, Authorization header)
        self.token: str | None = None  # the token a gated repository accepts
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format, *args):  # noqa: A002 -- quiet
                pass

            def _send(self, status, body=b"", headers=None, head=False):
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not head:
                    self.wfile.write(body)

            def _error(self, status, code, head=False):
                self._send(
                    status,
                    json.dumps({"error": code}).encode(),
                    {"X-Error-Code": code, "Content-Type": "application/json"},
                    head,
                )

            def _repo(self, repo_id, head=False):
                repo = hub.repos.get(repo_id)
                if repo is None:
                    self._error(
                        401, "RepoNotFound", head
                    )  # what the Hub answers for missing and private repos
                    return None
                if repo.get("gated") and self.headers.get("Authorization") != f"Bearer {hub.token}":
                    self._error(
                        401 if not self.headers.get("Authorization") else 403, "GatedRepo", head
                    )
                    return None
                return repo

            def _revision_ok(self, repo, revision):
                return revision in (repo["commit"], repo.get("branch", "main"))

            def _handle(self, head):
                path = unquote(urlparse(self.path).path)
                hub.requests.append((self.command, path, self.headers.get("Authorization")))
                if m := re.fullmatch(r"/api/models/([^/]+/[^/]+)/revision/(.+)", path):
                    repo = self._repo(m[1], head)
                    if repo is None:
                        return
                    if not self._revision_ok(repo, m[2]):
                        return self._error(404, "RevisionNotFound", head)
                    info = {
                        "id": m[1],
                        "modelId": m[1],
                        "sha": repo["commit"],
                        "private": False,
                        "siblings": [{"rfilename": f} for f in sorted(repo["files"])],
                    }
                    return self._send(
                        200, json.dumps(info).encode(), {"Content-Type": "application/json"}, head
                    )
                if m := re.fullmatch(r"/api/models/([^/]+/[^/]+)/tree/([^/]+)(/.*)?", path):
                    repo = self._repo(m[1], head)
                    if repo is None:
                        return
                    if not self._revision_ok(repo, m[2]):
                        return self._error(404, "RevisionNotFound", head)
                    tree = [
                        {
                            "type": "file",
                            "path": f,
                            "size": len(data),
                            "oid": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest(),
                        }
                        for f, data in sorted(repo["files"].items())
                    ]
                    return self._send(
                        200, json.dumps(tree).encode(), {"Content-Type": "application/json"}, head
                    )
                if m := re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path):
                    repo = self._repo(m[1], head)
                    if repo is None:
                        return
                    if not self._revision_ok(repo, m[2]):
                        return self._error(404, "RevisionNotFound", head)
                    data = repo["files"].get(m[3])
                    if data is None:
                        return self._error(404, "EntryNotFound", head)
                    etag = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
                    return self._send(
                        200,
                        data,
                        {
                            "X-Repo-Commit": repo["commit"],
                            "ETag": f'"{etag}"',
                            "Content-Type": "application/octet-stream",
                        },
                        head,
                    )
                self._error(404, "EntryNotFound", head)

            def do_GET(self):  # noqa: N802
                self._handle(head=False)

            def do_HEAD(self):  # noqa: N802
                self._handle(head=True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def add(self, repo_id: str, files: dict[str, bytes], gated: bool = False) -> str:
        commit = hashlib.sha1(repo_id.encode() + json.dumps(sorted(files)).encode()).hexdigest()
        self.repos[repo_id] = {"commit": commit, "files": files, "gated": gated}
        return commit

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
