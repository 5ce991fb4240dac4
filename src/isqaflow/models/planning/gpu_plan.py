"""The GPUs of a job and how its models share them, computed at DAG build (pure: no GPU, no download).

A job holds one or more models at once (``isqa_refine``: the summarizer and the feedback
model).  Each is *served* (``serve:`` with engine vllm: one vLLM server) or *in-process*
(the hf backend: weights in the job's own process, on its first GPU).  For each model the
plan needs its weight memory -- ``gpu.parameters`` x the bytes of its dtype, or a declared
``gpu.memory_gb`` -- and, for a served model, the KV cache of ``kv_sequences`` sequences of
the stage's longest input + output (``gpu.layers``, ``gpu.kv_heads``, ``gpu.head_dim``)::

    models:
      vicuna-7b:
        gpu: {parameters: 6.74e+9, layers: 32, kv_heads: 32, head_dim: 128, context: 4096}

and the GPUs of the partition (config ``gpu_plan``)::

    gpu_plan:
      gpu_memory_gb: 80       # one GPU of the partition the GPU stages run on
      max_utilization: 0.90   # the share of each GPU all servers and in-process models may claim together
      max_gpus: 8             # GPUs one job may ask for (one node)
      server_overhead_gb: 2   # per server: CUDA context, activations, CUDA graphs
      in_process_overhead_gb: 6   # per in-process model: activations of its batches
      kv_sequences: 8         # sequences of the longest length each server keeps room for
      input_tokens: {default: 2048, rag_answers: 4096}   # a stage's longest input where its generation sets none

From that, :func:`plan_job` gives the job's GPU count and, per server, its GPUs
(``CUDA_VISIBLE_DEVICES`` within the job's allocation), ``--tensor-parallel-size``,
``--gpu-memory-utilization`` and ``--max-model-len`` (the stage's input + output where the
stage cuts its requests to ``max_input_tokens``, else the model's ``gpu.context``: a longer
request would be refused by vLLM):

* Served models with the same weights (model, revision, dtype) share **one server**; a
  LoRA adapter on one of them is served by that server (``--enable-lora``): the paper's
  Vicuna-7B summarizer and its Vicuna-7B LoRA feedback model are one server.
* A server whose weights + overhead + KV cache exceed one GPU's share gets tensor
  parallelism: the smallest power of two (dividing its KV heads) at which a GPU's slice fits.
* The rest (one-GPU servers and in-process models) are packed first-fit, largest first,
  onto as few GPUs as hold them; in-process models go to GPU 0 (where torch puts them).
* On each GPU the servers' fractions share ``max_utilization`` in proportion to their
  needs, after the in-process models' memory: vLLM's ``--gpu-memory-utilization`` is a share
  of the whole GPU, and a second instance fails at start when less than its share is free
  (the default 0.92 each makes two servers on one GPU impossible).  Fractions are rounded
  down, so per GPU they never sum past ``max_utilization``.

A job that needs more than ``max_gpus`` GPUs, or a model the plan cannot size, fails with
:class:`GPUPlanError` naming the job, its models and the memory.  GB here are 10^9 bytes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from isqaflow import grid
from isqaflow.backends import backend_of

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
DEFAULTS = {
    "gpu_memory_gb": 80.0,
    "max_utilization": 0.90,
    "max_gpus": 8,
    "server_overhead_gb": 2.0,
    "in_process_overhead_gb": 6.0,
    "kv_sequences": 8,
    "input_tokens": {"default": 2048},
}
TP_SIZES = (1, 2, 4, 8)


class GPUPlanError(ValueError):
    """A job whose models do not fit the GPUs it may ask for, or a model the plan cannot size."""


@dataclass(frozen=True)
class ModelUse:
    """One model a job holds: its config key and entry, the adapter it runs with, and the
    stage's longest input and output (tokens)."""

    role: str
    name: str
    entry: Mapping[str, Any]
    input_tokens: int
    output_tokens: int
    adapter: str | None = None
    bounded: bool = True  # the stage cuts its requests to input_tokens (max_input_tokens)

    @property
    def served(self) -> bool:
        serve = self.entry.get("serve") or {}
        return (
            backend_of(self.entry, self.name).servable
            and bool(serve)
            and serve.get("engine") == "vllm"
        )

    @property
    def local(self) -> bool:
        return backend_of(self.entry, self.name).local

    @property
    def gpus(self) -> bool:
        return backend_of(self.entry, self.name).gpus


