"""What every job inherits from the workflow's process (isqaflow.runtime.export_workflow_environment)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from isqaflow import runtime


def _job_environment(**preset: str) -> dict[str, str | None]:
    """The allocator variables a job started after export_workflow_environment sees."""
    names = sorted(runtime.ALLOCATOR_ENV)
    probe = f"import json, os; print(json.dumps({{k: os.environ.get(k) for k in {names!r}}}))"
    script = (
        "import subprocess, sys\n"
        "from isqaflow.runtime import export_workflow_environment\n"
        "export_workflow_environment('src', ['snakemake'])\n"
        f"subprocess.run([sys.executable, '-c', {probe!r}], check=True)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in runtime.ALLOCATOR_ENV}
    env.update(preset)
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out.splitlines()[-1])


def test_jobs_keep_large_tensors_on_the_heap():
    seen = _job_environment()
    assert seen == runtime.ALLOCATOR_ENV
    # above 4 GiB: no tensor of the embedded run is mapped afresh
    assert all(int(v) >= 2**32 for v in seen.values())


def test_a_setting_of_the_users_is_kept():
    seen = _job_environment(MALLOC_MMAP_THRESHOLD_="131072")
    assert seen["MALLOC_MMAP_THRESHOLD_"] == "131072"
    assert seen["MALLOC_TRIM_THRESHOLD_"] == runtime.ALLOCATOR_ENV["MALLOC_TRIM_THRESHOLD_"]
