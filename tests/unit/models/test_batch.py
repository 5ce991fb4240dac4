"""Batch mode (isqaflow.models.api.batch) against a local stand-in of OpenAI's files and
batches endpoints built from the openai package's own types (tests/api_double.py BatchDouble).

The DRFR responses stage runs on the embedded InfoBench instructions, online and in batch
mode: the two share the call cache's keys both ways, and a job killed while its batch is
pending resumes by the recorded batch id without submitting again.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from api_double import BatchDouble
from isqaflow import runtime
from isqaflow.data.convert import write_instructions
from isqaflow.drfr.responses import run_responses
from isqaflow.models.api import budget
from isqaflow.models import usage

ROOT = Path(__file__).resolve().parents[3]
GENERATION = {"max_new_tokens": 32}


@pytest.fixture()
def instructions(tmp_path, monkeypatch):
    monkeypatch.delenv(budget.ENV, raising=False)
    path = tmp_path / "infobench.jsonl"
    write_instructions([ROOT / "data/embedded/infobench/InfoBench-embedded.json"], path)
    return path


def spec(url: str, batch: bool) -> dict:
    entry = {
        "backend": "openai",
        "model": "double",
        "base_url": url,
        "concurrency": 2,
        "max_retries": 0,
    }
    return {**entry, "batch": {"poll_s": 0.05}} if batch else entry


def keys(cache: Path) -> set[str]:
    conn = sqlite3.connect(cache)
    try:
        return {row[0] for row in conn.execute("SELECT key FROM calls")}
    finally:
        conn.close()


def responses(path: Path) -> list[tuple[str, str]]:
    return [
        (row["instruction_id"], row["response"])
        for row in map(json.loads, path.read_text().splitlines())
    ]


def in_job(out: Path, fn):
    smk = types.SimpleNamespace(
        log=[], threads=1, rule="drfr_responses", output=[str(out)], wildcards={}
    )
    with runtime.job(smk):
        return fn()


def test_batch_and_online_runs_share_the_call_cache(instructions, tmp_path):
    n = len(instructions.read_text().splitlines())
    with BatchDouble() as double:
        online, batched = tmp_path / "online.jsonl", tmp_path / "batched.jsonl"
        run_responses(
            instructions, online, spec(double.url, False), "r", GENERATION, f"{online}.calls.sqlite"
        )
        assert (double.calls, double.batches_created) == (n, 0)
        usage.reset()
        run_responses(
            instructions,
            batched,
            spec(double.url, True),
            "r",
            GENERATION,
            f"{batched}.calls.sqlite",
        )
        assert (double.calls, double.batches_created) == (2 * n, 1)  # one batch of n requests
        assert usage.snapshot()[0]["requests"] == n
        assert keys(Path(f"{online}.calls.sqlite")) == keys(
            Path(f"{batched}.calls.sqlite")
        )  # the same keys
        # each mode answered from the other's cache: no call, no batch, the other's records
        again = tmp_path / "again.jsonl"
        for source, batch in ((online, True), (batched, False)):
            run_responses(
                instructions,
                again,
                spec(double.url, batch),
                "r",
                GENERATION,
                f"{source}.calls.sqlite",
            )
            assert responses(again) == responses(source)
        assert (double.calls, double.batches_created) == (2 * n, 1)


KILLED = """
import sys, types
from isqaflow import runtime
from isqaflow.drfr.responses import run_responses
out = sys.argv[3]
smk = types.SimpleNamespace(log=[], threads=1, rule="drfr_responses", output=[out], wildcards={})
with runtime.job(smk):
    run_responses(sys.argv[1], out, {"backend": "openai", "model": "double", "base_url": sys.argv[2],
                  "batch": {"poll_s": 0.05}}, "r", {"max_new_tokens": 32}, out + ".calls.sqlite")
"""


def test_a_job_killed_while_its_batch_is_pending_resumes_the_same_batch(instructions, tmp_path):
    n = len(instructions.read_text().splitlines())
    out = tmp_path / "responses.jsonl"
    record = tmp_path / "responses.jsonl.batches.json"
    with BatchDouble() as double:
        double.hold = True  # the batch stays in progress
        proc = subprocess.Popen(
            [sys.executable, "-c", KILLED, str(instructions), double.url, str(out)],
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        )
        deadline = time.monotonic() + 60
        while not record.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        time.sleep(0.3)  # polling
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert record.exists() and double.batches_created == 1
        (batch_id,) = json.loads(record.read_text()).values()
        assert double.batches[batch_id]["status"] == "in_progress" and double.calls == 0
        double.hold = False
        usage.reset()
        in_job(
            out,
            lambda: run_responses(
                instructions, out, spec(double.url, True), "r", GENERATION, f"{out}.calls.sqlite"
            ),
        )
        assert double.batches_created == 1  # polled the recorded batch, submitted none
        assert double.calls == n and len(responses(out)) == n
        assert json.loads(record.read_text()) == {}  # done: the record is dropped


def test_a_plan_prices_batch_calls_at_the_batch_price():
    from isqaflow import spend

    entry = {
        "price": {
            "input_per_million": 10.0,
            "output_per_million": 30.0,
            "batch_input_per_million": 5.0,
            "batch_output_per_million": 15.0,
        }
    }
    assert spend.dollars(entry, 1_000_000, 1_000_000) == 40.0
    assert spend.dollars({**entry, "batch": {"poll_s": 60}}, 1_000_000, 1_000_000) == 20.0
