"""The feedback model before and after fine-tuning, on held-out examples (ISQA, Table 8).

For each held-out example the model answers ISQA's feedback prompt.  Reported per
variant ("before" = the base model, "after" = base + adapter):

* consistency -- the share of outputs that parse into answer + evidence (or say
  ``Unanswerable``), the paper's "Consistency";
* answer ROUGE and evidence ROUGE -- the mean of ROUGE-1/2/L F against the gold
  answer and the gold evidence sentences; an output that does not parse scores 0;
* answer token F1 (SQuAD), the measure ISQA's fact/non-fact split uses.

The paper evaluates on SciMRC; the workflow uses held-out HotpotQA examples (the
fine-tuning data's dev split), whose evidence is annotated sentence by sentence.
"""

from __future__ import annotations

import logging
import os
from statistics import fmean
from typing import Any

import numpy as np

from isqaflow.data.schema import QAExample
from isqaflow.finetune.formats import example_request, parse_feedback
from isqaflow.io import read_records, write_json, write_jsonl
from isqaflow.text.rouge import rouge
from isqaflow.models.base import GenerationParams
from isqaflow.text.f1 import token_f1

log = logging.getLogger(__name__)


def select_examples(examples: list[QAExample], n: int | None, seed: int) -> list[QAExample]:
    if n is None or n >= len(examples):
        return examples
    idx = np.sort(np.random.default_rng(seed).choice(len(examples), size=n, replace=False))
    return [examples[i] for i in idx]


def score_outputs(
    examples: list[QAExample], texts: list[str]
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    rows = []
    for example, text in zip(examples, texts, strict=True):
        parsed = parse_feedback(text)
        ok = parsed.status == "ok"
        gold_evidence = " ".join(example.evidence)
        rows.append(
            {
                "id": example.id,
                "status": parsed.status,
                "answer": parsed.answer,
                "evidence": parsed.evidence,
                "raw": text,
                "gold_answer": example.answer,
                "answer_rouge": rouge(parsed.answer, example.answer)["rouge"] if ok else 0.0,
                "evidence_rouge": rouge(parsed.evidence, gold_evidence)["rouge"] if ok else 0.0,
                "answer_f1": token_f1(parsed.answer, example.answer) if ok else 0.0,
            }
        )
    summary = {
        "n": len(rows),
        "consistency": fmean(r["status"] != "unparsed" for r in rows) if rows else float("nan"),
        "answer_rouge": fmean(r["answer_rouge"] for r in rows) if rows else float("nan"),
        "evidence_rouge": fmean(r["evidence_rouge"] for r in rows) if rows else float("nan"),
        "answer_f1": fmean(r["answer_f1"] for r in rows) if rows else float("nan"),
        "unanswerable": sum(r["status"] == "unanswerable" for r in rows),
        "unparsed": sum(r["status"] == "unparsed" for r in rows),
    }
    return summary, rows


def evaluate(
    base: dict[str, Any],
    adapter: str | os.PathLike,
    dev_path: str | os.PathLike,
    out_json: str | os.PathLike,
    out_examples: str | os.PathLike,
    generation: dict[str, Any],
    max_input_tokens: int,
    n_examples: int | None,
    seed: int,
    cache_path: str | os.PathLike,
    threads: int | None = None,
    prompt_style: str = "isqa",
) -> dict[str, Any]:
    from isqaflow.models.cache import CallCache
    from isqaflow.models.refusals import naming_records
    from isqaflow.models.registry import load_model
    from isqaflow.models.served.model import with_adapter_server

    examples = select_examples(read_records(dev_path, QAExample), n_examples, seed)
    params = GenerationParams.from_dict(generation)
    cache = CallCache(cache_path)
    report: dict[str, Any] = {"examples": len(examples), "generation": params.as_dict()}
    rows_out = []
    variants = (("before", None), ("after", str(adapter)))
    # A served base: one server for both variants (the adapter next to its base, as the GPU plan
    # serves ISQA's LoRA feedback model), so both models are open until the end; in-process, one
    # model at a time (two copies of the weights are not needed at once).
    served = bool(base.get("serve"))
    spec = with_adapter_server(
        base, str(adapter), os.path.basename(os.path.dirname(os.path.abspath(adapter)))
    )
    opened = []
    try:
        for variant, adapter_path in variants:
            model = load_model(
                spec, cache=cache, adapter=adapter_path, name=f"feedback-{variant}", threads=threads
            )
            opened.append(model)
            requests = [
                example_request(model, ex, max_input_tokens, prompt_style)[0] for ex in examples
            ]
            with naming_records(requests, [ex.id for ex in examples]):
                outputs = model.generate(requests, params)
            summary, rows = score_outputs(examples, [o.text for o in outputs])
            report[variant] = summary
            rows_out += [{"variant": variant, **row} for row in rows]
            log.info("%s fine-tuning: %s", variant, summary)
            if not served:
                opened.pop().close()
    finally:
        for model in reversed(opened):
            model.close()
    write_jsonl(out_examples, rows_out)
    write_json(out_json, report)
    return report
