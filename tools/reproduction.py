"""Write docs/reproduction.md: the peers' published numbers recomputed from their released files.

    python tools/reproduction.py [--peers ../shared/data/peers] [--out docs/reproduction.md]

The logic is isqaflow.arena.reproduction; this only parses the arguments and prints the rows
outside their tolerance (exit status 1 when there is one; a row claiming no tolerance is
never outside).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from isqaflow.arena.reproduction import write_reproduction

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peers", type=Path, default=REPO.parent / "shared/data/peers")
    parser.add_argument("--out", type=Path, default=REPO / "docs/reproduction.md")
    args = parser.parse_args(argv)
    rows = write_reproduction(args.peers, args.out)
    outside = [row for row in rows if row.outside]
    for row in outside:
        print(f"outside the tolerance: {row.benchmark}, {row.quantity}: {row.difference:+g}")
    undecided = sum(row.tolerance is None for row in rows)
    print(
        f"{args.out}: {len(rows)} rows, {len(outside)} outside their tolerance, "
        f"{undecided} claiming none"
    )
    return 1 if outside else 0


if __name__ == "__main__":
    sys.exit(main())
