"""Input functions, config lookups and targets shared by the rule files (no rules here)."""

import os
import sys
from pathlib import Path

# The library lives in src/; scripts import it through PYTHONPATH, which jobs
# inherit (locally and inside SLURM jobs, which re-read this file).
SRC = str(Path(workflow.basedir) / "src")
if SRC not in sys.path:
    sys.path.insert(0, SRC)
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (SRC, os.environ.get("PYTHONPATH", "")) if p
)

from isqaflow.codehash import code_version  # noqa: E402  (stdlib only: cheap at parse time)


wildcard_constraints:
    dataset="[A-Za-z0-9_-]+",
    model="[A-Za-z0-9_.-]+",
    adapter="[A-Za-z0-9_.-]+",
    download="[A-Za-z0-9_.-]+",
    split="train|dev",
    domain="[A-Za-z0-9_-]+",


# ----------------------------------------------------------------------------- config
def code(*modules):
    """Version of the library code a rule runs (see isqaflow.codehash)."""
    return code_version(*modules)


def stage_resources(stage):
    """Threads, memory, runtime and GPUs of a stage, from the config's resources section."""
    values = dict(config["resources"]["default"])
    values.update(config["resources"].get(stage, {}))
    return values


def threads_for(stage):
    return int(stage_resources(stage)["threads"])


def mem_mb_for(stage):
    """Memory that grows with each retry of a job (attempt 1, 2, ...)."""
    base = int(stage_resources(stage)["mem_mb"])
    return lambda wildcards, attempt: base * attempt


def runtime_for(stage):
    return stage_resources(stage)["runtime"]


def gpus_for(stage):
    return int(stage_resources(stage).get("gpu", 0))


def slurm_extra_for(stage):
    return stage_resources(stage).get("slurm_extra", "")


def model_spec(name):
    """The config entry of a model, as passed to the library (workflow-only keys dropped)."""
    try:
        spec = dict(config["models"][name])
    except KeyError:
        raise ValueError(f"unknown model {name!r}; models in config: {sorted(config['models'])}")
    spec.pop("convert", None)
    return spec


def converted_model(dirname):
    """The config entry of the model converted into resources/models/<dirname>."""
    for entry in config["models"].values():
        if "convert" in entry and entry["model"].rstrip("/") == f"resources/models/{dirname}":
            return entry
    raise ValueError(f"no model in config converts into resources/models/{dirname}")


def model_files(name):
    """Files a model job must wait for: the converted checkpoint of a local model."""
    entry = config["models"][name]
    if "convert" in entry:
        root = entry["model"]
        return [f"{root}/model.safetensors", f"{root}/config.json"]
    return []


def adapter_dir(adapter):
    return f"results/finetune/{adapter}/adapter"


def adapter_files(adapter):
    return [
        f"{adapter_dir(adapter)}/adapter_model.safetensors",
        f"{adapter_dir(adapter)}/adapter_config.json",
    ]


def finetune_entry(adapter):
    return config["finetune"][adapter]


def finetune_settings(adapter):
    """Fine-tuning settings with the run's seed (part of the params, so a new seed retrains)."""
    return {"seed": config["seed"], **finetune_entry(adapter)["settings"]}


# ----------------------------------------------------------------------------- data
def download_filename(name):
    url = config["downloads"][name]["url"]
    return url.rstrip("/").rsplit("/", 1)[-1].split("?")[0]


def raw_path(spec):
    """A raw file of a dataset: a local path, a download, or a member of a downloaded archive."""
    if isinstance(spec, str):
        return spec
    name = spec["download"]
    if "member" in spec:
        return f"resources/extracted/{name}/{spec['member']}"
    return f"resources/downloads/{name}/{download_filename(name)}"


def raw_paths(specs):
    return [raw_path(s) for s in specs]


def papers_entry(dataset):
    return config["datasets"]["papers"][dataset]


def qa_entry(dataset):
    return config["datasets"]["qa_train"][dataset]


def rag_domain(domain):
    return config["datasets"]["rag"]["domains"][domain]


def papers_file(dataset):
    return f"results/data/papers/{dataset}.jsonl"


def qa_file(dataset, split):
    return f"results/data/qa/{dataset}.{split}.jsonl"


def instructions_file(dataset):
    return f"results/data/instructions/{dataset}.jsonl"


def rag_files(domain):
    return {
        "queries": f"results/data/rag/{domain}/queries.jsonl",
        "passages": f"results/data/rag/{domain}/passages.jsonl",
    }


# ----------------------------------------------------------------------------- targets
def data_targets():
    targets = [papers_file(d) for d in config["datasets"]["papers"]]
    targets += [qa_file(d, s) for d in config["datasets"]["qa_train"] for s in ("train", "dev")]
    targets += [instructions_file(d) for d in config["datasets"]["instructions"]]
    targets += [f for d in config["datasets"]["rag"]["domains"] for f in rag_files(d).values()]
    return targets


def finetune_targets():
    return [
        f"results/finetune/{a}/{f}"
        for a in config["finetune"]
        for f in ("train_log.csv", "eval.json")
    ]


def all_targets():
    return data_targets() + finetune_targets()