@dataclass
class Server:
    model: str  # the hub id or path
    uses: list[str]  # roles served, e.g. ["summarizer", "feedback"]
    names: list[str]  # model config keys
    adapters: list[str]
    dtype: str
    max_model_len: int
    typical_len: int  # the longest input + output the KV reserve is sized for
    weights_gb: float
    kv_gb: float  # at tensor parallel 1
    overhead_gb: float
    tensor_parallel: int = 1
    gpus: tuple[int, ...] = ()
    gpu_memory_utilization: float = 0.0

    def need_per_gpu(self, tp: int | None = None) -> float:
        tp = tp or self.tensor_parallel
        return (self.weights_gb + self.kv_gb) / tp + self.overhead_gb

    def args(self) -> list[str]:
        """The flags of ``vllm serve`` the plan decides (checked against the vLLM fixture)."""
        return [
            "--tensor-parallel-size",
            str(self.tensor_parallel),
            "--gpu-memory-utilization",
            f"{self.gpu_memory_utilization:.3f}",
            "--max-model-len",
            str(self.max_model_len),
        ]

    def cuda_visible_devices(self, job_devices: str | None = None) -> str:
        """This server's GPUs, as ``CUDA_VISIBLE_DEVICES``: entries of the job's own list when
        it has one (SLURM sets it to the allocated devices), else their indices."""
        available = [d for d in (job_devices or "").split(",") if d.strip()]
        if available:
            return ",".join(available[i] for i in self.gpus)
        return ",".join(str(i) for i in self.gpus)

    def record(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "uses": self.uses,
            "names": self.names,
            "adapters": self.adapters,
            "dtype": self.dtype,
            "gpus": list(self.gpus),
            "tensor_parallel_size": self.tensor_parallel,
            "gpu_memory_utilization": round(self.gpu_memory_utilization, 3),
            "max_model_len": self.max_model_len,
            "weights_gb": round(self.weights_gb, 1),
            "kv_reserve_gb": round(self.kv_gb, 1),
        }


@dataclass
class InProcess:
    name: str
    role: str
    memory_gb: float
    gpu: int = 0

    def record(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "role": self.role,
            "gpu": self.gpu,
            "memory_gb": round(self.memory_gb, 1),
        }


@dataclass
class JobPlan:
    job: str
    gpus: int
    gpu_memory_gb: float
    servers: list[Server] = field(default_factory=list)
    in_process: list[InProcess] = field(default_factory=list)

    def per_gpu_utilization(self) -> list[float]:
        """The share of each GPU that the plan gives away (servers' fractions + in-process memory)."""
        shares = [0.0] * self.gpus
        for server in self.servers:
            for gpu in server.gpus:
                shares[gpu] += server.gpu_memory_utilization
        for model in self.in_process:
            shares[model.gpu] += model.memory_gb / self.gpu_memory_gb
        return shares

    def server_for(self, name: str) -> Server | None:
        return next((s for s in self.servers if name in s.names), None)

    def record(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "gpus": self.gpus,
            "gpu_memory_gb": self.gpu_memory_gb,
            "servers": [s.record() for s in self.servers],
            "in_process": [m.record() for m in self.in_process],
        }

    def row(self) -> str:
        """One line of the plan table."""
        parts = [
            f"{s.model.split('/')[-1]}{'+' + '+'.join(s.adapters) if s.adapters else ''} "
            f"[{','.join(s.uses)}] gpus={','.join(map(str, s.gpus))} tp={s.tensor_parallel} "
            f"util={s.gpu_memory_utilization:.3f} len={s.max_model_len}"
            for s in self.servers
        ]
        parts += [
            f"{m.name} [{m.role}] in-process gpu={m.gpu} {m.memory_gb:.0f} GB"
            for m in self.in_process
        ]
        return f"{self.job}\t{self.gpus}\t" + "; ".join(parts)


