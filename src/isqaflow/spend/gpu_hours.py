"""GPU hours of the paper grid, estimated from the config and the GPU plan (no GPU, no run).

Printed by ``benchmarks/gpu_hours.py`` (the table of docs/paper-scale.md's "GPU hours"
section; a test keeps the two equal) and, per stage, beside the spend plan of a dry run
(:func:`by_rule`).  Jobs and GPUs per job come from the workflow's own plan: the model stages'
from :func:`isqaflow.models.planning.gpu_plan.plan_grid` (as the rules ask for them), the other GPU
rules' from the config (one job per domain, dataset, ... with its stage's ``gpu``);
``tests/unit/spend/test_gpu_hours.py`` checks both against a dry run.  The items per job are the sizes
the spend plan counts too (``spend.items``: papers, instructions, RAG queries).  **Every
figure is an estimate**: nothing here was measured on a GPU.  GPU hours = GPUs per job x hours
per job, summed; an hour per job is (new tokens at the configured maxima) / (an estimated
decode rate) plus the start-up of the job's servers.  The rates and their sources are the
constants below.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from isqaflow.models.base import GenerationParams
from isqaflow.models.planning import smoke
from isqaflow.models.planning.gpu_plan import JobPlan, grid_jobs, plan_evaluation, plan_grid
from isqaflow.suites import suite_of_rule

# --------------------------------------------------------------- sources (all estimates)
# Every figure below is labelled with the kind of its source (the table's source column starts
# with it): a measurement on vLLM's CPU engine scaled to a GPU, a published figure, or assumed.
MEASURED = "measured on the CPU engine, scaled"
PUBLISHED = "published"
ASSUMED = "assumed"
SOURCE_KINDS = (MEASURED, PUBLISHED, ASSUMED)
# (a) vLLM 0.23, Llama-3.1-8B (bf16) on one A100-40GB, 1,024-token prompts, 8 concurrent
#     requests: ~500 output tokens/s (johnmusgrave.com, "vLLM throughput-latency sweep on NVIDIA A100")
RATE_A = 500.0
RATE_A_PARAMS = 8.03e9  # Llama-3.1-8B, the model of (a)
# (b) a 7B model on one A100-80GB, saturated: ~3,360 output tokens/s (morphllm.com, "vLLM Benchmarks");
#     an upper end only, not used for the totals
RATE_B = 3360.0
# (c) beam search in vLLM's API layer: each step one one-token engine request per beam (2 x beams
#     log-probabilities): (a) / 4 (estimate: two engine requests per token + the API layer's work)
RATE_C = RATE_A / 4
# in-process Flan-T5-XXL, 2 beams (hf backend, batch 8): ~120 new tokens/s (estimate, no source)
RATE_T5 = 120.0
# active parameters of the mixture-of-experts models (Mistral AI's release notes: Mixtral 8x7B
# 12.9B active of 46.7B; Mixtral 8x22B 39B of 141B); every other model: its gpu.parameters
ACTIVE_PARAMS = {
    "mistralai/Mixtral-8x7B-Instruct-v0.1": 12.9e9,
    "mistralai/Mixtral-8x22B-Instruct-v0.1": 39.1e9,
}
# server start-up (weights from the shared cache, profiling, CUDA graphs; estimate): ~3 min for a
# 7-8B server (13.5 GB), ~8 min for Mixtral-8x7B on 2 GPUs (93 GB); other sizes on the line through both
STARTUP_POINTS = ((13.48, 3.0), (93.4, 8.0))
# items per job at full size: spend.items of the config (papers, instructions, queries)
TRAIN_TOKENS_PER_S = 2000.0  # LoRA fine-tuning of a 7B model on one GPU (estimate, no source)
# The seconds an API call of ISQA's feedback (GPT-3.5, up to 128 new tokens) keeps a job
# waiting, low and high (assumed): the job's GPUs idle meanwhile, at the model's concurrency.
API_CALL_SECONDS = (1.0, 3.0)
# The kind of each figure's source (tests/unit/spend/test_gpu_hours.py: every one is labelled).
# None is measured yet: beam search's cost on the real engine (beams vs greedy, same prompts)
# and the start-up times wait for a GPU (docs/paper-scale.md, GPU hours).
ASSUMPTIONS = {
    "RATE_A": PUBLISHED,
    "RATE_A_PARAMS": PUBLISHED,
    "RATE_B": PUBLISHED,
    "RATE_C": ASSUMED,  # (a) / 4: two engine requests per token + the API layer, not measured
    "RATE_T5": ASSUMED,
    "ACTIVE_PARAMS": PUBLISHED,
    "STARTUP_POINTS": ASSUMED,
    "TRAIN_TOKENS_PER_S": ASSUMED,
    "FIXED": ASSUMED,
    "API_CALL_SECONDS": ASSUMED,
}
# GPU rules not run by a served or planned model: GPU hours per rule (low, high), estimates
FIXED = {
    "gpu_smoke": (
        (0.1, 0.3),
        "one server start, four short requests and one in-process model per engine (estimate)",
    ),
    "evaluate_feedback": (
        (1.0, 1.0),
        "Vicuna-7B and its LoRA adapter on one vLLM server (the GPU plan's: plan_evaluation), "
        "500 examples, 2 beams (estimate)",
    ),
    "generate_questions": (
        (25.0, 25.0),
        "in-process T5 QG / RoBERTa QA (estimate, the three rules together)",
    ),
    "score_summaries": ((0.0, 0.0), "counted with generate_questions"),
    "metric_controls": ((0.0, 0.0), "counted with generate_questions"),
    "colbert_index": (
        (1.0, 3.0),
        "ColBERTv2 encoding of the passages (estimate, the two rules together)",
    ),
    "retrieve_colbert": ((0.0, 0.0), "counted with colbert_index"),
    "retrieve": (
        (0.2, 1.0),
        "MiniLM-L6 bi-encoder embedding of the passages (estimate, no source)",
    ),
}


def _fixed_decoding(rule: str, config: Mapping[str, Any]) -> str:
    """How a FIXED rule decodes (the table's column): in-process, but for the GPU smoke job and
    an adapter evaluation whose base model is served (rule evaluate_feedback: one vLLM server)."""
    if rule == "gpu_smoke":
        return "a few requests: served (one server per engine) and in-process"
    models = config.get("models") or {}
    bases = [entry.get("base") for entry in (config.get("finetune") or {}).values()]
    if rule == "evaluate_feedback" and any((models.get(b) or {}).get("serve") for b in bases):
        return "served (base + adapter, one server)"
    return "in-process"


def _item(config: Mapping[str, Any], section: str, key: str, field: str) -> int:
    """``spend.items.<section>.<key>.<field>``; a KeyError naming that path where it is not declared."""
    try:
        return int((config.get("spend") or {})["items"][section][key][field])
    except (KeyError, TypeError) as err:
        raise KeyError(f"spend.items.{section}.{key}.{field}") from err


def papers(config: Mapping[str, Any], dataset: str) -> int:
    """Papers of a dataset at full size (``spend.items.papers.<dataset>.papers``)."""
    return _item(config, "papers", dataset, "papers")


def instructions(config: Mapping[str, Any], dataset: str) -> int:
    """Instructions of an instruction dataset (``spend.items.instructions.<dataset>.instructions``)."""
    return _item(config, "instructions", dataset, "instructions")


def rag_queries(config: Mapping[str, Any]) -> int:
    """The arena's queries over its domains (``spend.items.rag.<domain>.queries``, summed)."""
    return sum(
        _item(config, "rag", domain, "queries")
        for domain in (config.get("arena") or {}).get("domains", [])
    )


def arena_hard_questions(config: Mapping[str, Any]) -> int:
    """Arena-Hard-Auto's questions (``spend.items.arena_hard.questions``, within its limit)."""
    try:
        n = int((config.get("spend") or {})["items"]["arena_hard"]["questions"])
    except (KeyError, TypeError) as err:
        raise KeyError("spend.items.arena_hard.questions") from err
    return min(n, config["arena_hard"].get("limit") or n)


def startup_minutes(weights_gb: float) -> float:
    (x0, y0), (x1, y1) = STARTUP_POINTS
    return y0 + (weights_gb - x0) * (y1 - y0) / (x1 - x0)


def served_rate(plan: JobPlan, beams: int, config: Mapping[str, Any]) -> float:
    """New tokens/s of a job's server: (c) with beam search, else (a) scaled by the active parameters
    per GPU (decoding at 8 requests is bound by reading the weights), never above (a) per job."""
    if beams > 1:
        return RATE_C
    server = plan.servers[0]
    active = ACTIVE_PARAMS.get(server.model) or float(
        config["models"][server.names[0]]["gpu"]["parameters"]
    )
    return RATE_A * min(1.0, server.tensor_parallel * RATE_A_PARAMS / active)


@dataclass
class Job:
    rule: str
    name: str
    gpus: int
    servers: int = 0
    startup_min: float = 0.0
    tokens: int = 0  # new tokens generated on the job's GPUs (at the configured maxima)
    hours: float = 0.0  # hours per job of generation (without start-up)
    hours_at_a: float = 0.0  # the same at the batched engine's rate (a)
    rate: float = 0.0  # new tokens/s of a greedy served job
    idle: tuple[float, float] = (0.0, 0.0)  # hours (low, high) the GPUs wait for API calls

    @property
    def gpu_hours(self) -> float:
        """GPU hours, the idle wait behind API calls at its low end (:attr:`gpu_hours_high`)."""
        return self.gpus * (self.hours + self.startup_min / 60 + self.idle[0])

    @property
    def gpu_hours_high(self) -> float:
        return self.gpus * (self.hours + self.startup_min / 60 + self.idle[1])


# A generation setting the config leaves out decodes at GenerationParams' default (the jobs
# build their settings from it): the estimate reads the same default, not a copy of it.
_DECODING = GenerationParams()


def _beams(generation: Mapping[str, Any] | None) -> int:
    return int((generation or {}).get("num_beams", _DECODING.num_beams))


def _new_tokens(generation: Mapping[str, Any] | None) -> int:
    return int((generation or {}).get("max_new_tokens", _DECODING.max_new_tokens))


#: The answering rules: one served model answers each of a suite's items with the suite's
#: ``generation`` settings (greedy at the served rate; one table row per model) -- rule -> its
#: items given the config and the job's wildcards (its suite, whose config section holds the
#: settings, is the descriptor's that declares the rule: isqaflow.suites.suite_of_rule).
ANSWERING: dict[str, Callable[[Mapping[str, Any], str], int]] = {
    "drfr_responses": lambda config, wildcards: instructions(config, wildcards.split("/")[0]),
    "rag_answers": lambda config, wildcards: rag_queries(config),
    "arena_hard_answers": lambda config, wildcards: arena_hard_questions(config),
}


def model_jobs(config: Mapping[str, Any]) -> list[Job]:
    """The planned model stages' GPU jobs (plan_grid), with their new tokens and hours."""
    isqa = config.get("isqa", {})
    refine = isqa.get("refine", {})
    steps, batch = int(refine.get("steps", 8)), int(refine.get("batch_size", 4))
    summary, feedback = isqa.get("summary_generation") or {}, isqa.get("feedback_generation") or {}
    jobs = []
    uses = grid_jobs(config)
    for name, plan in plan_grid(config).items():
        if not plan.gpus:
            continue
        rule, wildcards = name.split(" ", 1)
        job = Job(
            rule,
            name,
            plan.gpus,
            len(plan.servers),
            sum(startup_minutes(s.weights_gb) for s in plan.servers),
        )
        served = {role for s in plan.servers for role in s.uses}
        if rule in ("baseline_summaries", "generic_feedback", "isqa_refine"):
            n_papers = papers(config, wildcards.split("/")[0])
            per_paper = {
                "baseline_summaries": len(isqa.get("prompts", [])),
                "generic_feedback": int(isqa.get("generic_steps", 1)),
                "isqa_refine": steps - 1,
            }[rule]  # refinement: the first summary is baseline's
            summaries = per_paper * n_papers * _new_tokens(summary)
            feedbacks = (
                steps * batch * n_papers * _new_tokens(feedback) if "feedback" in served else 0
            )
            job.tokens = summaries + feedbacks
            summary_rate = (
                RATE_C
                if "summarizer" in served and _beams(summary) > 1
                else (RATE_A if "summarizer" in served else RATE_T5)
            )
            job.hours = (
                summaries / summary_rate + feedbacks / (RATE_C if _beams(feedback) > 1 else RATE_A)
            ) / 3600
            job.hours_at_a = (
                summaries / (RATE_A if "summarizer" in served else RATE_T5) + feedbacks / RATE_A
            ) / 3600
            api = [u for u in uses[name] if u.role == "feedback" and not u.local]
            if rule == "isqa_refine" and api:
                # the feedback calls (steps x batch per paper, the spend plan's bound) wait on the
                # API while the job's GPUs hold the summarizer: idle, at the model's concurrency
                calls = steps * batch * n_papers / int(api[0].entry.get("concurrency", 1))
                job.idle = tuple(calls * seconds / 3600 for seconds in API_CALL_SECONDS)
        elif rule in ANSWERING:
            generation = (config.get(suite_of_rule(rule).name) or {}).get("generation")
            job.tokens = ANSWERING[rule](config, wildcards) * _new_tokens(generation)
            job.rate = served_rate(plan, _beams(generation), config)
            job.hours = job.hours_at_a = job.tokens / job.rate / 3600
        jobs.append(job)
    return jobs


def _stage_gpus(config: Mapping[str, Any], stage: str) -> int:
    resources = config.get("resources") or {}
    return int({**(resources.get("default") or {}), **(resources.get(stage) or {})}.get("gpu", 0))


def other_jobs(config: Mapping[str, Any]) -> list[Job]:
    """The GPU jobs the plan does not size (one GPU each: their stage's ``gpu``), as the rules make them."""
    isqa, arena = config.get("isqa", {}), config.get("arena", {})
    datasets, summarizers = isqa.get("datasets", []), isqa.get("summarizers", [])
    retrievers = arena.get("retrievers", {})
    jobs = []
    for adapter, entry in (config.get("finetune") or {}).items():
        gpus = _stage_gpus(config, "finetune")
        settings = entry.get("settings", {})
        tokens = (
            int(settings.get("max_train_examples", 0))
            * int(settings.get("epochs", 1))
            * (int(settings.get("max_input_tokens", 0)) + int(settings.get("max_target_tokens", 0)))
        )
        jobs.append(
            Job("finetune_feedback", adapter, gpus, hours=tokens / TRAIN_TOKENS_PER_S / 3600)
        )
        if entry.get("evaluation"):
            gpus = (
                plan_evaluation(config, adapter).gpus
                if config.get("gpu_plan") is not None
                else _stage_gpus(config, "generate")
            )
            jobs.append(Job("evaluate_feedback", adapter, gpus))
    if (isqa.get("questions") or {}).get("generated"):
        jobs += [Job("generate_questions", d, _stage_gpus(config, "generate")) for d in datasets]
    jobs += [
        Job("score_summaries", f"{d}/{s}", _stage_gpus(config, "generate"))
        for d in datasets
        for s in summarizers
    ]
    jobs += [Job("metric_controls", d, _stage_gpus(config, "generate")) for d in datasets]
    for retriever, spec in retrievers.items():
        backend = spec.get("backend")
        gpus = _stage_gpus(config, "retrieve") if backend in ("dense", "colbert") else 0
        for domain in arena.get("domains", []):
            if backend == "colbert":
                jobs += [Job("colbert_index", domain, gpus), Job("retrieve_colbert", domain, gpus)]
            else:
                jobs.append(Job("retrieve", f"{domain}/{retriever}", gpus))
    return [job for job in jobs if job.gpus]


def smoke_job(config: Mapping[str, Any]) -> Job:
    """The GPU smoke job (rule gpu_smoke), with the GPUs the rule asks for."""
    return Job("gpu_smoke", "", smoke.job_gpus(config))


def gpu_jobs(config: Mapping[str, Any]) -> dict[str, list[Job]]:
    """Every GPU job of the grid, per rule."""
    rules: dict[str, list[Job]] = defaultdict(list)
    jobs = model_jobs(config) + other_jobs(config)
    if jobs:  # every GPU job waits for the GPU smoke job (rule gpu_smoke, isqaflow.models.smoke)
        jobs.insert(0, smoke_job(config))
    for job in jobs:
        rules[job.rule].append(job)
    return dict(rules)


def _num(x: float) -> str:
    return f"{x:,.0f}" if x >= 10 else f"{x:.1f}"


def _tokens(n: int) -> str:
    return f"{n / 1e6:.1f}M" if n else "--"


ORDER = [
    "gpu_smoke",
    "finetune_feedback",
    "evaluate_feedback",
    "generate_questions",
    "score_summaries",
    "metric_controls",
    "baseline_summaries",
    "generic_feedback",
    "isqa_refine",
    "drfr_responses",
    "retrieve",
    "colbert_index",
    "retrieve_colbert",
    "rag_answers",
    "arena_hard_answers",
]


def table(config: Mapping[str, Any]) -> tuple[str, dict[str, float]]:
    """The markdown table (one row per GPU rule; rag_answers and drfr_responses one row per model)
    and the totals: GPU jobs, GPUs, servers, start-up GPU hours, GPU hours low / high / at (a)."""
    rules = gpu_jobs(config)
    rows = [
        (
            "| rule | GPU jobs | GPUs per job | servers (start-up, min each) | decoding | new tokens (max) "
            "| GPU hours (estimated) | source |"
        ),
        "|---|---:|---:|---|---|---:|---:|---|",
    ]
    totals = defaultdict(float)
    for rule in sorted(rules, key=lambda r: ORDER.index(r) if r in ORDER else len(ORDER)):
        jobs = rules[rule]
        groups: dict[str, list[Job]] = defaultdict(list)
        for job in jobs:
            key = job.name.replace(" ", "/").split("/")[-1] if rule in ANSWERING else ""
            groups[key].append(job)
        for key, group in groups.items():
            gpus = sorted({j.gpus for j in group})
            hours = sum(j.gpu_hours for j in group)
            hours_high = sum(j.gpu_hours_high for j in group)
            idle = [sum(j.gpus * j.idle[k] for j in group) for k in (0, 1)]
            at_a = sum(j.gpus * (j.hours_at_a + j.startup_min / 60 + j.idle[0]) for j in group)
            startup = sum(j.gpus * j.startup_min / 60 for j in group)
            servers = sum(j.servers for j in group)
            totals["jobs"] += len(group)
            totals["gpus"] += sum(j.gpus for j in group)
            totals["servers"] += servers
            totals["startup"] += startup
            if rule in FIXED and not any(j.hours for j in group):
                (low, high), source = FIXED[rule]
                totals["low"] += low
                totals["high"] += high
                totals["at_a"] += low
                figure = (
                    "--"
                    if not high
                    else (f"~{_num(low)}" if low == high else f"~{_num(low)}-{_num(high)}")
                )
                label = "retrieve (dense)" if rule == "retrieve" else rule
                rows.append(
                    f"| {label} | {len(group)} | {'/'.join(map(str, gpus))} | -- "
                    f"| {_fixed_decoding(rule, config)} | -- "
                    f"| {figure} | {ASSUMPTIONS['FIXED']}: {source} |"
                )
                continue
            totals["low"] += hours
            totals["high"] += hours_high
            totals["at_a"] += at_a
            totals["idle_low"] += idle[0]
            totals["idle_high"] += idle[1]
            starts = sorted({round(j.startup_min / j.servers) for j in group if j.servers})
            start = f"{servers} ({'/'.join(map(str, starts))})" if servers else "in-process"
            if rule == "finetune_feedback":
                decoding, source = (
                    "LoRA training",
                    f"{ASSUMPTIONS['TRAIN_TOKENS_PER_S']}: examples x epochs x (input + target "
                    "tokens) at ~2k tokens/s",
                )
            elif rule in ANSWERING:
                rate = group[0].rate
                decoding, source = (
                    "greedy",
                    f"{ASSUMPTIONS['RATE_A']} (a), scaled by active parameters: "
                    f"(a) x {rate / RATE_A:.2f} = {rate:.0f} tokens/s per job",
                )
            else:
                decoding = "2 beams, served" if rule != "isqa_refine" else "2 beams, 1-2 servers"
                source = (
                    f"{ASSUMPTIONS['RATE_C']}: (c) {RATE_C:.0f} tokens/s; Flan-T5 in-process "
                    f"~{RATE_T5:.0f}; at (a): {_num(at_a)}"
                )
                if idle[1]:
                    low_s, high_s = API_CALL_SECONDS
                    source += (
                        f"; idle behind API calls ({ASSUMPTIONS['API_CALL_SECONDS']}: "
                        f"{low_s:g}-{high_s:g} s a call): {_num(idle[0])}-{_num(idle[1])}"
                    )
            figure = _num(hours) if hours_high == hours else f"{_num(hours)}-{_num(hours_high)}"
            label = f"{rule}: {key}" if key else rule
            rows.append(
                f"| {label} | {len(group)} | {'/'.join(map(str, gpus))} | {start} | {decoding} "
                f"| {_tokens(sum(j.tokens for j in group))} | {figure} | {source} |"
            )
    rows.append(
        f"| **total** | {totals['jobs']:.0f} | {totals['gpus']:.0f} GPUs | {totals['servers']:.0f} "
        f"({totals['startup']:.1f} GPU hours, included above; start-up "
        f"{ASSUMPTIONS['STARTUP_POINTS']}) | -- | -- "
        f"| ~{totals['low']:.0f}-{totals['high']:.0f} | ~{totals['at_a']:.0f} with the beam-search stages at (a); "
        f"GPUs idle behind API calls ~{totals['idle_low']:.0f}-{totals['idle_high']:.0f}, included |"
    )
    return "\n".join(rows) + "\n", dict(totals)


def by_rule(config: Mapping[str, Any]) -> dict[str, tuple[int, float, float]]:
    """Per GPU rule: (GPUs of its jobs, summed; GPU hours low, high) -- the table's rows summed per
    rule (a fixed estimate's range where the rule has one; else low = high).  Empty without a
    ``gpu_plan`` section."""
    if config.get("gpu_plan") is None:
        return {}
    out = {}
    for rule, jobs in gpu_jobs(config).items():
        gpus = sum(j.gpus for j in jobs)
        if rule in FIXED and not any(j.hours for j in jobs):
            out[rule] = (gpus, *FIXED[rule][0])
        else:
            out[rule] = (
                gpus,
                sum(j.gpu_hours for j in jobs),
                sum(j.gpu_hours_high for j in jobs),
            )
    return out
