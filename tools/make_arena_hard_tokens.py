"""Write data/peers/arena_hard_v01_cl100k_tokens.csv: the cl100k_base token count of each released
Arena-Hard-Auto v0.1 answer of the three models whose battles are released.

    ISQAFLOW_TIKTOKEN_PYTHON=/tmp/s36-tok/bin/python python tools/make_arena_hard_tokens.py

arena-hard v0.1 counted tokens with tiktoken's gpt-3.5-turbo encoding (cl100k_base); tiktoken
downloads that file, so the counts come from a test-only Python with ``quicktok-v1`` (which
bundles it; tests/unit/arena/test_peer_statistics.py builds the same counts and checks their
averages against the published 354 / 329).  The counts are committed so that
docs/reproduction.md (isqaflow.arena.reproduction's style-controlled rows) regenerates without
that environment.  Only derived integers are stored, no text of the peers' files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

from isqaflow.arena.reproduction import ARENA_HARD_STYLE_MODELS, TOKENS_FILE
from isqaflow.data.peers import read_arena_hard_answers

REPO = Path(__file__).resolve().parents[1]
SCRIPT = (
    "import json, sys, quicktok; enc = quicktok.encoding_for_model('gpt-3.5-turbo'); "
    "print(json.dumps([len(enc.encode(t)) for t in json.load(open(sys.argv[1]))]))"
)


def main() -> int:
    python = os.environ.get("ISQAFLOW_TIKTOKEN_PYTHON", "/tmp/s36-tok/bin/python")
    answers = REPO.parent / "shared/data/peers/arena-hard/data/arena-hard-v0.1/model_answer"
    columns = {}
    for model in ARENA_HARD_STYLE_MODELS:
        table = read_arena_hard_answers(answers / f"{model}.jsonl").table
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
            json.dump(table["answer"].tolist(), handle)
        out = subprocess.run(
            [python, "-c", SCRIPT, handle.name], check=True, capture_output=True, text=True
        ).stdout
        Path(handle.name).unlink()
        columns[model] = pd.Series(json.loads(out), index=table["question_id"])
    frame = pd.DataFrame(columns).sort_index()
    frame.index.name = "question_id"
    frame.to_csv(TOKENS_FILE)
    print(frame.mean().round(2).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
