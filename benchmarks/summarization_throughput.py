"""New tokens per second of the summarization stage: batched vs one request at a time.

Builds the baseline-summary requests of the embedded papers (every prompt of
Appendix E.1/E.2, as rule baseline_summaries does), then generates them

* batched, as the workflow does (left-padded batches, sorted by length), and
* one request at a time,

with the embedded default's decoding settings, and prints the new tokens per second
of each and the speed-up.  No call cache is used, so both runs compute everything.

    .venv/bin/python benchmarks/summarization_throughput.py [--threads 2] [--papers 3]

Needs the converted embedded model (run the workflow once, or
``snakemake resources/models/smollm2-135m-instruct/model.safetensors``).
"""

from __future__ import annotations

import argparse
import time

import yaml

from isqaflow.data.qasper import convert_qasper
from isqaflow.isqa.prompts import SUMMARY_PROMPTS, summary_request
from isqaflow.models.base import GenerationParams
from isqaflow.models.registry import load_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--papers", type=int, default=3)
    args = parser.parse_args()
    config = yaml.safe_load(open(args.config))
    papers = convert_qasper(config["datasets"]["papers"]["qasper"]["files"])[: args.papers]
    spec = dict(config["models"]["smollm2"])
    spec.pop("convert")
    model = load_model(spec, threads=args.threads)
    params = GenerationParams.from_dict(config["isqa"]["summary_generation"]).replace(
        max_input_tokens=None
    )
    requests = [summary_request(pid, p.body()) for pid in SUMMARY_PROMPTS for p in papers]

    started = time.perf_counter()
    batched = model.generate(requests, params)
    batched_s = time.perf_counter() - started
    started = time.perf_counter()
    single = [model.generate([r], params)[0] for r in requests]
    single_s = time.perf_counter() - started

    tokens_b = sum(g.n_new_tokens for g in batched)
    tokens_s = sum(g.n_new_tokens for g in single)
    print(
        f"{len(requests)} requests ({args.papers} papers x {len(SUMMARY_PROMPTS)} prompts), "
        f"decoding {params.as_dict()}"
    )
    print(
        f"batched (batch size {model.batch_size}): {tokens_b} new tokens in {batched_s:.1f}s = "
        f"{tokens_b / batched_s:.1f} new tok/s"
    )
    print(
        f"one at a time:            {tokens_s} new tokens in {single_s:.1f}s = {tokens_s / single_s:.1f} new tok/s"
    )
    print(f"speed-up: {(tokens_b / batched_s) / (tokens_s / single_s):.2f}x")
    same = sum(a.text == b.text for a, b in zip(batched, single, strict=True))
    print(f"identical outputs: {same}/{len(requests)} (padding can flip a near-tie in beam search)")


if __name__ == "__main__":
    main()
