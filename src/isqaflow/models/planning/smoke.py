"""What the GPU smoke job (rule ``gpu_smoke``) starts, computed at DAG build from the config (pure).

Every GPU job of a run waits for the smoke job, so a broken driver, a CUDA mismatch, a server
that cannot start or a request field the engine refuses is found in minutes, before the first
real GPU job is submitted.  To stay cheap it starts **one server per engine** the run's model
stages serve (:data:`isqaflow.models.served.settings.ENGINES`) and loads **one in-process
model**:

* per engine, the smallest served model (``gpu.parameters``, or ``gpu.memory_gb``) among those
  the grid's jobs (:func:`isqaflow.grid.jobs`) run with a LoRA adapter on that engine, else
  among all it serves there: one server start then covers the adapter path too;
* with the stage's longest input and output of that model (its use in the grid with the
  longest input + output), so the GPU plan gives the smoke server the flags of the job that
  asks most of it (``--max-model-len``);
* the smallest local, not served model that needs a GPU among those the grid's jobs and the
  metrics' question generator (``metrics.qg.model``) load in-process (the extractive reader,
  ``metrics.qa``, loads through its own pipeline, not the hf backend).

The requests themselves and the record are :mod:`isqaflow.models.smoke`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from isqaflow.backends import backend_of, needs_gpus
from isqaflow.models.planning import gpu_plan

JOB = "gpu_smoke"


@dataclass(frozen=True)
class SmokeServer:
    """One server the smoke job starts: its engine, model key, the adapter (a ``finetune`` key)
    whose LoRA settings its test adapter takes, or None, and the model's use for the GPU plan."""

    engine: str
    name: str
    adapter: str | None
    use: gpu_plan.ModelUse


@dataclass(frozen=True)
class SmokePlan:
    servers: tuple[SmokeServer, ...]
    in_process: gpu_plan.ModelUse | None

    @property
    def models(self) -> list[str]:
        """The model keys the job loads (their weights are its inputs)."""
        names = [s.name for s in self.servers]
        return names + ([self.in_process.name] if self.in_process else [])

    def uses(self) -> list[gpu_plan.ModelUse]:
        return [s.use for s in self.servers] + ([self.in_process] if self.in_process else [])


def model_size(entry: Mapping[str, Any]) -> float:
    """The weights' size the choice goes by: parameters, or the declared memory (GB, as 1e9
    parameters); a model with neither is taken last."""
    sizing = entry.get("gpu") or {}
    if "parameters" in sizing:
        return float(sizing["parameters"])
    if "memory_gb" in sizing:
        return float(sizing["memory_gb"]) * 1e9
    return math.inf


def _smallest(uses: list[gpu_plan.ModelUse]) -> gpu_plan.ModelUse:
    """The smallest model's use with the longest input + output (ties: by name)."""
    return min(
        uses, key=lambda u: (model_size(u.entry), u.name, -(u.input_tokens + u.output_tokens))
    )


def _served_engine(use: gpu_plan.ModelUse) -> str | None:
    serve = use.entry.get("serve") or {}
    if not serve or not backend_of(use.entry, use.name).servable:
        return None
    return str(serve.get("engine", "other"))


def plan_smoke(config: Mapping[str, Any]) -> SmokePlan:
    """The smoke job's servers and in-process model for ``config`` (see the module docstring)."""
    uses = [u for job_uses in gpu_plan.grid_jobs(config).values() for u in job_uses]
    by_engine: dict[str, list[gpu_plan.ModelUse]] = {}
    in_process: list[gpu_plan.ModelUse] = []
    for use in uses:
        engine = _served_engine(use)
        if engine is not None:
            by_engine.setdefault(engine, []).append(use)
        elif use.local and use.gpus:
            in_process.append(use)
    qg = (config.get("metrics") or {}).get("qg") or {}
    qg_name = qg.get("model")
    if qg_name in (config.get("models") or {}):
        entry = config["models"][qg_name]
        use = gpu_plan.ModelUse("question-generator", qg_name, entry, 512, 32)
        if _served_engine(use) is None and use.local and use.gpus:
            in_process.append(use)
    servers = []
    for engine in sorted(by_engine):
        engine_uses = by_engine[engine]
        with_adapter = [u for u in engine_uses if u.adapter]
        chosen = _smallest(with_adapter or engine_uses)
        same = [u for u in engine_uses if u.name == chosen.name]
        longest = max(same, key=lambda u: u.input_tokens + u.output_tokens)
        adapter = chosen.adapter if with_adapter else None
        use = gpu_plan.ModelUse(
            f"smoke-{engine}",
            chosen.name,
            chosen.entry,
            longest.input_tokens,
            longest.output_tokens,
            adapter,
            longest.bounded,
        )
        servers.append(SmokeServer(engine, chosen.name, adapter, use))
    local = None
    if in_process:
        smallest = _smallest(in_process)
        local = gpu_plan.ModelUse(
            "smoke-in-process",
            smallest.name,
            smallest.entry,
            smallest.input_tokens,
            smallest.output_tokens,
        )
    return SmokePlan(tuple(servers), local)


@dataclass(frozen=True)
class SmokeJobPlan:
    """The GPU plans of the smoke job's steps: each server alone, then the in-process model.  The
    job runs them one after another (each server is stopped before the next step), so it asks for
    the most GPUs one step needs, not their sum: where every other job fits the GPUs a run may use
    at once (``--resources gpu=1`` in the rehearsal), so does the smoke job."""

    steps: tuple[gpu_plan.JobPlan, ...]

    @property
    def gpus(self) -> int:
        return max((step.gpus for step in self.steps), default=0)

    def server_for(self, name: str) -> gpu_plan.Server | None:
        return next((s for step in self.steps if (s := step.server_for(name))), None)


def plan_job(config: Mapping[str, Any], plan: SmokePlan) -> SmokeJobPlan | None:
    """The smoke job's GPU plan (its GPUs and each server's flags), or None without a ``gpu_plan``
    section (the servers then start with their ``serve:`` command only, as the real jobs do)."""
    if config.get("gpu_plan") is None:
        return None
    uses = [[s.use] for s in plan.servers] + ([[plan.in_process]] if plan.in_process else [])
    return SmokeJobPlan(tuple(gpu_plan.plan_job(JOB, step, config) for step in uses))


def job_gpus(config: Mapping[str, Any]) -> int:
    """The smoke job's GPUs (the rule's request and the GPU-hour plan's): its GPU plan's count,
    without a ``gpu_plan`` section the ``generate`` stage's where a model it loads needs GPUs; at
    least one (it exists only where a job asks for GPUs: rules/common.smk, gpu_smoke_gate)."""
    plan = plan_smoke(config)
    job = plan_job(config, plan)
    if job is not None:
        return max(job.gpus, 1)
    resources = config.get("resources") or {}
    stage = {**(resources.get("default") or {}), **(resources.get("generate") or {})}
    models = [config["models"][name] for name in plan.models]
    return max(int(stage.get("gpu", 0)) if needs_gpus(models) else 0, 1)
