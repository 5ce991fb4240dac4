"""Write the plan's figures of config/paper.yaml into docs/paper-scale.md (between the markers of
isqaflow.spend.figures): jobs per rule and where they run, GPU hours, dollars, the weights' size.

    .venv/bin/python tools/plan_figures.py           # rewrite the docs' block
    .venv/bin/python tools/plan_figures.py --check   # exit 1 if the docs' block is stale

The jobs come from a dry run of the cluster command in a temporary copy of the checkout (its
tracked files, with an empty SciMRC stub as the tests use), so nothing here is touched but the doc.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

import yaml  # noqa: E402

from isqaflow.spend import figures  # noqa: E402

ENV = {
    "SLURM_ACCOUNT": "acct",
    "SLURM_CPU_PARTITION": "cpu",
    "SLURM_GPU_PARTITION": "gpu",
    "OPENAI_API_KEY": "placeholder-for-a-dry-run",
}
SCIMRC_STUB = "resources/local/scimrc/scimrc_train_dev.json"
# Snakemake's localrules, from its own API (a dry run does not mark them)
LOCALRULES = """
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings
with SnakemakeApi(OutputSettings()) as api:
    workflow = api.workflow(resource_settings=ResourceSettings(cores=1), snakefile=Path("Snakefile"),
                            config_settings=ConfigSettings(configfiles=[Path({config!r})]), workdir=Path("."))
    print("LOCALRULES", " ".join(sorted(workflow._workflow._localrules)))
"""


def dry_run(config: str) -> tuple[str, set[str]]:
    """The dry run's output and the localrules, in a temporary copy of the checkout."""
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, check=True, capture_output=True, text=True
    ).stdout.split("\0")
    with tempfile.TemporaryDirectory() as tmp:
        for name in filter(None, files):
            if (REPO / name).is_file():
                (Path(tmp) / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(REPO / name, Path(tmp) / name)
        stub = Path(tmp) / SCIMRC_STUB
        stub.parent.mkdir(parents=True, exist_ok=True)
        stub.write_text("[]\n")
        env = {**os.environ, **ENV, "PYTHONPATH": str(Path(tmp) / "src")}
        snakemake = Path(sys.executable).with_name("snakemake")
        cmd = [str(snakemake), "--profile", "profiles/slurm", "--configfile", config, "-n"]
        run = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
        if run.returncode:
            sys.exit(f"the dry run failed:\n{run.stderr[-3000:]}")
        code = LOCALRULES.format(config=config)
        local = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp, env=env, capture_output=True, text=True
        )
        if local.returncode:
            sys.exit(f"reading the localrules failed:\n{local.stderr[-3000:]}")
    rules = (local.stdout + local.stderr).split("LOCALRULES", 1)[1].split("\n", 1)[0].split()
    return run.stdout + run.stderr, set(rules)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/paper.yaml")
    parser.add_argument("--doc", default="docs/paper-scale.md")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    config = yaml.safe_load((REPO / args.config).read_text())
    text, local_rules = dry_run(args.config)
    generated = figures.block(config, figures.parse_dry_run(text), local_rules, "/nonexistent")
    doc_path = REPO / args.doc
    doc = doc_path.read_text()
    if args.check:
        sys.exit(0 if figures.current_block(doc) == generated else f"{args.doc}: stale figures")
    doc_path.write_text(figures.replace_block(doc, generated))
    print(generated)


if __name__ == "__main__":
    main()
