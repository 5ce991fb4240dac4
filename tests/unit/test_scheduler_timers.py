"""isqaflow.scheduler_timers: one pending wake-up timer in Snakemake's scheduler."""

from __future__ import annotations

import hashlib
import inspect
import subprocess
import sys
import textwrap
import threading
import time

from snakemake.scheduling import job_scheduler

from isqaflow.scheduler_timers import schedule_wakeup

# Snakemake 9.27.1's method and the loop's call of it: the bug this module works around
REPLACED_SOURCE = """    def _schedule_reevalutation(self, delay: int) -> None:
        threading.Timer(
            delay,
            lambda: self._open_jobs.release(),
        ).start()
"""
LOOP_CALL = "self._schedule_reevalutation(self.job_rate_limiter.timespan)"


class Loop:
    """What schedule_wakeup touches of a JobScheduler: the semaphore its loop waits on."""

    def __init__(self) -> None:
        self._open_jobs = threading.Semaphore(0)

    def wakeups(self, within: float) -> int:
        n, end = 0, time.monotonic() + within
        while self._open_jobs.acquire(timeout=max(0.0, end - time.monotonic())):
            n += 1
        return n


def test_the_pinned_snakemake_has_the_method_this_replaces():
    """A Snakemake upgrade that changes the method or its call fails here: review the module."""
    original = inspect.getsource(job_scheduler.JobScheduler.schedule)
    assert LOOP_CALL in original
    module = inspect.getsource(job_scheduler)
    assert REPLACED_SOURCE in module, hashlib.sha256(module.encode()).hexdigest()


def test_requests_while_a_timer_is_pending_start_no_other():
    loop = Loop()
    for _ in range(50):  # fifty passes of the loop, each asking to be woken in 0.2 s
        schedule_wakeup(loop, 0.2)
    assert loop.wakeups(within=0.6) == 1


def test_an_earlier_request_than_the_pending_one_is_kept():
    loop = Loop()
    schedule_wakeup(loop, 5.0)
    started = time.monotonic()
    schedule_wakeup(loop, 0.1)
    assert loop._open_jobs.acquire(timeout=2.0)
    assert time.monotonic() - started < 2.0


def test_the_pass_a_timer_starts_can_schedule_the_next():
    """The chain never breaks: a request made right after a wake-up starts a new timer."""
    loop = Loop()
    for _ in range(3):
        schedule_wakeup(loop, 0.05)
        assert loop._open_jobs.acquire(timeout=2.0)
    schedule_wakeup(loop, 0.05)
    assert loop.wakeups(within=0.5) == 1


RUN = textwrap.dedent(
    """
    import sys
    from snakemake.scheduling import job_scheduler as js
    passes = [0]
    select = js.JobScheduler.job_selector
    def counted(self, jobs):
        passes[0] += 1
        return select(self, jobs)
    js.JobScheduler.job_selector = counted
    if sys.argv[1] == "patched":
        from isqaflow.scheduler_timers import one_pending_timer
        assert one_pending_timer()
    from snakemake.cli import main
    sys.argv = ["snakemake", "--cores", "2", "--quiet", "all"]
    try:
        main()
    finally:
        print("passes", passes[0])
    """
)
JOBS = 24
SNAKEFILE = textwrap.dedent(
    """
    rule all:
        input: expand("out/{i}.txt", i=range(24))
    rule one:
        output: "out/{i}.txt"
        shell: "sleep 0.5; touch {output}"
    """
)


def _passes(tmp_path, variant: str) -> int:
    """The job selector's passes in a real run of SNAKEFILE (every output written)."""
    work = tmp_path / variant
    work.mkdir()
    (work / "Snakefile").write_text(SNAKEFILE)
    (work / "run.py").write_text(RUN)
    result = subprocess.run(
        [sys.executable, "run.py", variant], cwd=work, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(p.name for p in (work / "out").iterdir()) == sorted(
        f"{i}.txt" for i in range(JOBS)
    )
    return int(result.stdout.split("passes")[-1])


def test_a_real_run_completes_with_a_pass_per_finished_job_and_one_a_second(tmp_path):
    """JOBS jobs of 0.5 s two at a time (~6 s): patched, the loop passes about once per finished
    job and once a second besides; unpatched, each finished job adds a chain of a pass a second
    (~JOBS / 2 chains on average over the run: several times as many passes)."""
    patched, original = _passes(tmp_path, "patched"), _passes(tmp_path, "original")
    assert patched <= JOBS + 20, patched
    assert original >= 2 * patched, (original, patched)
