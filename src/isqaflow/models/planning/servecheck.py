"""Config checks of how each stage's models run, before any job: decoding honoured or refused,
one dtype from training to serving, and every GPU job's plan (a part of isqaflow.configcheck).

* **Decoding**: each stage's generation settings against its model's backend
  (:mod:`isqaflow.models.capabilities`): a parameter the backend cannot honour is a problem naming the
  stage, the model and the choices, unless the model accepts decoding without it
  (``serve.unsupported_decoding: drop`` for a served model, ``unsupported_decoding: drop``
  for an API model), which its records then say.
* **dtype**: a model served by vLLM names its dtype (``auto`` means fp16 to vLLM for an
  fp16 checkpoint and bf16 to the hf backend and fine-tuning), and the serve command passes
  it; so an adapter is served in the dtype it was trained in.
* **GPU plan**: with a ``gpu_plan`` section, every GPU job of the grid fits (:mod:`.gpu_plan`).

The model stages' decoding and the GPU plan cover exactly the jobs the config makes
(:mod:`isqaflow.grid`): a model no job runs is not checked.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from isqaflow import grid
from isqaflow.models import capabilities
from isqaflow.models.planning.gpu_plan import GPUPlanError, plan_grid


def _grid_generations(config: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any]]]:
    """(generation path, model key, the mapping) of every model a job of the grid decodes with
    (:mod:`isqaflow.grid`: only the jobs the config makes); none when the config names an
    unknown feedback model or answerer (the config check reports that reference)."""
    try:
        jobs = grid.jobs(config)
    except KeyError:
        return []
    return [
        (model.generation, model.name, grid.setting(config, model.generation) or {})
        for job in jobs
        for model in job.models
        if model.generation is not None
    ]


def stage_generations(config: Mapping[str, Any]) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """(config path of a generation mapping, model key, the mapping) for every model a stage
    decodes with it: the model stages' jobs from the grid, then question generation, the QG
    metric and the feedback model's evaluation."""
    generations = _grid_generations(config)
    yield from (g for g in generations if g[0].startswith("isqa."))
    isqa = config.get("isqa") or {}
    generated = (isqa.get("questions") or {}).get("generated")
    if generated:
        yield (
            "isqa.questions.generated.generation",
            generated["model"],
            generated.get("generation") or {},
        )
    qg = (config.get("metrics") or {}).get("qg")
    if qg and qg.get("model"):
        yield "metrics.qg.generation", qg["model"], qg.get("generation") or {}
    for name, entry in (config.get("finetune") or {}).items():
        generation = (entry.get("evaluation") or {}).get("generation")
        if generation:
            yield f"finetune.{name}.evaluation.generation", entry["base"], generation
    yield from (g for g in generations if not g[0].startswith("isqa."))


def _accepts_dropping(entry: Mapping[str, Any]) -> bool:
    serve = entry.get("serve") or {}
    return (serve.get("unsupported_decoding") or entry.get("unsupported_decoding")) == "drop"


def check_serving(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(config path, message) of every problem; empty when every stage's decoding is honoured
    (or knowingly dropped), every served dtype is explicit and every GPU job fits."""
    models = config.get("models") or {}
    problems: list[tuple[str, str]] = []
    seen = set()
    for path, name, generation in stage_generations(config):
        entry = models.get(name)
        if entry is None or (path, name) in seen:
            continue
        seen.add((path, name))
        backend = capabilities.backend_of(entry)
        if backend is None:
            continue  # transformers serve / other engines: checked per request (models.serve)
        refused = capabilities.refusals(generation, backend)
        if refused and not _accepts_dropping(entry):
            problems.append((path, capabilities.choices(path, name, backend, refused)))
    for name, entry in models.items():
        if capabilities.backend_of(entry) != "vllm":
            continue
        dtype = entry.get("dtype", "auto")
        command = str((entry.get("serve") or {}).get("command", ""))
        if dtype == "auto":
            problems.append(
                (
                    f"models.{name}.dtype",
                    f"model {name} is served by vLLM with dtype auto: vLLM takes auto as float16 for a "
                    "float16 checkpoint, the hf backend and fine-tuning as bfloat16 on a GPU, so an "
                    "adapter would be trained and served in different dtypes; set dtype: bfloat16 (or "
                    "float16) and pass --dtype {dtype}",
                )
            )
        elif "{dtype}" not in command:
            problems.append(
                (
                    f"models.{name}.serve.command",
                    f"model {name} has dtype {dtype}, but its serve command does not pass it: add "
                    "--dtype {dtype}",
                )
            )
    if config.get("gpu_plan") is not None:
        try:
            plan_grid(config)
        except (GPUPlanError, KeyError) as err:
            problems.append(("gpu_plan", str(err)))
    return problems
