"""One pending wake-up timer in Snakemake's job scheduler, not one more chain per finished job.

Snakemake 9.27.1's scheduler loop (``JobScheduler.schedule``) ends every pass by starting a
``threading.Timer`` that wakes the loop again after the job rate limiter's timespan (1 s with the
default ``--max-jobs-per-timespan 100/1s``) -- in every pass, also in the passes a timer or a
finished job started.  Each finished job so adds one more chain of timers that never ends: by
the end of the embedded run some 60 chains woke the loop ~60 times a second, and every pass
re-read the params and resources of every ready job and ``stat``-ed each of their inputs.
Measured on the embedded default (64 jobs, 2 cores, AMD EPYC): 12,792 passes of the job
selector and 31 s of the Snakemake process's own CPU in a 500 s run -- time taken from the
jobs, which need both cores (docs/speed.md).

The timer is there so that jobs the rate limiter held back are looked at again once its
timespan has passed; one pending timer due no later than asked does exactly that.
:func:`one_pending_timer` makes ``_schedule_reevalutation`` (Snakemake's spelling) start a timer
only when none is pending that fires as early; the timer marks itself gone before it wakes the
loop, so the pass it starts schedules the next one and the chain never breaks while jobs wait.
A finished job still wakes the loop at once (Snakemake releases the loop itself).

Applied by the Snakefile in every Snakemake process that reads it; a Snakemake without the
method is left alone, and tests/unit/test_scheduler_timers.py fails when the pinned Snakemake's
method is no longer the one this replaces (review this module then).
"""

from __future__ import annotations

import threading
import time
from typing import Any

# The method this replaces, as Snakemake 9.27.1 has it (tests/unit/test_scheduler_timers.py).
REPLACED = "_schedule_reevalutation"
_DUE = "_isqaflow_wakeup_due"  # monotonic time the pending timer fires at; None: none pending


def schedule_wakeup(scheduler: Any, delay: float) -> None:
    """Wake ``scheduler``'s loop (release its ``_open_jobs`` semaphore) after ``delay`` seconds,
    unless a timer already pending fires no later."""
    due = time.monotonic() + delay
    pending = getattr(scheduler, _DUE, None)
    if pending is not None and pending <= due:
        return

    def wake() -> None:
        if getattr(scheduler, _DUE, None) == due:
            setattr(scheduler, _DUE, None)  # gone before the pass it starts asks for the next
        scheduler._open_jobs.release()

    setattr(scheduler, _DUE, due)
    timer = threading.Timer(delay, wake)
    timer.start()


def one_pending_timer() -> bool:
    """Replace Snakemake's ``JobScheduler._schedule_reevalutation`` with :func:`schedule_wakeup`;
    False (nothing changed) where this Snakemake has no such method."""
    try:
        from snakemake.scheduling.job_scheduler import JobScheduler
    except ImportError:
        return False
    if not hasattr(JobScheduler, REPLACED):
        return False
    setattr(JobScheduler, REPLACED, schedule_wakeup)
    return True
