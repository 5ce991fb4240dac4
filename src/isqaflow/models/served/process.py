"""Life cycle of a managed server: its process group, readiness, stop and the watchdog.

Life cycle (:class:`ManagedServer`): the server runs in its own process group, its
output goes line by line into the job's log (logger ``isqaflow.server``), and the
job waits until ``GET /v1/models`` answers and a first one-token completion of the
model succeeds (``transformers serve`` lists nothing before its first request).  A
server that exits or does not get ready within ``ready_timeout`` fails the job with
its last log lines (:class:`ServerStartError`).  The server is stopped -- SIGTERM
to its process group, SIGKILL after ``stop_timeout`` -- when the job ends: normally,
on an exception, and on SIGTERM from the scheduler (:func:`isqaflow.runtime.job`);
outside a job, at interpreter exit.  A small watchdog process stops the group too
if the job process dies without cleaning up (``kill -9``, the OOM killer); it holds the
job's device locks (:mod:`isqaflow.devices`) until then, so no other job takes the GPUs of
a server that is still stopping.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Mapping
from typing import Any

from isqaflow import runtime
from isqaflow.models.served.settings import LOCALHOST

# the serving logger, as before the split
log = logging.getLogger("isqaflow.models.served.model")
server_log = logging.getLogger("isqaflow.server")


class ServerStartError(RuntimeError):
    """The managed server could not start, or did not get ready in time."""


# Stops the server's process group when the job process is gone without having
# stopped it (SIGKILL, OOM): it polls its parent and exits when the group is gone.
WATCHDOG = """
import os, signal, sys, time
parent, pgid, grace = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
def alive():
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stats = [open(f"/proc/{p}/stat").read() for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return True
    for stat in stats:
        fields = stat.rsplit(")", 1)[-1].split()
        if fields and fields[0] != "Z" and int(fields[2]) == pgid:
            return True
    return False
while os.getppid() == parent:
    if not alive():
        sys.exit(0)
    time.sleep(0.5)
for sig in (signal.SIGTERM, signal.SIGKILL):
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        sys.exit(0)
    end = time.monotonic() + grace
    while time.monotonic() < end and alive():
        time.sleep(0.2)
"""


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of a process group, from /proc (Linux)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[-1].split()
        except OSError:  # exited meanwhile
            continue
        if fields and fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


def group_alive(pgid: int) -> bool:
    """Whether a process group still has a live member (zombies, which an init that does not
    reap may keep around, do not count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a process of another user took the id: not ours
        return False
    if not os.path.isdir("/proc"):
        return True
    return bool(group_members(pgid))


class ManagedServer:
    """One server process group: start, wait until ready, stop (idempotent)."""

    def __init__(
        self,
        argv: list[str],
        *,
        name: str,
        port: int,
        probe_model: str,
        host: str = LOCALHOST,
        ready_timeout: float = 900.0,
        stop_timeout: float = 20.0,
        env: Mapping[str, str] | None = None,
        log_lines: int = 60,
    ) -> None:
        self.argv, self.name, self.host, self.port = argv, name, host, port
        self.probe_model = probe_model
        self.ready_timeout, self.stop_timeout = ready_timeout, stop_timeout
        self.env = dict(os.environ if env is None else env)
        self.env.setdefault("PYTHONUNBUFFERED", "1")
        self.last_lines: deque[str] = deque(maxlen=log_lines)
        self.proc: subprocess.Popen | None = None
        self.watchdog: subprocess.Popen | None = None
        self._reader: threading.Thread | None = None
        self._stop_lock = threading.Lock()
        self.stopped = False

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def pgid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def start(self) -> ManagedServer:
        log.info("%s: starting %s", self.name, shlex.join(self.argv))
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                start_new_session=True,
            )
        except OSError as err:
            raise ServerStartError(
                f"model {self.name}: cannot start the server {self.argv[0]!r}: {err}"
            ) from err
        runtime.at_job_exit(self.stop)
        self._reader = threading.Thread(
            target=self._read_output, name=f"server-log-{self.name}", daemon=True
        )
        self._reader.start()
        # the watchdog holds the job's device locks too (isqaflow.devices): after kill -9 of the job
        # its devices stay taken until the orphaned server is gone
        job = runtime.current_job()
        self.watchdog = subprocess.Popen(
            [
                sys.executable,
                "-c",
                WATCHDOG,
                str(os.getpid()),
                str(self.proc.pid),
                str(self.stop_timeout),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            pass_fds=job.device_locks if job is not None else (),
        )
        return self

    def _read_output(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for raw in iter(self.proc.stdout.readline, b""):
            line = raw.decode("utf-8", errors="replace").rstrip()
            self.last_lines.append(line)
            server_log.info("[%s] %s", self.name, line)

    def wait_ready(self) -> ManagedServer:
        """Block until the model answers; on failure stop the server and raise with its last lines."""
        started = time.monotonic()
        deadline = started + self.ready_timeout
        listed = False
        problem = "no answer"
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                self._fail(
                    f"the server exited with status {self.proc.returncode if self.proc else None} "
                    "before it was ready"
                )
            try:
                if not listed:
                    _http_json("GET", f"{self.base_url}/models", timeout=5)
                    listed = True
                remaining = max(deadline - time.monotonic(), 1.0)
                _http_json(
                    "POST",
                    f"{self.base_url}/completions",
                    timeout=remaining,
                    body={
                        "model": self.probe_model,
                        "prompt": "Hello",
                        "max_tokens": 1,
                        "temperature": 0,
                    },
                )
                log.info(
                    "%s: server ready at %s after %.1fs",
                    self.name,
                    self.base_url,
                    time.monotonic() - started,
                )
                return self
            except urllib.error.HTTPError as err:
                detail = err.read().decode("utf-8", errors="replace")[:500]
                if (
                    400 <= err.code < 500
                    and err.code not in (404, 408, 425, 429)
                    or (err.code == 404 and listed and "model" in detail)
                ):
                    self._fail(
                        f"the server refused the first request for {self.probe_model!r}: "
                        f"HTTP {err.code} {detail}"
                    )
                problem = f"HTTP {err.code} {detail}"
            except (OSError, ValueError) as err:  # not listening yet, reset while loading
                problem = f"{type(err).__name__}: {err}"
            time.sleep(0.5)
        self._fail(f"the server was not ready within {self.ready_timeout:.0f} s (last: {problem})")
        return self  # unreachable

    def _fail(self, reason: str) -> None:
        self.stop()
        tail = "\n".join(self.last_lines) or "(no output)"
        raise ServerStartError(
            f"model {self.name}: {reason}\ncommand: {shlex.join(self.argv)}\n"
            f"--- last lines of the server's output ---\n{tail}"
        )

    def stop(self) -> None:
        """SIGTERM to the process group, SIGKILL after ``stop_timeout``; safe to call twice."""
        with self._stop_lock:
            if self.stopped or self.proc is None:
                self.stopped = True
                return
            self.stopped = True
            pgid = self.proc.pid
            for sig, wait in ((signal.SIGTERM, self.stop_timeout), (signal.SIGKILL, 10.0)):
                try:
                    os.killpg(pgid, sig)
                except ProcessLookupError:
                    break
                end = time.monotonic() + wait
                while time.monotonic() < end:
                    self.proc.poll()  # reap the leader, so only live members keep the group
                    if not group_alive(pgid):
                        break
                    time.sleep(0.1)
                else:
                    if sig == signal.SIGTERM:
                        log.warning(
                            "%s: server still running %.0f s after SIGTERM; killing it",
                            self.name,
                            wait,
                        )
                    continue
                break
            self.proc.wait(timeout=10)
            if self.watchdog is not None and self.watchdog.poll() is None:
                self.watchdog.terminate()
                self.watchdog.wait(timeout=10)
            if self._reader is not None:
                self._reader.join(timeout=5)
            log.info("%s: server stopped (exit status %s)", self.name, self.proc.returncode)


def _http_json(method: str, url: str, timeout: float, body: Mapping[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"} if data else {}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (the job's own server)
        return json.loads(response.read().decode("utf-8") or "null")
