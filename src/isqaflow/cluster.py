"""What each job asks of a SLURM cluster, from the config's ``resources:`` section.

The rules' ``resources:`` come from here (through ``rules/common.smk``), so that every
value reaches ``sbatch`` through snakemake-executor-plugin-slurm:

* ``slurm_partition``: a job that gets a GPU goes to the GPU partition, every other job
  to the CPU partition.  Each partition's name is ``resources.partitions.<cpu|gpu>.name``,
  else the environment variable ``SLURM_CPU_PARTITION`` / ``SLURM_GPU_PARTITION``, else
  ``SLURM_PARTITION`` (one partition for both), else empty (the cluster's default
  partition).  A stage's own ``slurm_partition`` overrides both.
* ``gpu_model`` (``--gpus=<model>:<n>``, GPU jobs only), ``constraint`` (``-C``) and
  ``slurm_extra`` (appended to sbatch as is): the stage's value, else its partition's.
* ``nodes``: 1 for every job.  The plugin passes ``--nodes`` only for a ``nodes``
  resource, and ``--gpus=N`` alone lets SLURM spread a job's GPUs over several nodes,
  where a tensor-parallel server cannot see them; no stage runs on more than one node.
* ``mem_mb`` and ``runtime`` grow with each retry (``attempt`` x the stage's value) up
  to the partition's ``max_mem_mb`` / ``max_runtime``, never past them.  A stage whose
  first request is already above its partition's cap is an error when the DAG is built
  (:class:`ResourceError`, naming the stage), not a job that sbatch refuses later.
* ``local``: a stage's rules run on the submit host (:func:`is_local`); a job of such a stage
  that needs a GPU is an error at DAG build, naming the stage (the submit host has none).

Only the standard library: the workflow imports this at parse time.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

PARTITION_ENV = {"cpu": "SLURM_CPU_PARTITION", "gpu": "SLURM_GPU_PARTITION"}
SHARED_PARTITION_ENV = "SLURM_PARTITION"
# Stages that need the network: they run on the submit host (localrules) unless their
# resources entry says local: false (clusters whose compute nodes reach the internet).
NETWORK_STAGES = ("download",)

_UNITS = {"": 1, "m": 1, "min": 1, "h": 60, "d": 1440, "s": 1 / 60}


class ResourceError(ValueError):
    """A stage asks for more than its partition allows."""


def runtime_minutes(value: int | str) -> int:
    """Minutes of a runtime given as minutes (int) or a string such as ``90``, ``30m``,
    ``12h``, ``2d`` or ``1d12h``."""
    if isinstance(value, bool):
        raise ValueError(f"runtime {value!r}: expected minutes or a string such as '12h'")
    if isinstance(value, int):
        return value
    text = str(value).strip().lower().replace(" ", "")
    parts = re.findall(r"(\d+(?:\.\d+)?)(min|[dhms]?)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"runtime {value!r}: expected minutes or a string such as '12h'")
    minutes = sum(float(n) * _UNITS[u] for n, u in parts)
    return max(1, int(round(minutes)))


def stage_settings(resources: Mapping[str, Any], stage: str) -> dict[str, Any]:
    """The stage's entry over ``resources.default``."""
    values = dict(resources["default"])
    values.update(resources.get(stage, {}))
    return values


def partition_kind(gpus: int) -> str:
    return "gpu" if gpus > 0 else "cpu"


def partition(
    resources: Mapping[str, Any], kind: str, environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A partition's settings with its name resolved (config, else environment)."""
    environ = os.environ if environ is None else environ
    values = dict(resources.get("partitions", {}).get(kind, {}))
    if not values.get("name"):
        values["name"] = environ.get(PARTITION_ENV[kind]) or environ.get(SHARED_PARTITION_ENV, "")
    return values


def is_local(resources: Mapping[str, Any], stage: str) -> bool:
    """Whether a stage's jobs run on the submit host (Snakemake's localrules)."""
    return bool(resources.get(stage, {}).get("local", stage in NETWORK_STAGES))


def job_request(
    resources: Mapping[str, Any],
    stage: str,
    gpus: int,
    attempt: int = 1,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The resources of one job of ``stage`` with ``gpus`` GPUs at its ``attempt``-th try:
    ``mem_mb``, ``runtime`` (minutes), ``slurm_partition``, ``nodes`` (1) and, where set, ``gpu_model``,
    ``constraint``, ``slurm_extra``.  Raises :class:`ResourceError` when the first try
    already asks for more than the partition's cap."""
    settings = stage_settings(resources, stage)
    if gpus > 0 and is_local(resources, stage):
        raise ResourceError(
            f"resources.{stage}: local is true, so this stage's rules run on the submit host, but one of "
            f"its jobs needs {gpus} GPU(s); set local only on stages whose jobs all call an API or the "
            "network (docs/paper-scale.md, outbound access), or reach the API through a proxy"
        )
    kind = partition_kind(gpus)
    part = partition(resources, kind, environ)
    mem = int(settings["mem_mb"])
    runtime = runtime_minutes(settings["runtime"])
    name = settings.get("slurm_partition") or part["name"]
    where = f"resources.{stage}"
    label = f"the {kind} partition" + (f" {name!r}" if name else "")
    max_mem = part.get("max_mem_mb")
    if max_mem is not None and mem > max_mem:
        raise ResourceError(
            f"{where}: mem_mb {mem} is above {label}'s max_mem_mb {max_mem} "
            f"(resources.partitions.{kind}); lower the stage's request or raise the cap"
        )
    max_runtime = part.get("max_runtime")
    max_minutes = None if max_runtime is None else runtime_minutes(max_runtime)
    if max_minutes is not None and runtime > max_minutes:
        raise ResourceError(
            f"{where}: runtime {settings['runtime']} ({runtime} min) is above {label}'s max_runtime "
            f"{max_runtime} (resources.partitions.{kind}); lower the stage's request or raise the cap"
        )
    request: dict[str, Any] = {
        "mem_mb": mem * attempt if max_mem is None else min(mem * attempt, max_mem),
        "runtime": runtime * attempt
        if max_minutes is None
        else min(runtime * attempt, max_minutes),
        "slurm_partition": name,
        "nodes": 1,
    }
    for key in ("constraint", "slurm_extra") + (("gpu_model",) if gpus > 0 else ()):
        value = settings.get(key, part.get(key))
        if value:
            request[key] = value
    return request
