"""The report of the run you made: ``make report`` builds Snakemake's report for the config
files and targets of the last run, and never runs the workflow itself.

A plain ``snakemake --report`` (and ``make report`` before this module, which ran ``make run``
first) plans the embedded default: after a run with an overlay (``--configfile mine.yaml``) it
would re-convert, re-judge and rebuild the leaderboard without the overlay's systems.  So every
run records, when it starts (the Snakefile's ``onstart``: not in a dry run), the config files
and targets it was given, in :data:`RECORD`; :func:`report_command` turns that record into the
one ``snakemake --report`` command of that run, and refuses -- naming the missing overlay --
where the record is absent or names a config file that is gone.

    python -m isqaflow.report.last_run [--report report.html] [-- <snakemake options>]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path

#: Where a run's config files and targets are recorded (Snakemake's own folder: not a result).
RECORD = ".snakemake/isqaflow/last_run.json"


class NoRecordedRun(RuntimeError):
    """No run to build the report of, or one whose config file is gone."""


def record_run(
    workdir: str | os.PathLike,
    configfiles: Iterable[str | os.PathLike],
    targets: Iterable[str],
    argv: Sequence[str] = (),
) -> Path:
    """Write the record of the run starting now in ``workdir``: its ``--configfile`` files
    (absolute: the report may be built from another folder's shell), its targets (none: the
    default target) and the command line."""
    path = Path(workdir) / RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "configfiles": [str(Path(f).resolve()) for f in configfiles],
        "targets": sorted(targets),
        "command": " ".join(argv),
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def read_record(workdir: str | os.PathLike) -> dict:
    path = Path(workdir) / RECORD
    if not path.is_file():
        raise NoRecordedRun(
            f"no run is recorded in {path} (each run records its config files when it starts): "
            "run the workflow first (`make run`, or `snakemake --profile profiles/local "
            "--configfile mine.yaml`); `make report` builds the report of that run and never "
            "runs it"
        )
    record = json.loads(path.read_text(encoding="utf-8"))
    gone = [f for f in record["configfiles"] if not Path(f).is_file()]
    if gone:
        raise NoRecordedRun(
            f"the last run ({record['started']}: {record['command']}) was given the config "
            f"file {gone[0]}, which no longer exists: restore it, or build the report yourself "
            "with `snakemake --configfile <the run's files> --report report.html`"
        )
    return record


def report_command(
    workdir: str | os.PathLike, report: str = "report.html", options: Sequence[str] = ()
) -> list[str]:
    """The ``snakemake --report`` command of the last run in ``workdir``: its targets first
    (Snakemake reads words after ``--configfile`` as more config files), then ``options``
    (e.g. the profile), its config files and ``--report``."""
    record = read_record(workdir)
    command = [sys.executable, "-m", "snakemake", *record["targets"], *options]
    if record["configfiles"]:
        command += ["--configfile", *record["configfiles"]]
    return [*command, "--report", report]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    options = args[args.index("--") + 1 :] if "--" in args else []
    args = args[: args.index("--")] if "--" in args else args
    report = args[args.index("--report") + 1] if "--report" in args else "report.html"
    try:
        command = report_command(Path.cwd(), report, options)
    except NoRecordedRun as error:
        print(f"isqaflow: {error}", file=sys.stderr)
        return 1
    record = read_record(Path.cwd())
    print(
        f"isqaflow: the report of the run of {record['started']} "
        f"({record['command'] or 'snakemake'}):\n  " + " ".join(command),
        file=sys.stderr,
    )
    return subprocess.run(command, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
