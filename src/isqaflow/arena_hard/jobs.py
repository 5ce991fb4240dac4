"""Arena-Hard-Auto's model jobs (its descriptor's ``jobs``: isqaflow.suites.arena_hard), listed
with the grid's job maker as every suite's are; a module of its own as a new suite's would be.
Read at DAG build by :func:`isqaflow.grid.suite_jobs`: it imports nothing but the grid."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from isqaflow.grid import Job, ModelRef, make_job


def arena_hard_jobs(config: Mapping[str, Any]) -> list[Job]:
    """Arena-Hard-Auto: each answerer answers the questions; each judge judges every answer
    against the baseline's (and its known-answer controls) in one job.  No section: no jobs."""
    section = config.get("arena_hard") or {}
    jobs = [
        make_job(
            "arena_hard_answers",
            [ModelRef("answerer", entry["model"], "arena_hard.generation", entry.get("adapter"))],
            answerer=answerer,
        )
        for answerer, entry in (section.get("answerers") or {}).items()
    ]
    jobs += [
        make_job("arena_hard_judge", [ModelRef("judge", entry["model"])], judge=judge)
        for judge, entry in (section.get("judges") or {}).items()
    ]
    return jobs
