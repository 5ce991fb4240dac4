"""Timeline of a Snakemake run: each job's start, end and threads, and the idle core-seconds.

    python benchmarks/dag_timeline.py [RUN_DIR] [--log .snakemake/log/<run>.snakemake.log] [--cores 2]

Reads the run's Snakemake log (the newest in ``RUN_DIR/.snakemake/log/`` by default):
every job's start (the timestamp above its ``rule``/``localrule`` block), its end (the
timestamp above ``Finished jobid``), its threads, and, where the rule has a
``benchmark:`` file, the seconds that file measured (finer than the log's one-second
timestamps).  Prints one line per job in start order with a bar on a shared time axis,
then the wall time, the busy and idle core-seconds (idle = cores x wall - sum of
threads x duration), the stretches when fewer jobs ran than there were cores, and the
seconds per rule.  Used to keep the embedded DAG's timeline in the README and to see the
next regression.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

_STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
_RULE = re.compile(r"^(?:local)?rule (\S+):$")
_FIELD = re.compile(r"^\s+(jobid|threads|benchmark|wildcards): (.*)$")
_FINISHED = re.compile(r"^Finished jobid: (\d+)")
_CORES = re.compile(r"^Provided cores: (\d+)")


@dataclass
class Job:
    jobid: int
    rule: str
    start: datetime
    threads: int = 1
    wildcards: str = ""
    benchmark: str | None = None
    end: datetime | None = None
    fields: dict[str, str] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds() if self.end else float("nan")


def parse_log(path: Path) -> tuple[list[Job], int | None]:
    """Jobs of a Snakemake log, in start order, and the cores it was given."""
    jobs: dict[int, Job] = {}
    stamp: datetime | None = None
    current: dict | None = None
    cores = None
    for line in path.read_text(errors="replace").splitlines():
        if (m := _CORES.match(line)) and cores is None:
            cores = int(m.group(1))
        if m := _STAMP.match(line):
            stamp = datetime.strptime(" ".join(m.group(1).split()), "%a %b %d %H:%M:%S %Y")
            current = None
            continue
        if (m := _RULE.match(line)) and stamp is not None:
            current = {"rule": m.group(1), "start": stamp}
            continue
        if current is not None and (m := _FIELD.match(line)):
            current[m.group(1)] = m.group(2).strip()
            if m.group(1) == "jobid":
                jid = int(current["jobid"])
                jobs[jid] = Job(jid, current["rule"], current["start"])
            elif "jobid" in current:
                job = jobs[int(current["jobid"])]
                if m.group(1) == "threads":
                    job.threads = int(current["threads"])
                elif m.group(1) == "wildcards":
                    job.wildcards = current["wildcards"]
                elif m.group(1) == "benchmark":
                    job.benchmark = current["benchmark"]
            continue
        if (m := _FINISHED.match(line)) and stamp is not None:
            jid = int(m.group(1))
            if jid in jobs:
                jobs[jid].end = stamp
    return sorted(jobs.values(), key=lambda j: (j.start, j.jobid)), cores


def benchmark_seconds(run_dir: Path, job: Job) -> float | None:
    if not job.benchmark:
        return None
    path = run_dir / job.benchmark
    try:
        lines = path.read_text().splitlines()
        return float(lines[-1].split("\t")[0])
    except (OSError, ValueError, IndexError):
        return None


def under_used(jobs: list[Job], cores: int, t0: datetime) -> list[tuple[float, float, int]]:
    """Stretches (start, end, threads in use) when fewer threads ran than there were cores."""
    edges = sorted({j.start for j in jobs} | {j.end for j in jobs if j.end})
    out: list[tuple[float, float, int]] = []
    for a, b in zip(edges, edges[1:]):
        used = sum(j.threads for j in jobs if j.end and j.start <= a and j.end >= b)
        if used < cores and (b - a).total_seconds() > 0:
            start, end = (a - t0).total_seconds(), (b - t0).total_seconds()
            if out and out[-1][1] == start and out[-1][2] == used:
                out[-1] = (out[-1][0], end, used)
            else:
                out.append((start, end, used))
    return out


def report(run_dir: Path, log: Path, cores: int | None, width: int = 60) -> str:
    jobs, log_cores = parse_log(log)
    jobs = [j for j in jobs if j.end is not None]
    if not jobs:
        return f"{log}: no finished jobs"
    cores = cores or log_cores or 1
    t0 = min(j.start for j in jobs)
    t1 = max(j.end for j in jobs)
    wall = max((t1 - t0).total_seconds(), 1.0)
    scale = width / wall
    lines = [f"log: {log}", f"{'start':>6} {'end':>6} {'s':>6} {'bench s':>8} thr  job", ""]
    for j in jobs:
        a, b = (j.start - t0).total_seconds(), (j.end - t0).total_seconds()
        bench = benchmark_seconds(run_dir, j)
        bar = " " * int(a * scale) + "#" * max(1, int(round((b - a) * scale)))
        label = f"{j.rule}" + (f" [{j.wildcards}]" if j.wildcards else "")
        lines.append(
            f"{a:6.0f} {b:6.0f} {b - a:6.0f} {'' if bench is None else f'{bench:8.1f}':>8} {j.threads:>3}  "
            f"{label[:48]:<48} |{bar}"
        )
    busy = sum(j.threads * j.seconds for j in jobs)
    idle = cores * wall - busy
    lines += [
        "",
        f"wall: {wall:.0f} s ({wall / 60:.1f} min) on {cores} cores; jobs: {len(jobs)}",
        f"busy core-seconds: {busy:.0f}; idle core-seconds: {idle:.0f} ({100 * idle / (cores * wall):.0f}%)",
    ]
    gaps = [(a, b, u) for a, b, u in under_used(jobs, cores, t0) if b - a >= 5]
    if gaps:
        lines.append("stretches of >= 5 s with idle cores (start-end: threads in use):")
        lines += [f"  {a:5.0f}-{b:5.0f} s: {u} of {cores}" for a, b, u in gaps]
    per_rule: dict[str, list[float]] = defaultdict(list)
    for j in jobs:
        per_rule[j.rule].append(j.seconds)
    lines.append("seconds per rule (jobs):")
    for rule, secs in sorted(per_rule.items(), key=lambda kv: -sum(kv[1])):
        lines.append(f"  {rule:<24} {sum(secs):7.0f} ({len(secs)})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", nargs="?", default=".", type=Path)
    parser.add_argument("--log", type=Path, help="a Snakemake log (default: the newest of the run)")
    parser.add_argument("--cores", type=int, help="cores of the run (default: from the log)")
    args = parser.parse_args(argv)
    log = args.log
    if log is None:
        logs = sorted((args.run_dir / ".snakemake" / "log").glob("*.snakemake.log"))
        if not logs:
            print(f"no Snakemake log under {args.run_dir}/.snakemake/log", file=sys.stderr)
            return 1
        log = logs[-1]
    print(report(args.run_dir, log, args.cores))
    return 0


if __name__ == "__main__":
    sys.exit(main())
