"""Account rate limits across concurrent jobs, and 429s retried after their Retry-After.

Concurrent client processes (each an OpenAIModel with the account's requests_per_minute, as
jobs of one run are) call tests/api_double.py, which enforces the same limit and answers 429
past it.  The window is shortened from 60 s to WINDOW_S in the double and in the clients
(the class attribute), so that the test takes seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from api_double import ApiDouble

ROOT = Path(__file__).resolve().parents[3]
WINDOW_S = 3.0
LIMIT = 4  # requests per window, the account's
PROCESSES = 3
PER_PROCESS = 4

CLIENT = """
import json, os, sys
from isqaflow.models.api import rate_limit
from isqaflow.models.base import GenerationParams
from isqaflow.models.api.openai import OpenAIModel
rate_limit.RateLimiter.WINDOW_S = rate_limit.SharedRateLimiter.WINDOW_S = float(sys.argv[2])
model = OpenAIModel("double", base_url=sys.argv[1], requests_per_minute=int(sys.argv[3]), concurrency=2,
                    max_retries=0, check_model=False)
outs = model.generate([f"question {os.getpid()} {i}" for i in range(int(sys.argv[4]))],
                      GenerationParams(max_new_tokens=4))
print(json.dumps(len(outs)))
"""


def run_clients(url: str, environ: dict[str, str]) -> list[subprocess.CompletedProcess]:
    env = {**os.environ, **environ, "PYTHONPATH": f"{ROOT / 'src'}"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CLIENT, url, str(WINDOW_S), str(LIMIT), str(PER_PROCESS)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    return [
        subprocess.CompletedProcess(p.args, p.wait(timeout=120), p.stdout.read(), p.stderr.read())
        for p in procs
    ]


def test_concurrent_jobs_hold_the_account_limit_together(tmp_path):
    from isqaflow.models.api import budget

    spend_env = budget.environment(tmp_path / "spend/ledger.json", None, {})
    assert json.loads(spend_env)["rate_limits"] == str(tmp_path / "spend/rate_limits")
    with ApiDouble(requests_per_minute=LIMIT, window_s=WINDOW_S) as double:
        started = time.monotonic()
        results = run_clients(double.url, {budget.ENV: spend_env})
        elapsed = time.monotonic() - started
    assert [r.returncode for r in results] == [0] * PROCESSES, [r.stderr[-2000:] for r in results]
    assert double.calls == PROCESSES * PER_PROCESS
    assert double.rejected == 0  # no request ever went past the account's limit
    assert double.max_in_window <= LIMIT
    assert elapsed >= (PROCESSES * PER_PROCESS / LIMIT - 1) * WINDOW_S  # 12 requests, 4 per window
    assert list((tmp_path / "spend/rate_limits").glob("*.json"))  # one shared window file


def test_limits_held_per_job_only_break_the_account_limit(tmp_path, monkeypatch):
    """The control: the same jobs, each with its own window (no shared directory), go past it."""
    from isqaflow.models.api import budget

    monkeypatch.delenv(budget.ENV, raising=False)
    with ApiDouble(requests_per_minute=LIMIT, window_s=WINDOW_S) as double:
        results = run_clients(double.url, {})
    assert double.rejected > 0
    assert any(r.returncode != 0 and "RateLimitError" in r.stderr for r in results)


def test_a_429_is_retried_after_its_retry_after(monkeypatch):
    from isqaflow.models.api import budget
    from isqaflow.models.base import GenerationParams
    from isqaflow.models.api.openai import OpenAIModel

    monkeypatch.delenv(budget.ENV, raising=False)
    with ApiDouble(requests_per_minute=2, window_s=1.5) as double:
        # no client-side limit; a backoff of 60 s would show if Retry-After were not used
        model = OpenAIModel(
            "double",
            base_url=double.url,
            concurrency=4,
            max_retries=3,
            backoff=60.0,
            check_model=False,
        )
        started = time.monotonic()
        outs = model.generate(
            [f"question {i}" for i in range(4)], GenerationParams(max_new_tokens=4)
        )
        elapsed = time.monotonic() - started
    assert len(outs) == 4 and double.calls == 4
    assert double.rejected >= 2
    assert (
        1.0 <= elapsed < 20.0
    )  # waited about the 1.5 s the server asked for, not the 60 s backoff
