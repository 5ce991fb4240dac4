"""Write a fully pinned conda environment for the vLLM server from pip's resolution report.

    pip install --dry-run --ignore-installed --report /tmp/vllm.json vllm==0.33.0     # metadata only
    python tools/serving_env.py /tmp/vllm.json --out envs/serving.yaml --name isqaflow-serving \
        --note "vLLM 0.33.0: torch 2.14.0, CUDA 13 (a driver for CUDA 13)"

Every package pip would install is pinned to the version it resolved (the server imports
most of them: torch, transformers, tokenizers, fastapi, uvicorn, pydantic, openai, xformers
or flashinfer, triton, the nvidia-* CUDA libraries), so nothing under vLLM floats.  The
report is resolved for the Python and platform pip ran on (here: CPython 3.11, Linux
x86_64, the cluster's nodes' platform); a different Python needs its own report.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HEADER = """\
# The vLLM server of models with serve: (engine vllm), in its own environment: vLLM pins its
# own torch and CUDA libraries, which must not meet the workflow's.  Jobs do not run in it:
# their serve: command starts the server from it, e.g.
#   conda env create -n {name} -f {out}      (once, on a login node)
#   command: conda run --no-capture-output -n {name} vllm serve {{model}} --port {{port}} ...
{note}
# Fully pinned: every package of pip's resolution of {root} (Python {python}, {platform}),
# written by tools/serving_env.py from `pip install --dry-run --ignore-installed --report`.
"""


def pins(report: dict) -> list[str]:
    out = {}
    for item in report["install"]:
        meta = item["metadata"]
        out[meta["name"].lower().replace("_", "-")] = meta["version"]
    return [f"{name}=={version}" for name, version in sorted(out.items())]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--note", action="append", default=[], help="a comment line (repeatable)")
    args = parser.parse_args(argv)
    report = json.loads(args.report.read_text())
    requested = [i for i in report["install"] if i.get("requested")]
    root = ", ".join(f"{i['metadata']['name']}=={i['metadata']['version']}" for i in requested)
    environment = report.get("environment", {})
    python = environment.get("python_version", "3.11")
    text = HEADER.format(
        name=args.name,
        out=args.out.as_posix(),
        note="\n".join(f"# {line}" for line in args.note),
        root=root,
        python=python,
        platform=f"{environment.get('sys_platform', 'linux')} {environment.get('platform_machine', '')}",
    )
    text += "channels:\n  - conda-forge\n  - nodefaults\ndependencies:\n"
    text += f"  - python={python}\n  - pip\n  - pip:\n"
    text += "".join(f"      - {pin}\n" for pin in pins(report))
    args.out.write_text(text)


if __name__ == "__main__":
    main()
