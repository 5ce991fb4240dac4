"""New tokens per second: the in-process hf backend vs the same model behind a managed server.

The same requests -- summaries of the embedded papers (prompt baseline_2, the
embedded decoding: 2 beams, n-gram blocking, 24-48 new tokens) and DRFR judge turns
(text mode, greedy, at most 16 new tokens) -- go

* through the in-process hf backend (``backend: hf``), and
* through a managed server started as the workflow starts one (``serve:``): by
  default ``transformers serve`` on the CPU (engine ``transformers``, every decoding
  setting sent as a ``generation_config``, in float32 as the hf backend on a CPU, so
  the outputs should be identical); on a
  GPU machine pass ``--engine vllm --command "vllm serve {model} --host {host} --port
  {port} ..."`` (vLLM has no n-gram blocking: add ``--drop-unsupported``).

It prints new tokens per second of each path (server start-up and a one-request
warm-up excluded; the start-up is reported) and how many outputs are identical.  No
call cache is used.

    .venv/bin/python benchmarks/serving_throughput.py [--threads 2] [--papers 3] [--judge-items 8]

Needs the converted embedded model (run the workflow once), or ``--model PATH``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

import yaml

from isqaflow.data.infobench import convert_infobench
from isqaflow.data.qasper import convert_qasper
from isqaflow.drfr.judge import conversation
from isqaflow.isqa.prompts import summary_request
from isqaflow.models.base import GenerationParams
from isqaflow.models.registry import load_model


def transformers_command() -> str:
    cli = Path(sys.executable).parent / "transformers"
    cli = str(cli) if cli.exists() else (shutil.which("transformers") or "transformers")
    # float32: what the hf backend's dtype auto loads on a CPU (the checkpoint itself is bf16)
    return f"{cli} serve {{model}} --host {{host}} --port {{port}} --device cpu --dtype float32 --log-level warning"


def timed(model, requests, params) -> tuple[list, float]:
    started = time.perf_counter()
    out = model.generate(requests, params)
    return out, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument(
        "--model", default=None, help="model directory (default: the embedded smollm2)"
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--papers", type=int, default=3)
    parser.add_argument("--judge-items", type=int, default=8)
    parser.add_argument(
        "--engine", default="transformers", choices=["transformers", "vllm", "other"]
    )
    parser.add_argument(
        "--command", default=None, help="the serve command (default: transformers serve on CPU)"
    )
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--drop-unsupported", action="store_true")
    args = parser.parse_args()

    os.environ["OMP_NUM_THREADS"] = str(
        args.threads
    )  # the server inherits it: the same cores for both
    config = yaml.safe_load(open(args.config))
    spec = dict(config["models"]["smollm2"])
    spec.pop("convert", None)
    if args.model:
        spec["model"] = args.model
    papers = convert_qasper(config["datasets"]["papers"]["qasper"]["files"])[: args.papers]
    summaries = [summary_request("baseline_2", p.body()) for p in papers]
    summary_params = GenerationParams.from_dict(config["isqa"]["summary_generation"]).replace(
        max_input_tokens=None
    )
    instructions = convert_infobench(config["datasets"]["instructions"]["infobench"]["files"])
    judge_turns = [
        conversation(i.input or i.instruction, i.input, [i.requirements[0].question], [])
        for i in instructions[: args.judge_items]
    ]
    judge_params = GenerationParams(max_new_tokens=16)
    workloads = {
        "summaries": (summaries, summary_params),
        "judge turns": (judge_turns, judge_params),
    }

    in_process = load_model(spec, threads=args.threads)
    served_spec = {
        **spec,
        "concurrency": args.concurrency,
        "serve": {
            "engine": args.engine,
            "command": args.command or transformers_command(),
            "ready_timeout": 600,
            **({"unsupported_decoding": "drop"} if args.drop_unsupported else {}),
        },
    }
    started = time.perf_counter()
    served = load_model(served_spec, name="served")
    startup_s = time.perf_counter() - started
    try:
        print(
            f"model {spec['model']}, {args.threads} threads; server ({args.engine}) ready in {startup_s:.1f}s"
        )
        for model in (in_process, served):  # warm-up: first-call costs are not throughput
            model.generate(["Hello"], GenerationParams(max_new_tokens=2))
        for label, (requests, params) in workloads.items():
            local, local_s = timed(in_process, requests, params)
            remote, remote_s = timed(served, requests, params)
            n_local = sum(g.n_new_tokens for g in local)
            n_remote = sum(g.n_new_tokens for g in remote)
            same = sum(a.text == b.text for a, b in zip(local, remote, strict=True))
            print(f"{label}: {len(requests)} requests, decoding {params.as_dict()}")
            print(
                f"  in-process hf:  {n_local} new tokens in {local_s:.1f}s = {n_local / local_s:.1f} new tok/s"
            )
            print(
                f"  managed server: {n_remote} new tokens in {remote_s:.1f}s = {n_remote / remote_s:.1f} new tok/s"
            )
            print(f"  identical outputs: {same}/{len(requests)}")
    finally:
        served.close()


if __name__ == "__main__":
    main()
