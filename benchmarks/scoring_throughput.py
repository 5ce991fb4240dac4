"""Summaries scored per minute (QAGS + QuestEval + ROUGE) on the embedded default.

Scores the summaries the workflow produced for one dataset and summarizer with the
embedded default's metric settings, from an empty call cache (so every question
generation and answering call is computed), and prints the distinct summaries
scored per minute, then repeats the run on the now-filled cache.

    .venv/bin/python benchmarks/scoring_throughput.py [--dataset qasper] [--summarizer smollm2]

Run the workflow first (``make run``): it reads results/summaries/ and the
converted model.
"""

from __future__ import annotations

import argparse
import glob
import tempfile
import time
from pathlib import Path

import yaml

from isqaflow.io import read_jsonl
from isqaflow.metrics.qa_metrics import QAMetricSettings
from isqaflow.metrics.score import run_scoring
from isqaflow.metrics.scorers import MetricModels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--dataset", default="qasper")
    parser.add_argument("--summarizer", default="smollm2")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    config = yaml.safe_load(open(args.config))
    summaries = sorted(
        p
        for p in glob.glob(f"results/summaries/{args.dataset}/{args.summarizer}/*.jsonl")
        if not p.endswith(".steps.jsonl")
    )
    if not summaries:
        raise SystemExit("no summaries under results/summaries/: run the workflow first (make run)")
    distinct = {(o["paper_id"], o["summary"]) for p in summaries for _, o in read_jsonl(p)}

    def spec(role: str) -> dict:
        entry = dict(config["metrics"][role])
        model = dict(config["models"][entry["model"]])
        model.pop("convert", None)
        entry["model"] = model
        return entry

    settings = {**config["metrics"]["qags"], "seed": config["seed"]}
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "calls.sqlite"
        for label in ("empty cache", "filled cache"):
            started = time.perf_counter()
            models = MetricModels(
                qg=spec("qg"), qa=spec("qa"), settings=QAMetricSettings.from_dict(settings)
            )
            run_scoring(
                f"results/data/papers/{args.dataset}.jsonl",
                summaries,
                Path(tmp) / "scores.jsonl",
                Path(tmp) / "questions.jsonl",
                models,
                cache,
                threads=args.threads,
            )
            seconds = time.perf_counter() - started
            print(
                f"{label}: {len(distinct)} distinct summaries in {seconds:.1f}s = "
                f"{60 * len(distinct) / seconds:.1f} summaries/min"
            )


if __name__ == "__main__":
    main()