def settings_from_config(config: Mapping[str, Any]) -> dict[str, Any]:
    values = {**DEFAULTS, **(config.get("gpu_plan") or {})}
    values["input_tokens"] = {**DEFAULTS["input_tokens"], **(values.get("input_tokens") or {})}
    return values


def resolved_dtype(entry: Mapping[str, Any]) -> str:
    """The dtype a GPU loads: the entry's own, or for auto bf16 (the hf backend and fine-tuning take
    auto as bf16 on a GPU; a served model is passed the same explicitly, see models.capabilities)."""
    dtype = entry.get("dtype", "auto")
    return "bfloat16" if dtype == "auto" else dtype


def weights_gb(use: ModelUse) -> float:
    gpu = use.entry.get("gpu") or {}
    if "memory_gb" in gpu:
        return float(gpu["memory_gb"])
    if "parameters" not in gpu:
        raise GPUPlanError(
            f"model {use.name}: the GPU plan needs models.{use.name}.gpu.parameters (the parameter "
            "count) or gpu.memory_gb (its weight memory in GB)"
        )
    return float(gpu["parameters"]) * DTYPE_BYTES[resolved_dtype(use.entry)] / 1e9


def kv_gb_per_token(use: ModelUse) -> float:
    gpu = use.entry.get("gpu") or {}
    if "memory_gb" in gpu and not {"layers", "kv_heads", "head_dim"} <= set(gpu):
        return 0.0  # declared as a whole
    missing = [key for key in ("layers", "kv_heads", "head_dim") if key not in gpu]
    if missing:
        raise GPUPlanError(
            f"model {use.name}: a served model's KV cache needs models.{use.name}.gpu."
            f"{', gpu.'.join(missing)}"
        )
    return (
        2
        * gpu["layers"]
        * gpu["kv_heads"]
        * gpu["head_dim"]
        * DTYPE_BYTES[resolved_dtype(use.entry)]
        / 1e9
    )


def _servers(job: str, uses: Sequence[ModelUse], settings: Mapping[str, Any]) -> list[Server]:
    servers: dict[tuple, Server] = {}
    for use in uses:
        if not use.served:
            continue
        key = (use.entry["model"], use.entry.get("revision"), resolved_dtype(use.entry))
        context = int((use.entry.get("gpu") or {}).get("context", 0) or 0)
        typical = use.input_tokens + use.output_tokens
        if context:
            typical = min(typical, context)
        # a stage that cuts its requests (max_input_tokens) never sends more than input + output;
        # one that does not may send up to the model's context, so the server takes that length
        length = typical if use.bounded or not context else context
        server = servers.get(key)
        if server is None:
            server = servers[key] = Server(
                model=use.entry["model"],
                uses=[],
                names=[],
                adapters=[],
                dtype=resolved_dtype(use.entry),
                max_model_len=0,
                typical_len=0,
                weights_gb=weights_gb(use),
                kv_gb=0.0,
                overhead_gb=float(settings["server_overhead_gb"]),
            )
        server.uses.append(use.role)
        if use.name not in server.names:
            server.names.append(use.name)
        if use.adapter and use.adapter not in server.adapters:
            server.adapters.append(use.adapter)
        server.max_model_len = max(server.max_model_len, length)
        server.typical_len = max(server.typical_len, typical)
        # room for kv_sequences sequences of the typical length, and at least one of the longest
        server.kv_gb = kv_gb_per_token(use) * max(
            server.typical_len * int(settings["kv_sequences"]), server.max_model_len
        )
    return list(servers.values())


