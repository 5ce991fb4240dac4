"""LoRA fine-tuning of the feedback model on QA-with-evidence examples (ISQA, Appendix C).

Each HotpotQA example becomes ISQA's feedback prompt (question + context) with the
target ``1. Answer: ... / 2. Evidence: ...`` (the supporting-fact sentences).  The
loss covers the target tokens only: prompt and padding are masked with -100.  A
configurable share of examples is made unanswerable by removing the paragraphs that
hold the evidence, with the target ``Unanswerable`` (0 by default: the paper trains
on HotpotQA as is).

Defaults are the paper's (Table 6): r 8, alpha 16, learning rate 3e-4, 10 epochs,
max input 512 tokens.  Training is a plain PyTorch loop (AdamW, linear warm-up and
decay) that checkpoints the adapter, optimizer and scheduler every
``checkpoint_every`` steps; a killed job resumes from its last checkpoint with the
same data order, so no finished step is repeated.
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import math
import os
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from isqaflow.data.schema import QAExample
from isqaflow.finetune.formats import example_request, format_target
from isqaflow.io import apply_umask, atomic_open, read_records
from isqaflow.settings import from_mapping

log = logging.getLogger(__name__)

LOG_FIELDS = ("step", "epoch", "loss", "learning_rate", "target_tokens", "elapsed_s")


@dataclass(frozen=True)
class LoraSettings:
    r: int = 8
    alpha: int = 16
    dropout: float = 0.05
    target_modules: tuple[str, ...] = ("q_proj", "v_proj")
    learning_rate: float = 3e-4
    epochs: int = 10
    max_steps: int | None = None  # a cap on optimizer steps (the embedded default uses one)
    batch_size: int = 4
    grad_accum: int = 1
    warmup_ratio: float = 0.03
    weight_decay: float = 0.0
    max_input_tokens: int = 512
    max_target_tokens: int = 100
    max_train_examples: int | None = None
    unanswerable_fraction: float = 0.0
    checkpoint_every: int = 50
    seed: int = 13
    prompt_style: str = "isqa"

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> LoraSettings:
        values = dict(values)
        if "target_modules" in values:
            values["target_modules"] = tuple(values["target_modules"])
        return from_mapping(cls, values, "fine-tuning")


def training_items(
    model, examples: list[QAExample], settings: LoraSettings
) -> list[dict[str, Any]]:
    """Tokenized (input_ids, labels) for each example, prompt tokens masked out of the loss."""
    rng = np.random.default_rng(settings.seed)
    eos = model.tokenizer.eos_token_id
    items, cut_total = [], 0
    for example in examples:
        unanswerable = bool(rng.random() < settings.unanswerable_fraction)
        request, cut = example_request(
            model, example, settings.max_input_tokens, settings.prompt_style, drop_gold=unanswerable
        )
        cut_total += cut
        target = format_target(example.answer, example.evidence, unanswerable=unanswerable)
        prompt_ids = model.encode_request(request)
        if model.is_seq2seq:
            target_ids = model.tokenizer(target)["input_ids"][: settings.max_target_tokens]
            items.append({"input_ids": prompt_ids, "labels": target_ids, "id": example.id})
            continue
        full_ids = prompt_ids + _assistant_tokens(model, request, target)
        target_len = min(len(full_ids) - len(prompt_ids), settings.max_target_tokens)
        full_ids = full_ids[: len(prompt_ids) + target_len]
        if eos not in full_ids[len(prompt_ids) :] and target_len < settings.max_target_tokens:
            full_ids.append(eos)  # the template did not end the turn: end it
        labels = [-100] * len(prompt_ids) + full_ids[len(prompt_ids) :]
        items.append({"input_ids": full_ids, "labels": labels, "id": example.id})
    if cut_total:
        log.warning(
            "cut %d context tokens in all to fit max_input_tokens=%d",
            cut_total,
            settings.max_input_tokens,
        )
    return items


def _assistant_tokens(model, request: list[dict[str, str]], target: str) -> list[int]:
    """The tokens of the assistant's reply ``target`` after ``request``, as the chat template writes them."""
    prompt_ids = model.encode_request(request)
    if model.has_chat_template:
        text = model.tokenizer.apply_chat_template(
            [*request, {"role": "assistant", "content": target}], tokenize=False
        )
        full = model.tokenizer(text, add_special_tokens=False)["input_ids"]
        if full[: len(prompt_ids)] == prompt_ids:
            return full[len(prompt_ids) :]
    return model.tokenizer(target, add_special_tokens=False)["input_ids"] + [
        model.tokenizer.eos_token_id
    ]


