"""PyLate for real, in the colbert environment: a tiny random ColBERT indexes and retrieves.

The environment is a separate virtual environment built from envs/colbert.yaml's pins
(``bash benchmarks/colbert_env.sh /tmp/colbert-venv``: ~5 GB, torch 2.11.0's CUDA 13 build) or
its CUDA-12 variant's (``bash benchmarks/colbert_env.sh VENV python3 envs/colbert-cuda12.yaml``:
7.7 GB, torch 2.10.0+cu128); its Python is taken from ISQAFLOW_COLBERT_PYTHON, else
/tmp/colbert-venv/bin/python.  Without it the test skips and says so.  The checks are
those of benchmarks/colbert_pylate_smoke.py (it asserts; this test runs it and reads
its report).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from isqaflow import cuda

REPO = Path(__file__).resolve().parents[2]
PYTHON = Path(os.environ.get("ISQAFLOW_COLBERT_PYTHON", "/tmp/colbert-venv/bin/python"))


def colbert_python() -> Path:
    if not PYTHON.is_file():
        pytest.skip(
            f"no colbert environment at {PYTHON} (build one: bash benchmarks/colbert_env.sh "
            "/tmp/colbert-venv, or set ISQAFLOW_COLBERT_PYTHON)"
        )
    probe = subprocess.run(
        [str(PYTHON), "-c", "import pylate, fast_plaid"], capture_output=True, text=True
    )
    if probe.returncode:
        pytest.skip(f"{PYTHON} cannot import pylate and fast_plaid: {probe.stderr.strip()[-300:]}")
    return PYTHON


@pytest.mark.slow
def test_pylate_indexes_and_retrieves_with_a_tiny_random_colbert(tmp_path):
    python = colbert_python()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "HF_HUB_OFFLINE": "1",
        "CUDA_VISIBLE_DEVICES": "",
    }
    run = subprocess.run(
        [str(python), str(REPO / "benchmarks" / "colbert_pylate_smoke.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    # the torch of envs/colbert.yaml (CUDA 13) or of its CUDA-12 variant, whichever built the venv
    torches = {
        re.search(r"- torch==(\S+)", (REPO / cuda.env_file("colbert", v)).read_text()).group(1)
        for v in cuda.VARIANTS
    }
    assert torches == {"2.11.0", "2.10.0"}
    assert report["torch"].split("+")[0] in torches, report["torch"]
    assert report["passages"] == 12 and report["queries"] == 4
    assert report["top1_agrees_with_exact_maxsim"] == "4/4"
    assert "meta.json" in report["index_files"] and "centroids.npy" in report["index_files"]
    assert set(report["recall"]) == {"k=1", "k=3"}
    assert (tmp_path / "index" / "colbert" / "meta.json").is_file()
