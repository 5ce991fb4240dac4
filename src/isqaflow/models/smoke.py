"""The GPU smoke job (rule ``gpu_smoke``): every GPU job of a run waits for it.

What it starts is planned at DAG build (:mod:`isqaflow.models.planning.smoke`); here, in the job:

1. **driver/CUDA** -- torch's CUDA build, the devices it sees and the driver (``nvidia-smi``); a
   job given GPUs whose in-process model would run on CUDA and that sees none fails here;
2. per engine, **server start** -- the smallest served model, started by the project's own
   serving code (:class:`isqaflow.models.served.model.ServedModel`) with the model's ``serve:``
   command and the GPU plan's flags, timed to ready;
3. on it: one **greedy** request and one **2-beam** request (vLLM: ``use_beam_search``, ``n``),
   timed (tokens/s of one sequence); one **prompt_logprobs** request (vLLM's log-prob judges'
   path: a candidate's log-probability must come back finite); one request to a **LoRA
   adapter** served beside the base model, where the config serves one (a test adapter with
   the run's LoRA rank and target modules, made here from the model's config.json: zero-init
   B as peft's, so it needs no training and no weights);
4. one **in-process** model (the hf backend) loaded on its device, with one short request.

Every step runs even when an earlier request failed (a failed server start skips its own
requests), and the job then fails with one message naming each step that broke; otherwise it
writes the record (:func:`run_smoke`), timings included.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from isqaflow import runtime
from isqaflow.models.base import GenerationParams
from isqaflow.models.registry import load_model
from isqaflow.models.served.process import ServerStartError
from isqaflow.models.served.settings import with_adapter_server

log = logging.getLogger(__name__)

# Short, fixed requests: the smoke job must stay cheap (it runs before every GPU job).
STORY = [{"role": "user", "content": "Write a short story about a fisherman and the sea."}]
JUDGE = [
    {"role": "system", "content": "Answer YES or NO."},
    {"role": "user", "content": "Is the sea made of water?"},
]
CANDIDATES = ["YES", "NO"]
NEW_TOKENS = 32
IN_PROCESS_TOKENS = 4


class SmokeFailed(RuntimeError):
    """One or more steps of the smoke job broke; the message names each."""


def cuda_report() -> dict[str, Any]:
    """torch's CUDA build, whether it sees a device, the devices and the driver."""
    import torch

    report: dict[str, Any] = {
        "torch": torch.__version__,
        "cuda_build": torch.version.cuda,
        "cuda_available": bool(torch.cuda.is_available()),
        "devices": [],
        "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "driver": None,
    }
    if report["cuda_available"]:
        report["devices"] = [
            torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())
        ]
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            done = subprocess.run(
                [smi, "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=60,
            )
            report["driver"] = (
                done.stdout.strip().splitlines()[0]
                if done.returncode == 0 and done.stdout.strip()
                else f"nvidia-smi failed (status {done.returncode}): {done.stderr.strip()[-300:]}"
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            report["driver"] = f"nvidia-smi failed: {err}"
    return report


def check_cuda(report: Mapping[str, Any], job_gpus: int, device: str) -> str | None:
    """The driver/CUDA problem, or None: a job given GPUs whose in-process models would run on
    CUDA (``device`` not ``cpu``) and that sees no device."""
    if job_gpus <= 0 or device == "cpu" or report["cuda_available"]:
        return None
    return (
        f"driver/CUDA: the job was given {job_gpus} GPU(s) (CUDA_VISIBLE_DEVICES="
        f"{report['CUDA_VISIBLE_DEVICES']!r}), but torch {report['torch']} (CUDA build "
        f"{report['cuda_build']}) sees no CUDA device; driver: {report['driver'] or 'no nvidia-smi'}"
    )


def make_test_adapter(
    model: str,
    out: Path,
    *,
    r: int,
    alpha: int,
    target_modules: Sequence[str],
    revision: str | None = None,
) -> Path:
    """A LoRA adapter in peft's layout for ``model`` (its config.json only: the network is built
    on the meta device), A random and B zero as peft initialises them: served, it answers as the
    base model does, which is all the smoke job asks of it."""
    import torch
    from peft import LoraConfig, get_peft_model, get_peft_model_state_dict
    from safetensors.torch import save_file
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(model, revision=revision)
    with torch.device("meta"):
        net = AutoModelForCausalLM.from_config(config)
    lora = LoraConfig(
        r=r, lora_alpha=alpha, target_modules=list(target_modules), task_type="CAUSAL_LM"
    )
    peft_net = get_peft_model(net, lora)
    generator = torch.Generator().manual_seed(0)
    tensors = {
        key: (
            torch.zeros(value.shape)
            if "lora_B" in key
            else torch.randn(value.shape, generator=generator) / math.sqrt(value.shape[-1])
        ).contiguous()
        for key, value in get_peft_model_state_dict(peft_net).items()
    }
    out.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(out / "adapter_model.safetensors"))
    peft_net.peft_config["default"].base_model_name_or_path = model
    peft_net.peft_config["default"].save_pretrained(str(out))
    return out


def _timed(step: Callable[[], Any]) -> tuple[Any, float]:
    start = time.monotonic()
    value = step()
    return value, round(time.monotonic() - start, 3)


def _decode(model: Any, params: GenerationParams) -> dict[str, Any]:
    (generation,), seconds = _timed(lambda: model.generate([STORY], params))
    tokens = generation.n_new_tokens
    return {
        "new_tokens": tokens,
        "seconds": seconds,
        "tokens_per_s": round(tokens / seconds, 2) if seconds > 0 else None,
        "finish_reason": generation.finish_reason,
        "text_chars": len(generation.text),
    }


def _score(model: Any) -> dict[str, Any]:
    (scores,), seconds = _timed(lambda: model.score_batch([(JUDGE, CANDIDATES)]))
    if len(scores) != len(CANDIDATES) or not all(
        isinstance(s, float) and math.isfinite(s) and s <= 0 for s in scores
    ):
        raise ValueError(
            f"expected a finite log-probability <= 0 per candidate {CANDIDATES}, got {scores}"
        )
    return {"candidates": CANDIDATES, "logprobs": [round(s, 4) for s in scores], "seconds": seconds}


class _Steps:
    """Each step's result or the problem it met, in order."""

    def __init__(self) -> None:
        self.failures: list[str] = []

    def run(self, what: str, step: Callable[[], Any]) -> Any:
        try:
            return step()
        except Exception as err:  # noqa: BLE001 -- every problem is reported, then the job fails
            message = f"{what}: {type(err).__name__}: {str(err)[:2000]}"
            log.error("smoke step failed: %s", message)
            self.failures.append(message)
            return {"error": message}


def smoke_server(server: Mapping[str, Any], steps: _Steps, workdir: Path, threads: int | None):
    """Start one engine's smallest served model and send it the smoke requests."""
    name, engine, spec = server["name"], server["engine"], dict(server["spec"])
    where = f"{engine} server of {name}"
    record: dict[str, Any] = {"engine": engine, "model": name, "hub_id": spec["model"]}
    lora = server.get("adapter")
    adapter_path = None
    if lora is not None:
        made = steps.run(
            f"{where}: making the test LoRA adapter ({lora['name']})",
            lambda: make_test_adapter(
                spec["model"],
                workdir / "adapter" / name,
                r=int(lora["r"]),
                alpha=int(lora["alpha"]),
                target_modules=lora["target_modules"],
                revision=spec.get("revision"),
            ),
        )
        if isinstance(made, Path):
            adapter_path = str(made)
            spec = with_adapter_server(spec, adapter_path, lora["name"])
    if engine == "vllm":
        # the log-prob judges' path on vLLM (the base model only; the adapter asks the same server)
        spec["logprobs"] = "prompt_logprobs"
    started = time.monotonic()
    try:
        base = load_model(spec, name=name, threads=threads)
    except ServerStartError as err:
        steps.failures.append(f"{where}: server start: {err}")
        record["server_start"] = {"error": str(err)[:4000]}
        return record
    except Exception as err:  # noqa: BLE001 -- a refused configuration, before the server starts
        steps.failures.append(f"{where}: server start: {type(err).__name__}: {err}")
        record["server_start"] = {"error": str(err)[:4000]}
        return record
    models = [base]
    try:
        record["startup_s"] = round(time.monotonic() - started, 3)
        record["command"] = list(base.server.argv)
        record["gpu_plan_args"] = list((spec.get("server_plan") or {}).get("args") or [])
        record["greedy"] = steps.run(
            f"{where}: greedy request (max_tokens={NEW_TOKENS})",
            lambda: _decode(base, GenerationParams(max_new_tokens=NEW_TOKENS)),
        )
        record["beams_2"] = steps.run(
            f"{where}: 2-beam request (use_beam_search, n=2)"
            if engine == "vllm"
            else f"{where}: 2-beam request",
            lambda: _decode(base, GenerationParams(max_new_tokens=NEW_TOKENS, num_beams=2)),
        )
        if engine == "vllm":
            record["prompt_logprobs"] = steps.run(
                f"{where}: prompt_logprobs request (prompt_logprobs=0, token-id prompt)",
                lambda: _score(base),
            )
        else:
            record["prompt_logprobs"] = {"not_asked": f"prompt_logprobs is vLLM's; engine {engine}"}
        if adapter_path is not None:
            adapted = steps.run(
                f"{where}: the LoRA adapter's model ({lora['name']}) on the same server",
                lambda: load_model(spec, name=f"{name}+{lora['name']}", adapter=adapter_path),
            )
            if not isinstance(adapted, dict):
                models.append(adapted)
                record["lora"] = steps.run(
                    f"{where}: request to the LoRA adapter (model={lora['name']!r})",
                    lambda: {
                        "adapter": lora["name"],
                        **_decode(adapted, GenerationParams(max_new_tokens=8)),
                    },
                )
            else:
                record["lora"] = adapted
        else:
            record["lora"] = {"not_asked": "the config serves no LoRA adapter on this engine"}
    finally:
        for model in reversed(models):  # the last close stops the shared server
            model.close()
    return record


def smoke_in_process(model: Mapping[str, Any], steps: _Steps, threads: int | None):
    name, spec = model["name"], dict(model["spec"])
    where = f"in-process model {name}"
    loaded = steps.run(
        f"{where}: loading on its device",
        lambda: _timed(lambda: load_model(spec, name=name, threads=threads)),
    )
    if isinstance(loaded, dict):
        return {"model": name, **loaded}
    net, seconds = loaded
    try:
        record = {"model": name, "device": str(getattr(net, "device", "?")), "load_s": seconds}
        record["request"] = steps.run(
            f"{where}: one request (max_new_tokens={IN_PROCESS_TOKENS})",
            lambda: _decode(net, GenerationParams(max_new_tokens=IN_PROCESS_TOKENS)),
        )
        return record
    finally:
        net.close()


def run_smoke(
    servers: Sequence[Mapping[str, Any]],
    in_process: Mapping[str, Any] | None,
    out: str | Path,
    *,
    threads: int | None = None,
) -> dict[str, Any]:
    """Run every step (module docstring); write the record to ``out`` or raise :class:`SmokeFailed`.

    ``servers``: per engine ``{"engine", "name", "spec"}`` (the model's spec with the GPU plan's
    ``server_plan``, as rules/common.smk passes it) and ``adapter`` (None, or ``{"name", "r",
    "alpha", "target_modules"}``); ``in_process``: ``{"name", "spec"}`` or None."""
    steps = _Steps()
    job = runtime.current_job()
    job_gpus = job.gpus if job is not None else 0
    device = str((in_process or {}).get("spec", {}).get("device", "auto"))
    record: dict[str, Any] = {"job_gpus": job_gpus}
    record["cuda"] = steps.run("driver/CUDA: reading torch's CUDA state", cuda_report)
    if "error" not in record["cuda"]:
        problem = check_cuda(record["cuda"], job_gpus, device)
        if problem:
            steps.failures.append(problem)
    with tempfile.TemporaryDirectory(prefix="isqaflow-gpu-smoke-") as tmp:
        record["servers"] = [smoke_server(s, steps, Path(tmp), threads) for s in servers]
    record["in_process"] = smoke_in_process(in_process, steps, threads) if in_process else None
    record["failures"] = steps.failures
    log.info("GPU smoke record: %s", json.dumps(record, indent=1))
    if steps.failures:
        raise SmokeFailed(
            "the GPU smoke job failed; no other GPU job is started:\n  "
            + "\n  ".join(steps.failures)
        )
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return record