def _collate(batch: list[dict[str, Any]], pad_id: int, seq2seq: bool):
    import torch

    width = max(len(b["input_ids"]) for b in batch)
    input_ids = [b["input_ids"] + [pad_id] * (width - len(b["input_ids"])) for b in batch]
    mask = [[1] * len(b["input_ids"]) + [0] * (width - len(b["input_ids"])) for b in batch]
    lwidth = max(len(b["labels"]) for b in batch)
    labels = [
        b["labels"] + [-100] * ((lwidth if seq2seq else width) - len(b["labels"])) for b in batch
    ]
    return {
        "input_ids": torch.tensor(input_ids),
        "attention_mask": torch.tensor(mask),
        "labels": torch.tensor(labels),
    }


def _fingerprint(
    settings: LoraSettings, base_identity: dict[str, Any], items: list[dict[str, Any]]
) -> str:
    digest = hashlib.sha256(
        json.dumps([asdict(settings), base_identity], sort_keys=True, default=str).encode()
    )
    for item in items:
        digest.update(json.dumps(item["input_ids"]).encode())
        digest.update(json.dumps(item["labels"]).encode())
    return digest.hexdigest()


def canonical_adapter_config(path: Path) -> None:
    """Sort the set-valued entries of peft's adapter_config.json in place.

    peft keeps ``target_modules`` as a set and writes it in the set's iteration order,
    which follows the process's string-hash seed: bitwise-equal trainings would write
    different files, so the adapter's fingerprint -- part of every cached call's key --
    and with it the call caches of the adapter's users would differ from run to run."""
    config = json.loads(path.read_text())
    for key in ("target_modules", "modules_to_save"):
        if isinstance(config.get(key), list):
            config[key] = sorted(config[key], key=str)
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def train(
    base: dict[str, Any],
    train_path: str | os.PathLike,
    adapter_dir: str | os.PathLike,
    log_path: str | os.PathLike,
    settings: LoraSettings,
    checkpoint_dir: str | os.PathLike,
    threads: int | None = None,
) -> dict[str, Any]:
    """Fine-tune ``base`` (a model config entry) with LoRA; write the adapter and the loss log."""
    import datasets
    import torch
    from peft import (
        LoraConfig,
        TaskType,
        get_peft_model,
        get_peft_model_state_dict,
        set_peft_model_state_dict,
    )
    from transformers import get_linear_schedule_with_warmup

    from isqaflow.models.registry import build_model

    torch.manual_seed(settings.seed)
    model = build_model(base, name="feedback-base", threads=threads)
    examples = read_records(train_path, QAExample)
    if settings.max_train_examples is not None:
        examples = examples[: settings.max_train_examples]
    if not examples:
        raise ValueError(f"{train_path}: no training examples")
    items = training_items(model, examples, settings)
    # datasets holds the tokenized training data (and its fingerprint) as the hub's tools expect
    dataset = datasets.Dataset.from_list(items)
    fingerprint = _fingerprint(settings, model.identity(), items)
    n_tokens = sum(sum(1 for t in labels if t != -100) for labels in dataset["labels"])
    log.info("%d training examples, %d target tokens", len(dataset), n_tokens)

    task = TaskType.SEQ_2_SEQ_LM if model.is_seq2seq else TaskType.CAUSAL_LM
    config = LoraConfig(
        r=settings.r,
        lora_alpha=settings.alpha,
        lora_dropout=settings.dropout,
        target_modules=list(settings.target_modules),
        task_type=task,
    )
    net = get_peft_model(model.net, config)
    net.train()
    trainable = [p for p in net.parameters() if p.requires_grad]
    log.info(
        "trainable parameters: %d of %d",
        sum(p.numel() for p in trainable),
        sum(p.numel() for p in net.parameters()),
    )
    optimizer = torch.optim.AdamW(
        trainable, lr=settings.learning_rate, weight_decay=settings.weight_decay
    )
    per_epoch = math.ceil(len(dataset) / (settings.batch_size * settings.grad_accum))
    total_steps = settings.epochs * per_epoch
    if settings.max_steps is not None:
        total_steps = min(total_steps, settings.max_steps)
    scheduler = get_linear_schedule_with_warmup(
        optimizer, int(settings.warmup_ratio * total_steps), total_steps
    )

    checkpoint_dir = Path(checkpoint_dir)
    state_file = checkpoint_dir / "state.pt"
    step, micro, rows = 0, 0, []
    if state_file.exists():
        state = torch.load(state_file, weights_only=False)
        if state.get("fingerprint") == fingerprint:
            set_peft_model_state_dict(net, state["adapter"])
            optimizer.load_state_dict(state["optimizer"])
            scheduler.load_state_dict(state["scheduler"])
            step, micro, rows = state["step"], state["micro"], state["rows"]
            torch.set_rng_state(state["rng"])  # LoRA dropout continues with the same masks
            if state.get("cuda_rng") is not None and torch.cuda.is_available():
                torch.cuda.set_rng_state_all(state["cuda_rng"])
            log.info("resumed from checkpoint at step %d/%d", step, total_steps)
        else:
            log.info("ignoring a checkpoint made with other settings or data")

    def save_checkpoint() -> None:
        checkpoint_dir.mkdir(parents=True, exist_ok=True)
        tmp = state_file.with_name("state.pt.tmp")
        torch.save(
            {
                "fingerprint": fingerprint,
                "adapter": get_peft_model_state_dict(net),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "step": step,
                "micro": micro,
                "rows": rows,
                "rng": torch.get_rng_state(),
                "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
            },
            tmp,
        )
        os.replace(tmp, state_file)

    device = model.device
    started = time.monotonic() - (rows[-1]["elapsed_s"] if rows else 0.0)
    pad = model.tokenizer.pad_token_id
    resumed_micro = micro
    done = step >= total_steps
    for epoch in range(settings.epochs):
        if done:
            break
        order = np.random.default_rng(settings.seed + epoch).permutation(len(dataset))
        batches = [
            order[i : i + settings.batch_size] for i in range(0, len(order), settings.batch_size)
        ]
        for b, idx in enumerate(batches):
            if epoch * len(batches) + b < resumed_micro:
                continue  # consumed before the checkpoint we resumed from
            batch = _collate([dataset[int(i)] for i in idx], pad, model.is_seq2seq)
            batch = {k: v.to(device) for k, v in batch.items()}
            loss = net(**batch).loss / settings.grad_accum
            loss.backward()
            micro += 1
            if (b + 1) % settings.grad_accum and b != len(batches) - 1:
                continue
            torch.nn.utils.clip_grad_norm_(trainable, 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            rows.append(
                {
                    "step": step,
                    "epoch": epoch + (b + 1) / len(batches),
                    "loss": float(loss) * settings.grad_accum,
                    "learning_rate": scheduler.get_last_lr()[0],
                    "target_tokens": int((batch["labels"] != -100).sum()),
                    "elapsed_s": round(time.monotonic() - started, 3),
                }
            )
            log.info(
                "step %d/%d epoch %.2f loss %.4f lr %.2e (%.1fs/step)",
                step,
                total_steps,
                rows[-1]["epoch"],
                rows[-1]["loss"],
                rows[-1]["learning_rate"],
                rows[-1]["elapsed_s"] / step,
            )
            if step % settings.checkpoint_every == 0 and step < total_steps:
                save_checkpoint()
            if step >= total_steps:
                done = True
                break

    adapter_dir = Path(adapter_dir)
    tmp_dir = adapter_dir.with_name(adapter_dir.name + ".partial")
    shutil.rmtree(tmp_dir, ignore_errors=True)
    net.save_pretrained(tmp_dir)
    canonical_adapter_config(tmp_dir / "adapter_config.json")
    (tmp_dir / "training_settings.json").write_text(
        json.dumps(asdict(settings), indent=2, default=str)
    )
    apply_umask(tmp_dir)  # safetensors writes its files 0600
    if adapter_dir.exists():
        shutil.rmtree(adapter_dir)
    os.replace(tmp_dir, adapter_dir)
    with atomic_open(log_path) as handle:
        writer = csv.DictWriter(handle, fieldnames=LOG_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    shutil.rmtree(checkpoint_dir, ignore_errors=True)
    summary = {
        "steps": step,
        "examples": len(dataset),
        "first_loss": rows[0]["loss"] if rows else None,
        "last_loss": rows[-1]["loss"] if rows else None,
        "seconds": rows[-1]["elapsed_s"] if rows else 0.0,
    }
    log.info("fine-tuning done: %s", summary)
    return summary
