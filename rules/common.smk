"""Config access, resources, model lookups, targets and the input functions several stages
share (no rules here); each stage's own input functions are in rules/inputs/<stage>.smk,
included at the top of its rule file."""

import os
import sys
from pathlib import Path

# The library lives in src/ (stdlib-only imports here: cheap at parse time).
SRC = str(Path(workflow.basedir) / "src")
if SRC not in sys.path:
    sys.path.insert(0, SRC)

from isqaflow.arena.judging import verdicts  # noqa: E402
from isqaflow.backends import needs_gpus  # noqa: E402
from isqaflow.cluster import is_local, job_request  # noqa: E402
from isqaflow.codehash import code_version, file_version  # noqa: E402
from isqaflow.configcheck import exit_on_problems  # noqa: E402
from isqaflow import cuda  # noqa: E402
from isqaflow.data import raw_paths as raw_paths_module  # noqa: E402
from isqaflow import grid  # noqa: E402
from isqaflow.devices import DevicePoolError, check_job_gpus, use_gpu_pool  # noqa: E402
from isqaflow.models.planning import gpu_plan  # noqa: E402
from isqaflow.models.planning.servecheck import check_serving  # noqa: E402
from isqaflow.configcheck import peers as peer_checks  # noqa: E402
from isqaflow.models.weights.hub import hub_models  # noqa: E402
from isqaflow.runtime import export_workflow_environment  # noqa: E402
from isqaflow.runtime import use_weights_cache  # noqa: E402
from isqaflow.settings import redact_secrets  # noqa: E402
from isqaflow.suites import SUITES, suite  # noqa: E402
from isqaflow.suites import collect as collect_suites  # noqa: E402

# Jobs import this workflow's src/ first (locally and inside SLURM jobs, which
# re-read this file), and the manifest records the command that started the run.
export_workflow_environment(SRC, sys.argv)


def canonical(obj):
    """The same value with every mapping's keys sorted, recursively."""
    if isinstance(obj, dict):
        return {key: canonical(obj[key]) for key in sorted(obj)}
    if isinstance(obj, list):
        return [canonical(value) for value in obj]
    return obj


# Params compare by their text, so the order of keys in a config file must not matter:
# sort them once (in place: Snakemake keeps a reference to this dict).
_canonical_config = canonical(config)
config.clear()
config.update(_canonical_config)


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
    responder="[A-Za-z0-9_.-]+",
    judge="[A-Za-z0-9_-]+",
    retriever="[A-Za-z0-9_]+",
    answerer="[A-Za-z0-9_.-]+",
    k="[0-9]+",


# ----------------------------------------------------------------------------- config
def exit_on_config_problems():
    """Stop with one message listing every cross-reference problem of the config (names,
    local model paths, API key variables; see isqaflow.configcheck), before any job."""
    exit_on_problems(
        config,
        CONFIG_FILES,
        # the released judgments' files (config peers:), the LC GLM's, with the serving checks
        extra=check_serving(config)
        + [
            (p.path, p.message)
            for p in peer_checks.peer_problems(config)
            + peer_checks.length_control_problems(config)
        ]
        + cuda.override_problems(config, os.environ),
        warn=workflow.is_main_process,  # the warnings once, not in every job's log
    )
    print_gpu_plan()
    print_api_model_report()


def export_conda_cuda():
    """conda builds the GPU environments for the config's CUDA, also on a login node without a
    GPU (conda's __cuda): CONDA_OVERRIDE_CUDA from ``cuda:`` (isqaflow.cuda), after the config
    check refused an override of another major version; one the user set is kept."""
    os.environ.setdefault(
        "CONDA_OVERRIDE_CUDA", cuda.conda_override(cuda.setting(config))
    )


def conda_env(name):
    """A rule's ``conda:`` file: envs/<name>.yaml, or the variant for the config's ``cuda`` of a
    GPU environment (isqaflow.cuda) -- relative to the rule file being read, as Snakemake reads
    ``conda:`` (rules/<stage>.smk, or rules/<suite>/<stage>.smk one folder deeper)."""
    here = workflow.current_basedir.get_path_or_uri(secret_free=True)
    env = os.path.join(workflow.basedir, cuda.env_file(name, cuda.setting(config)))
    return os.path.relpath(env, here)


