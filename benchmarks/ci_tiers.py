"""The CI tiers' minutes and the embedded DAG's wall time (issue 38's budgets: `.ci/run` <= 45 min).

    python benchmarks/ci_tiers.py run [OUT]    run each tier of `make test` (the Makefile's
                                               pytest lines) alone, one after another,
                                               recording JUnit XML under OUT
    python benchmarks/ci_tiers.py read [OUT]   print the figures of a run made before

Printed: each tier's minutes (wall, with the load average before and after: the machines are
shared, so a figure without its contention means little), the slowest tests of each tier, the
walls the slow fixtures print (the embedded DAG, the SLURM run, the rehearsal) and, when
`.ci/run` logged its builds ($ISQAFLOW_CI_LOGS, /tmp/isqaflow-ci-logs), each build's time.
A benchmark, not a test: it asserts nothing and CI does not run it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = Path("/tmp/isqaflow-ci-tiers")
# What the slow fixtures print about their runs (tests/conftest.py, tests/cluster/).
WALLS = {
    "embedded DAG (local)": r"embedded DAG: (\d+)s",
    "SLURM jobs of the embedded DAG": r"through SLURM: exit \d+ after (\d+)s",
    "rehearsal": r'"wall_s": ([0-9.]+)',
    "SLURM smoke workflow": r"smoke workflow: exit \d+ after ([0-9.]+)s",
}


def tiers() -> list[list[str]]:
    """The pytest commands of the Makefile's `test` recipe, as `make -n test` prints them (its
    variables expanded: one fact, one place: the tiers are the Makefile's), run with this
    interpreter."""
    cores = os.environ.get("CORES", "2")
    printed = subprocess.run(
        ["make", "--no-print-directory", "-n", "test", f"CORES={cores}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    commands = []
    for line in printed.splitlines():
        if "-m pytest" not in line:
            continue
        argv = shlex.split(line.strip().lstrip("@").rstrip("\\ "))
        argv = argv[argv.index("-m") :]
        # the command ends at the recipe's shell: a redirection, `&`, `&&`, `;`
        end = next((i for i, a in enumerate(argv) if a[0] in "&;>|" or a.endswith(";")), None)
        commands.append([sys.executable, *argv[:end]])
    if not commands:
        raise SystemExit("make -n test: no pytest line in the test recipe")
    return commands


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    record = []
    for n, argv in enumerate(tiers(), start=1):
        xml = out / f"tier{n}.xml"
        argv = [*argv, f"--junitxml={xml}", "-o", "junit_logging=system-out", "--durations=0"]
        before, started = load(), time.monotonic()
        with open(out / f"tier{n}.log", "w") as log:
            rc = subprocess.run(
                argv,
                cwd=REPO,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "HF_HUB_OFFLINE": "1"},
            ).returncode
        record.append(
            {
                "tier": n,
                "command": shlex.join(argv[1:]),
                "returncode": rc,
                "wall_s": round(time.monotonic() - started, 1),
                "load_before": before,
                "load_after": load(),
            }
        )
        (out / "tiers.json").write_text(json.dumps(record, indent=1))
    read(out)


def read(out: Path) -> None:
    tiers_file = out / "tiers.json"
    record = json.loads(tiers_file.read_text()) if tiers_file.exists() else []
    total = 0.0
    for entry in record:
        total += entry["wall_s"]
        print(
            f"tier {entry['tier']}: {entry['wall_s'] / 60:.1f} min (exit {entry['returncode']}; "
            f"load {entry['load_before']} -> {entry['load_after']}): {entry['command']}"
        )
    for xml in sorted(out.glob("tier*.xml")):
        suite = ET.parse(xml).getroot()
        suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
        cases = [
            (float(c.get("time", 0)), f"{c.get('classname')}::{c.get('name')}")
            for c in suite.iter("testcase")
        ]
        print(
            f"{xml.name}: {len(cases)} tests, {float(suite.get('time', 0)) / 60:.1f} min in pytest; slowest:"
        )
        for seconds, name in sorted(cases, reverse=True)[:8]:
            print(f"  {seconds:8.1f} s  {name}")
        text = "".join(c.text or "" for c in suite.iter("system-out"))
        text += (
            (out / xml.name.replace(".xml", ".log")).read_text(errors="replace")
            if (out / xml.name.replace(".xml", ".log")).exists()
            else ""
        )
        for label, pattern in WALLS.items():
            found = sorted({float(m) for m in re.findall(pattern, text)})
            if found:
                print(f"  {label}: {', '.join(f'{s / 60:.1f} min' for s in found)}")
    if record:
        # each tier alone here; `make test` runs the dress rehearsal's tier beside the others
        print(f"tests: {total / 60:.1f} min in all, the tiers one after another")
    logs = Path(os.environ.get("ISQAFLOW_CI_LOGS", "/tmp/isqaflow-ci-logs"))
    for log in sorted(logs.glob("*.log")):
        lines = log.read_text(errors="replace").strip().splitlines()
        if lines:
            print(f".ci/run build {log.stem}: {lines[-1]}")


def main(argv: list[str]) -> None:
    if not argv or argv[0] not in ("run", "read"):
        raise SystemExit(__doc__)
    out = Path(argv[1]) if len(argv) > 1 else DEFAULT_OUT
    (run if argv[0] == "run" else read)(out)


if __name__ == "__main__":
    main(sys.argv[1:])
