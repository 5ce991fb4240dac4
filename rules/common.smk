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
    summarizer="[A-Za-z0-9_.-]+",
    feedback="[A-Za-z0-9_]+",
    questions="human|generated",


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


# ----------------------------------------------------------------------------- ISQA
def question_source(name):
    return config["isqa"]["questions"][name]


def isqa_papers(dataset, questions):
    """The papers with their QA pairs: the dataset's human ones, or model-generated ones."""
    if questions == "human":
        return papers_file(dataset)
    return f"results/questions/{dataset}/generated.jsonl"


def feedback_entry(feedback):
    return config["isqa"]["feedback_models"][feedback]


def feedback_adapter_dir(feedback):
    adapter = feedback_entry(feedback).get("adapter")
    return adapter_dir(adapter) if adapter else None


def feedback_files(feedback):
    entry = feedback_entry(feedback)
    files = model_files(entry["model"])
    if entry.get("adapter"):
        files += adapter_files(entry["adapter"])
    return files


def refine_settings(feedback):
    """Algorithm 1's settings for one feedback model (the prompt style is the model's)."""
    refine = dict(config["isqa"]["refine"])
    dedup = refine.pop("dedup")
    return {
        **refine,
        "dedup_method": dedup["method"],
        "dedup_threshold": dedup["threshold"],
        "dedup_model": dedup["model"],
        "feedback_style": feedback_entry(feedback).get("style", "isqa"),
        "seed": config["seed"],
    }


def isqa_runs():
    """(dataset, summarizer, feedback, questions) of every ISQA run in the config."""
    for run in config["isqa"]["runs"]:
        for dataset in run.get("datasets", config["isqa"]["datasets"]):
            for summarizer in run.get("summarizers", config["isqa"]["summarizers"]):
                yield dataset, summarizer, run["feedback"], run["questions"]


def summary_files(dataset, summarizer):
    """Every summaries file of a (dataset, summarizer): baselines, generic feedback, ISQA runs."""
    root = f"results/summaries/{dataset}/{summarizer}"
    files = [f"{root}/baseline.jsonl", f"{root}/generic.jsonl"]
    files += [
        f"{root}/isqa-{f}-{q}.jsonl"
        for d, s, f, q in isqa_runs()
        if (d, s) == (dataset, summarizer)
    ]
    return files


def isqa_pairs():
    """(dataset, summarizer) pairs with summaries."""
    return [(d, s) for d in config["isqa"]["datasets"] for s in config["isqa"]["summarizers"]]


# ----------------------------------------------------------------------------- metrics
ISQA_TABLES = ["table1", "table2", "table3", "table4", "oracle", "feedback_stats"]
ISQA_LONG_TABLES = ["table1", "table2", "table3", "table4"]


def metric_model(role):
    """The QG or QA model of the metrics, with its model entry resolved for params."""
    entry = dict(config["metrics"][role])
    entry["model"] = model_spec(entry["model"])
    return entry


def metric_model_files():
    return sorted({f for role in ("qg", "qa") for f in model_files(config["metrics"][role]["model"])})


def isqa_steps_files():
    return [
        f"results/summaries/{d}/{s}/isqa-{f}-{q}.steps.jsonl" for d, s, f, q in isqa_runs()
    ]


def human_eval_filled(dataset, summarizer):
    """annotator -> filled sheet of a (dataset, summarizer), from the config."""
    return config["human_eval"].get("filled", {}).get(f"{dataset}/{summarizer}", {})


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


def summary_targets():
    return [f for d, s in isqa_pairs() for f in summary_files(d, s)]


def metrics_targets():
    targets = [f"results/tables/isqa_{t}.csv" for t in ISQA_TABLES]
    for d, s in isqa_pairs():
        targets.append(f"results/human_eval/{d}/{s}/sheet.csv")
        if human_eval_filled(d, s):
            targets.append(f"results/human_eval/{d}/{s}/factuality.csv")
    return targets


def all_targets():
    return data_targets() + finetune_targets() + summary_targets() + metrics_targets()