def dry_run():
    return bool({"-n", "--dry-run", "--dryrun"} & set(sys.argv))


def print_api_model_report():
    """A dry run says, before any job, which API models are retired snapshots (with the docs'
    substitute), which the endpoints' lists do not serve, and what it could not check (no key,
    no network): isqaflow.models.api.model_lists.dry_run_report."""
    from isqaflow.models.api.model_lists import dry_run_report

    if workflow.is_main_process and dry_run():
        lines = dry_run_report(config["models"])
        if lines:
            print(
                "API models (isqaflow.models.api.model_lists):\n  "
                + "\n  ".join(lines),
                file=sys.stderr,
            )


def check_api_models_or_exit():
    """At the start of a run (onstart: not in a dry run), on the submit host, before any job:
    every API model is listed by its endpoint (isqaflow.models.api.model_lists.check_api_models).
    """
    from isqaflow.models.api.model_lists import check_api_models

    problems = check_api_models(config["models"])
    if problems:
        print(
            "isqaflow: API models the endpoints do not serve; no job was started:\n  "
            + "\n  ".join(problems),
            file=sys.stderr,
            flush=True,
        )
        sys.exit(1)


def use_gpu_pool_or_exit():
    """On one machine without a scheduler (ISQAFLOW_GPUS, profiles/workstation): at most as
    many GPU jobs at once as the pool has devices (isqaflow.devices.use_gpu_pool)."""
    try:
        use_gpu_pool(workflow)
    except DevicePoolError as err:
        sys.exit(f"isqaflow: {err}")


def print_gpu_plan():
    """A dry run of a config with a gpu_plan section prints every GPU job's plan (stderr)."""
    if config.get("gpu_plan") is not None and {"-n", "--dry-run", "--dryrun"} & set(
        sys.argv
    ):
        plans = {**gpu_plan.plan_evaluations(config), **gpu_plan.plan_grid(config)}
        table = gpu_plan.plan_table(plans)
        print(
            f"GPU plan (isqaflow.models.planning.gpu_plan):\n{table}", file=sys.stderr
        )


def code(*modules):
    """Version of the library code a rule runs (see isqaflow.codehash); every script
    also runs isqaflow.runtime (logging, threads, the call-cache path)."""
    return code_version("isqaflow.runtime", *modules)


def version_scripts(rules):
    """Give every scripted rule a ``script_version`` param, the hash of the script's
    content (called by the Snakefile once every rule is defined). The profiles leave
    Snakemake's ``code`` rerun trigger out: for a script rule it compares the script's mtime
    with the outputs', so a fresh clone or a pull over old results replanned every job; with
    the script's content a param, an edit of a script reruns its rule's jobs and a checkout
    none (docs/reruns.md)."""
    for scripted in (r for r in rules if r.script):
        script = Path(scripted.snakefile).parent / scripted.script
        scripted.set_params(script_version=file_version(script))


BENCHMARKS = "results/benchmarks"


def benchmark_file(rule, wildcards):
    """A rule's benchmark: file (Snakemake's seconds and memory of one job) under
    results/benchmarks/<rule>/, apart from the benchmark scripts in benchmarks/."""
    return f"{BENCHMARKS}/{rule}/{wildcards}.tsv"


def stage_resources(stage):
    """Threads, memory, runtime and GPUs of a stage, from the config's resources section."""
    values = dict(config["resources"]["default"])
    values.update(config["resources"].get(stage, {}))
    return values


def threads_for(stage):
    return int(stage_resources(stage)["threads"])


