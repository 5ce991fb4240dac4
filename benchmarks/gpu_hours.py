"""GPU hours of the paper grid, estimated from the config and the GPU plan (no GPU, no run).

    PYTHONPATH=src .venv/bin/python benchmarks/gpu_hours.py [--configfile config/paper.yaml]

Prints the table of docs/paper-scale.md's "GPU hours" section (a test keeps the two equal)
and its totals.  The estimator, its rates and their sources: :mod:`isqaflow.spend.gpu_hours`.
"""

from __future__ import annotations

import argparse

import yaml

from isqaflow.spend.gpu_hours import gpu_jobs, table

__all__ = ["gpu_jobs", "main", "table"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configfile", default="config/paper.yaml")
    args = parser.parse_args()
    with open(args.configfile, encoding="utf-8") as handle:
        config = yaml.safe_load(handle)
    text, totals = table(config)
    print(text)
    print(
        f"GPU jobs {totals['jobs']:.0f}, GPUs {totals['gpus']:.0f}, servers {totals['servers']:.0f} "
        f"(start-up ~{totals['startup']:.1f} GPU hours, included); GPU hours ~{totals['low']:.0f}-"
        f"{totals['high']:.0f} (estimated), ~{totals['at_a']:.0f} with every beam-search stage at (a)"
    )


if __name__ == "__main__":
    main()