def plan_job(job: str, uses: Sequence[ModelUse], config: Mapping[str, Any]) -> JobPlan:
    """The plan of one job (see the module docstring); ``config`` is the workflow config."""
    settings = settings_from_config(config)
    memory = float(settings["gpu_memory_gb"])
    share = float(settings["max_utilization"])
    cap = memory * share
    local = [u for u in uses if u.gpus]
    if not local:
        return JobPlan(job, 0, memory)
    servers = _servers(job, uses, settings)
    in_process = [
        InProcess(u.name, u.role, weights_gb(u) + float(settings["in_process_overhead_gb"]))
        for u in local
        if not u.served
    ]

    def describe() -> str:
        return "; ".join(
            [
                f"{s.model} ({'+'.join(s.names)}): {s.weights_gb:.1f} GB weights + {s.kv_gb:.1f} GB KV "
                f"for {settings['kv_sequences']} x {s.typical_len} tokens + {s.overhead_gb:.0f} GB"
                for s in servers
            ]
            + [f"{m.name} in-process: {m.memory_gb:.1f} GB" for m in in_process]
        )

    for server in servers:
        sizes = next(u for u in uses if u.name == server.names[0]).entry.get("gpu") or {}
        heads = int(sizes.get("kv_heads") or 8)  # tensor parallelism splits the KV heads
        fits = [tp for tp in TP_SIZES if heads % tp == 0 and server.need_per_gpu(tp) <= cap]
        if not fits:
            raise GPUPlanError(
                f"job {job}: model {'+'.join(server.names)} does not fit {max(TP_SIZES)} GPUs of "
                f"{memory:g} GB at {share:g} utilization ({describe()})"
            )
        server.tensor_parallel = fits[0]
    for model in in_process:
        if model.memory_gb > cap:
            raise GPUPlanError(
                f"job {job}: in-process model {model.name} needs {model.memory_gb:.1f} GB, more than "
                f"one GPU of {memory:g} GB at {share:g} utilization ({describe()})"
            )
    # in-process models on GPU 0, then tensor-parallel servers on GPUs of their own, then first fit
    loads: list[float] = []
    if in_process:
        loads.append(sum(m.memory_gb for m in in_process))
        if loads[0] > cap:
            raise GPUPlanError(
                f"job {job}: the in-process models need {loads[0]:.1f} GB on one GPU, more than "
                f"{memory:g} GB at {share:g} utilization ({describe()})"
            )
    for server in sorted(servers, key=lambda s: (-s.tensor_parallel, -s.need_per_gpu())):
        if server.tensor_parallel > 1:
            start = len(loads)
            loads += [server.need_per_gpu()] * server.tensor_parallel
            server.gpus = tuple(range(start, start + server.tensor_parallel))
            continue
        need = server.need_per_gpu()
        for gpu, load in enumerate(loads):
            if load + need <= cap and not any(
                gpu in s.gpus and s.tensor_parallel > 1 for s in servers
            ):
                loads[gpu] += need
                server.gpus = (gpu,)
                break
        else:
            loads.append(need)
            server.gpus = (len(loads) - 1,)
    gpus = len(loads)
    if gpus > int(settings["max_gpus"]):
        raise GPUPlanError(
            f"job {job}: its models need {gpus} GPUs of {memory:g} GB, more than max_gpus "
            f"{settings['max_gpus']} ({describe()})"
        )
    # each GPU's share, after the in-process models, split in proportion to the servers' needs
    for gpu in range(gpus):
        on_gpu = [s for s in servers if gpu in s.gpus]
        if not on_gpu:
            continue
        fixed = sum(m.memory_gb for m in in_process if m.gpu == gpu) / memory
        left = share - fixed
        total = sum(s.need_per_gpu() for s in on_gpu)
        for server in on_gpu:
            fraction = math.floor(left * server.need_per_gpu() / total * 1000) / 1000
            previous = (
                server.gpu_memory_utilization
            )  # a tensor-parallel server: the same on each of its GPUs
            server.gpu_memory_utilization = min(previous, fraction) if previous else fraction
    return JobPlan(job, gpus, memory, servers, in_process)