def cluster_resources(stage, gpu=None):
    """Every resource of a stage's jobs (isqaflow.cluster): mem_mb and runtime growing with
    each retry up to the partition's caps (above a cap: an error at DAG build naming the
    stage), gpu (an int or a function of the wildcards; default the stage's), the partition
    (GPU jobs to the GPU partition, all others to the CPU one), one node (sbatch --nodes=1: a
    job's GPUs on one node), and gpu_model, constraint,
    slurm_extra where the stage or its partition sets them.  Use as `resources: **...`.
    """
    if gpu is None:
        gpu = int(stage_resources(stage).get("gpu", 0))
    count = gpu if callable(gpu) else (lambda wildcards: gpu)

    def request(wildcards, attempt=1):
        return job_request(config["resources"], stage, int(count(wildcards)), attempt)

    def gpus(wildcards):
        # Snakemake would cut a request above --resources gpu down to it: an error instead
        limit = workflow.global_resources.get("gpu").value
        return check_job_gpus(
            int(count(wildcards)), limit, f"a {stage} job {dict(wildcards)}"
        )

    values = {
        "mem_mb": lambda wildcards, attempt: request(wildcards, attempt)["mem_mb"],
        "runtime": lambda wildcards, attempt: request(wildcards, attempt)["runtime"],
        "gpu": gpus,
        "slurm_partition": lambda wildcards: request(wildcards)["slurm_partition"]
        or None,
        "nodes": lambda wildcards: request(wildcards)["nodes"],
    }
    for key in ("gpu_model", "constraint", "slurm_extra"):
        values[key] = lambda wildcards, key=key: request(wildcards).get(key)
    return values


def local_stage(stage):
    """Whether the stage's jobs run on the submit host (localrules; resources.<stage>.local)."""
    return is_local(config["resources"], stage)


def gpus_for(stage, *models):
    """GPUs of a stage; none when no model the job runs needs one (isqaflow.backends)."""
    if not needs_gpus([config["models"][m] for m in models]):
        return 0
    return int(stage_resources(stage).get("gpu", 0))


_job_plans = {}


def job_plan(rule, wildcards):
    """The GPU plan of one job (isqaflow.models.planning.gpu_plan); None without a gpu_plan section."""
    if config.get("gpu_plan") is None:
        return None
    key = (rule, tuple(sorted(dict(wildcards).items())))
    if key not in _job_plans:
        job = grid.find(model_jobs(rule), rule, dict(wildcards))
        uses = gpu_plan.job_uses(config, job)
        _job_plans[key] = gpu_plan.plan_job(job.label, uses, config)
    return _job_plans[key]


def planned_gpus(stage, rule, wildcards, *models):
    """The job's GPUs: the plan's count with a gpu_plan section, else the stage's (gpus_for)."""
    plan = job_plan(rule, wildcards)
    return gpus_for(stage, *models) if plan is None else plan.gpus


def planned_spec(rule, wildcards, name):
    """model_spec(name), with the GPU plan of the server that serves it in this job (its vLLM
    flags, GPUs and the adapter a shared server serves next to the base model)."""
    plan = job_plan(rule, wildcards)
    return spec_with_server(name, plan.server_for(name) if plan is not None else None)


def spec_with_server(name, server, adapters=True):
    """model_spec(name) with a GPU plan's server (gpu_plan.Server) as its server_plan; without
    `adapters` the adapter paths are left to the job (the smoke job makes its own adapter).
    """
    spec = model_spec(name)
    if server is not None:
        spec["server_plan"] = {
            "server": f"{server.model}@{server.dtype}",
            "args": server.args(),
            "gpus": list(server.gpus),
        }
        if adapters:
            spec["server_plan"]["adapters"] = {
                a: adapter_dir(a) for a in server.adapters
            }
    return spec


GPU_SMOKE = "results/gpu_smoke.json"


def gpu_smoke_gate(rule):
    """An input function: the GPU smoke job's record (rule gpu_smoke, rules/models.smk) for a
    job of `rule` that asks for GPUs, nothing for one that asks for none -- so a config without
    GPU stages (the embedded default) plans the same jobs as without the smoke job.  It reads
    the job's own gpu resource (cluster_resources), so the count lives in the rule only.
    ancient(): the jobs wait for the record, and a record newer than a finished GPU job's outputs
    does not make it stale in a later run -- but in the run that makes the smoke job again (its code
    or its servers changed) Snakemake reruns every GPU job of the DAG after it ("Input files
    updated by another job": ancient() does not stop that; tests/cluster/test_slurm.py sees it).
    """

    def gate(wildcards):
        gpus = workflow.get_rule(rule).resources["gpu"].evaluate(wildcards).value
        return [ancient(GPU_SMOKE)] if int(gpus) > 0 else []

    return gate


def model_spec(name):
    """The config entry of a model, as passed to the library (workflow-only keys dropped)."""
    try:
        spec = dict(config["models"][name])
    except KeyError:
        raise ValueError(
            f"unknown model {name!r}; models in config: {sorted(config['models'])}"
        )
    spec.pop("convert", None)
    spec.pop("price", None)  # the manifest's cost table: a new price reruns no job
    # a key in the entry (base_url?api-key=...) never reaches Snakemake's listing or metadata:
    # redacted with its hash here, read back from the config by the job (isqaflow.runtime)
    return redact_secrets(spec)


# Local models whose weights come from the Hub: rule fetch_weights fetches each once.
HUB_MODELS = hub_models(config["models"], config["arena"]["retrievers"])
# the jobs (and the servers they start) read the weights from the configured shared cache
use_weights_cache(config.get("weights", {}).get("cache_dir"))


def model_files(name):
    """Files a model job must wait for: the converted checkpoint of a local model, or the
    fetch record of a Hub model (its weights in the cache; the job runs offline)."""
    entry = config["models"][name]
    if "convert" in entry:
        root = entry["model"]
        return [f"{root}/model.safetensors", f"{root}/config.json"]
    if name in HUB_MODELS:
        return [f"resources/weights/{name}.json"]
    return []


def retriever_weight_files(retriever):
    """The fetch record of a retriever's Hub encoder (ColBERTv2), or none."""
    name = f"retriever-{retriever}"
    return [f"resources/weights/{name}.json"] if name in HUB_MODELS else []


def weight_records():
    """model name -> fetch record of every Hub model in the config (the manifest reads those
    that the run fetched)."""
    return {m: f"resources/weights/{m}.json" for m in HUB_MODELS}


def adapter_dir(adapter):
    return f"results/finetune/{adapter}/adapter"


def adapter_files(adapter):
    return [
        f"{adapter_dir(adapter)}/adapter_model.safetensors",
        f"{adapter_dir(adapter)}/adapter_config.json",
    ]


def generator_files(entry):
    """The files a text generator (a DRFR responder, an arena answerer: a model, with an
    optional adapter) needs before its job starts."""
    files = model_files(entry["model"])
    if entry.get("adapter"):
        files += adapter_files(entry["adapter"])
    return files


def generator_adapter_dir(entry):
    return adapter_dir(entry["adapter"]) if entry.get("adapter") else None


# ----------------------------------------------------------------------------- ISQA
_grid_jobs = []


def model_jobs(rule):
    """The jobs of a model stage's rule the config makes (isqaflow.grid, the single source
    of which jobs there are: the GPU plan and the serving check read it too)."""
    if not _grid_jobs:
        _grid_jobs.extend(grid.jobs(config))
    return [job for job in _grid_jobs if job.rule == rule]


def isqa_runs():
    """(dataset, summarizer, feedback, questions) of every ISQA run (isqaflow.grid)."""
    return grid.isqa_runs(config)


def feedback_control_settings(questions):
    """The feedback-model control of an ISQA run: with the human QA pairs only (their
    annotated evidence sentences); a run with model-generated questions asks the same
    feedback model again, so it runs none."""
    settings = config["validity"]["feedback"]
    return settings if questions == "human" else {**settings, "controls": []}