# ----------------------------------------------------------------------------- the grid's jobs


def _tokens(
    config: Mapping[str, Any], stage: str, generation: Mapping[str, Any] | None
) -> tuple[int, int]:
    settings = settings_from_config(config)
    generation = generation or {}
    inputs = generation.get("max_input_tokens") or settings["input_tokens"].get(
        stage, settings["input_tokens"]["default"]
    )
    return int(inputs), int(generation.get("max_new_tokens", 128))


def _use(config: Mapping[str, Any], stage: str, model: grid.ModelRef) -> ModelUse:
    generation = grid.setting(config, model.generation)
    inputs, outputs = _tokens(config, stage, generation)
    bounded = bool((generation or {}).get("max_input_tokens"))
    entry = config["models"][model.name]
    return ModelUse(model.role, model.name, entry, inputs, outputs, model.adapter, bounded)


def job_uses(config: Mapping[str, Any], job: grid.Job) -> list[ModelUse]:
    """The models one job of the grid (:func:`isqaflow.grid.jobs`) holds at once (as its script
    loads them)."""
    return [_use(config, job.rule, model) for model in job.models]


# rule evaluate_feedback's prompt budget where finetune.<adapter>.evaluation sets none
EVALUATION_INPUT_TOKENS = 512


def evaluation_uses(config: Mapping[str, Any], adapter: str) -> list[ModelUse]:
    """The models rule evaluate_feedback holds at once (isqaflow.finetune.evaluate): the adapter's
    base model before and after fine-tuning -- the base alone and with the adapter, one server
    where the base is served (its adapter beside it) -- at the evaluation's prompt budget."""
    entry = config["finetune"][adapter]
    evaluation = entry.get("evaluation") or {}
    inputs = int(evaluation.get("max_input_tokens", EVALUATION_INPUT_TOKENS))
    outputs = int((evaluation.get("generation") or {}).get("max_new_tokens", 128))
    base = config["models"][entry["base"]]
    # not bounded: the gold paragraphs always go in (finetune.formats.example_request), so a prompt
    # may pass the budget; the server keeps the model's whole context (gpu.context), as before
    return [
        ModelUse("base", entry["base"], base, inputs, outputs, bounded=False),
        ModelUse("feedback", entry["base"], base, inputs, outputs, adapter, bounded=False),
    ]


def plan_evaluation(config: Mapping[str, Any], adapter: str) -> JobPlan:
    """The GPU plan of rule evaluate_feedback's job for ``adapter`` (:func:`evaluation_uses`)."""
    return plan_job(f"evaluate_feedback {adapter}", evaluation_uses(config, adapter), config)


def plan_evaluations(config: Mapping[str, Any]) -> dict[str, JobPlan]:
    """The plan of every evaluate_feedback job (one per fine-tuned adapter with an evaluation)."""
    return {
        f"evaluate_feedback {adapter}": plan_evaluation(config, adapter)
        for adapter, entry in (config.get("finetune") or {}).items()
        if entry.get("evaluation")
    }


def grid_jobs(config: Mapping[str, Any]) -> dict[str, list[ModelUse]]:
    """The models of every job of the model stages (:func:`isqaflow.grid.jobs`: ISQA summaries and
    refinement, DRFR responses and judges, RAG answers, the arena judges), keyed by the job's label
    (``rule`` and its wildcards as in its log path)."""
    return {job.label: job_uses(config, job) for job in grid.jobs(config)}


def plan_grid(config: Mapping[str, Any]) -> dict[str, JobPlan]:
    """The plan of every job of the grid (:func:`grid_jobs`); the first job that cannot fit raises."""
    return {job: plan_job(job, uses, config) for job, uses in grid_jobs(config).items()}


def plan_table(plans: Mapping[str, JobPlan]) -> str:
    """The plans as a tab-separated table (job, GPUs, servers and in-process models)."""
    lines = ["job\tgpus\tplan"] + [plan.row() for plan in plans.values() if plan.gpus]
    return "\n".join(lines) + "\n"