def feedback_validity_files():
    """The feedback models' known-answer control records (results/validity/feedback/...),
    written by isqa_refine, one per ISQA run with human questions; none when
    validity.feedback runs no control.
    """
    settings = config["validity"]["feedback"]
    if not settings["controls"] or not settings["per_paper"]:
        return []
    return [
        f"results/validity/feedback/{d}/{s}/{f}-{q}.jsonl"
        for d, s, f, q in isqa_runs()
        if feedback_control_settings(q)["controls"]
    ]


def summary_files(dataset, summarizer):
    """Every summaries file of a (dataset, summarizer) (isqaflow.grid)."""
    return grid.summary_files(config, dataset, summarizer)


def isqa_pairs():
    """(dataset, summarizer) pairs with summaries (isqaflow.grid)."""
    return grid.isqa_pairs(config)


# ----------------------------------------------------------------------------- metrics
# each suite's tables: its descriptor's (isqaflow.suites)
ISQA_TABLES = list(suite("isqa").tables)
ISQA_LONG_TABLES = ["table1", "table2", "table3", "table4"]


def metric_validity_files():
    """Known-answer controls of QAGS and QuestEval, one file per scored dataset."""
    if not config["validity"]["metrics"]["controls"]:
        return []
    return [f"results/validity/metrics/{d}.jsonl" for d in config["isqa"]["datasets"]]


def human_eval_filled(dataset, summarizer):
    """annotator -> filled sheet of a (dataset, summarizer), from the config."""
    return config["human_eval"]["filled"].get(f"{dataset}/{summarizer}", {})


# ----------------------------------------------------------------------------- DRFR
DRFR_TABLES = list(suite("drfr").tables)


def judged_summary_systems(dataset, summarizer):
    """The final summaries the DRFR judge and the arena judge see (isqaflow.grid)."""
    return grid.judged_summary_systems(config, dataset, summarizer)


# ----------------------------------------------------------------------------- arena
ARENA_TABLES = list(suite("arena").tables)


def arena_validity_files():
    """The arena judges' known-answer control records (results/validity/arena/<judge>.jsonl),
    one file per judge; none when validity.arena runs no control."""
    settings = config["validity"]["arena"]
    if not settings["controls"] or not settings["per_domain"]:
        return []
    return [f"results/validity/arena/{j}.jsonl" for j in config["arena"]["judges"]]


# ----------------------------------------------------------------------------- validity
def drfr_validity_files():
    """Control records of every DRFR judge (written by drfr_judge beside its judgments)."""
    return [
        f"results/validity/drfr/{d}/{j}.jsonl"
        for d in config["drfr"]["datasets"]
        for j in config["drfr"]["judges"]
    ]


VALIDITY_TABLE = [f"results/tables/validity.{ext}" for ext in ("csv", "md", "tex")]
# The report's menu lists categories in alphabetical order (Snakemake's report sorts
# them with localeCompare; there is no order setting): this name puts the validity
# table before every stage's results (tests/unit/report/test_validity.py checks it).
VALIDITY_CATEGORY = "Controls of judges and metrics"


def validity_targets():
    return [VALIDITY_TABLE[0], "results/validity/summary.json"]


# ----------------------------------------------------------------------------- data
def published_prompt_files(family, judge):
    """The published prompt files a judge reads (prompts: published), or none (our own)."""
    if judge["prompts"] != "published":
        return []
    key = "infobench" if family == "drfr" else "arena"
    spec = config.get("published_prompts", {}).get(key)
    if spec is None:
        raise ValueError(
            f"a {family} judge has prompts: published, but the config has no published_prompts.{key}"
        )
    if family == "drfr":
        return [raw_path(spec)]
    return [raw_path(spec[part]) for part in ("system", "template", "examples")]


def download_filename(name):
    return raw_paths_module.download_filename(config["downloads"], name)


def raw_path(spec):
    """A raw file of a dataset: a local path, a download, or a member of a downloaded archive
    (isqaflow.data.raw_paths, which the spend plan reads too)."""
    return raw_paths_module.raw_path(config["downloads"], spec)


def raw_paths(specs):
    return [raw_path(s) for s in specs]


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


# The targets of the run and the manifest (called after every rule file is read).
include: "targets.smk"
