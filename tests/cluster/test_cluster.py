"""What reaches sbatch: isqaflow.cluster's requests, and the README's cluster command's effective
settings read from a dry run of the paper config, turned into the sbatch arguments
snakemake-executor-plugin-slurm 2.8.0 builds (its own ``get_submit_command`` and
``set_gres_string``, pure functions of a job's threads and resources)."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
import yaml
from conda_double import install
from workflow_utils import REPO, copy_repo, env, snakemake

from isqaflow.cluster import ResourceError, is_local, job_request, partition, runtime_minutes

PAPER = yaml.safe_load((REPO / "config/paper.yaml").read_text())
PROFILE = yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())
ENV = {
    "SLURM_ACCOUNT": "acct",
    "SLURM_CPU_PARTITION": "cpuq",
    "SLURM_GPU_PARTITION": "gpuq",
    "OPENAI_API_KEY": "placeholder-for-a-dry-run",
}
CLUSTER_COMMAND = [
    "--profile",
    "profiles/slurm",
    "--configfile",
    "config/paper.yaml",
    "--sdm",
    "conda",
]


# ------------------------------------------------------------------ isqaflow.cluster
RES = {
    "default": {"threads": 2, "mem_mb": 8000, "runtime": "1h", "gpu": 0},
    "generate": {"threads": 8, "mem_mb": 64000, "runtime": "24h", "gpu": 1, "gpu_model": "a100"},
    "big": {"threads": 1, "mem_mb": 300000, "runtime": "1h"},
    "long": {"threads": 1, "mem_mb": 1000, "runtime": "3d"},
    "pinned": {
        "threads": 1,
        "mem_mb": 1000,
        "runtime": 30,
        "slurm_partition": "special",
        "constraint": "avx512",
    },
    "partitions": {
        "cpu": {"max_mem_mb": 128000, "max_runtime": "48h"},
        "gpu": {
            "name": "gpu-a100",
            "max_mem_mb": 160000,
            "max_runtime": "2d",
            "slurm_extra": "--exclusive",
        },
    },
}


@pytest.mark.parametrize(
    ("value", "minutes"),
    [
        (90, 90),
        ("90", 90),
        ("30m", 30),
        ("12h", 720),
        ("2d", 2880),
        ("1d12h", 2160),
        ("1.5h", 90),
        ("45min", 45),
    ],
)
def test_runtime_minutes(value, minutes):
    assert runtime_minutes(value) == minutes


@pytest.mark.parametrize("value", ["", "h", "12 hours", "1:00:00", True])
def test_runtime_minutes_malformed(value):
    with pytest.raises(ValueError, match="runtime"):
        runtime_minutes(value)


def test_partition_names_from_config_then_environment():
    environ = {
        "SLURM_CPU_PARTITION": "cpuq",
        "SLURM_GPU_PARTITION": "gpuq",
        "SLURM_PARTITION": "shared",
    }
    assert partition(RES, "gpu", environ)["name"] == "gpu-a100"  # the config's wins
    assert partition(RES, "cpu", environ)["name"] == "cpuq"
    assert partition(RES, "cpu", {"SLURM_PARTITION": "shared"})["name"] == "shared"
    assert partition(RES, "cpu", {})["name"] == ""  # the cluster's default partition


def test_gpu_job_goes_to_the_gpu_partition_with_its_model_and_extra():
    req = job_request(RES, "generate", gpus=1, environ={})
    assert req == {
        "mem_mb": 64000,
        "runtime": 1440,
        "slurm_partition": "gpu-a100",
        "gpu_model": "a100",
        "slurm_extra": "--exclusive",
        "nodes": 1,
    }


def test_cpu_job_of_a_gpu_stage_gets_neither_gpu_model_nor_gpu_partition():
    req = job_request(RES, "generate", gpus=0, environ={"SLURM_CPU_PARTITION": "cpuq"})
    assert req["slurm_partition"] == "cpuq" and "gpu_model" not in req and "slurm_extra" not in req


def test_retries_grow_up_to_the_cap_never_past_it():
    mems = [job_request(RES, "generate", 1, attempt, {})["mem_mb"] for attempt in (1, 2, 3)]
    times = [job_request(RES, "generate", 1, attempt, {})["runtime"] for attempt in (1, 2, 3)]
    assert mems == [64000, 128000, 160000]
    assert times == [1440, 2880, 2880]
    assert [job_request(RES, "default", 0, a, {})["mem_mb"] for a in (1, 2, 3)] == [
        8000,
        16000,
        24000,
    ]


def test_request_above_the_cap_names_the_stage():
    with pytest.raises(
        ResourceError, match=r"resources\.big: mem_mb 300000 is above the cpu partition 'cpuq'"
    ):
        job_request(RES, "big", 0, environ={"SLURM_CPU_PARTITION": "cpuq"})
    with pytest.raises(
        ResourceError, match=r"resources\.long: runtime 3d \(4320 min\) is above .*max_runtime 48h"
    ):
        job_request(RES, "long", 0, environ={})


def test_stage_partition_and_constraint_override():
    req = job_request(RES, "pinned", 0, environ={"SLURM_CPU_PARTITION": "cpuq"})
    assert req["slurm_partition"] == "special" and req["constraint"] == "avx512"


def test_downloads_are_local_unless_configured():
    assert is_local(RES, "download") and not is_local(RES, "generate")
    assert not is_local({**RES, "download": {"local": False}}, "download")


def test_a_gpu_job_of_a_local_stage_is_an_error_naming_the_stage():
    local = {**RES, "generate": {**RES["generate"], "local": True}}
    assert (
        job_request(local, "generate", gpus=0, environ={})["nodes"] == 1
    )  # its API-only jobs: fine
    with pytest.raises(
        ResourceError, match=r"resources\.generate: local is true, .* needs 1 GPU\(s\)"
    ):
        job_request(local, "generate", gpus=1, environ={})


def test_paper_config_every_stage_fits_its_partitions():
    res = PAPER["resources"]
    stages = [s for s in res if s != "partitions"]
    for stage in stages:
        for gpus in (0,) if is_local(res, stage) else (0, 1):  # a local stage's jobs get no GPU
            job_request(res, stage, gpus, environ={})  # raises when above a cap


def test_every_raw_github_url_in_the_paper_config_pins_a_full_commit():
    text = (REPO / "config/paper.yaml").read_text()
    urls = re.findall(r"https://raw\.githubusercontent\.com/\S+", text)
    assert len(urls) >= 10
    for url in urls:
        assert re.match(r"https://raw\.githubusercontent\.com/[^/]+/[^/]+/[0-9a-f]{40}/", url), url
    downloads = PAPER["downloads"]
    for name in ("lfrqa_fiqa", "lfrqa_science", "lfrqa_writing"):
        assert "/9dd32dc344237a78108771b8e862ee9151647f61/data/" in downloads[name]["url"]
    assert (
        "/d47415ef7c8f9454be072e33cc8e6d1697ed7a88/evaluation.py"
        in downloads["infobench_judge_prompt"]["url"]
    )
    assert downloads["infobench_judge_prompt"]["checksum"] == (
        "sha256:e18f50e526da70a45ca7cf5d8681f0ccc975db694a7cb2afbde5007abed25475"
    )


# ------------------------------------------------------------------ the cluster command's dry run
def parse_jobs(text: str) -> list[dict]:
    """Each planned job of a dry run: rule, local or not, threads, resources (the one reader of
    a dry run's job listing, isqaflow.spend.figures, which the docs' plan figures use too)."""
    from isqaflow.spend.figures import parse_dry_run

    return parse_dry_run(text)


class _Resources(dict):
    __getattr__ = dict.get


def sbatch_args(job: dict) -> str:
    """The sbatch call the plugin builds for a planned job (account and partition as in
    its run_job: ``-A <account>``, ``-p <partition>``)."""
    from snakemake_executor_plugin_slurm.submit_string import get_submit_command
    from snakemake_executor_plugin_slurm.utils import set_gres_string
    from snakemake_executor_plugin_slurm.validation import validate_slurm_extra

    resources = _Resources(job["resources"])
    fake = SimpleNamespace(
        resources=resources, threads=job["threads"], name=job["rule"], is_group=lambda: False
    )
    validate_slurm_extra(fake)
    params = {
        "run_uuid": "uuid",
        "slurm_logfile": "log",
        "comment_str": f"rule_{job['rule']}",
        "account": f"-A {resources['slurm_account']}",
        "partition": f"-p {resources['slurm_partition']}"
        if resources.get("slurm_partition")
        else "",
        "workdir": "/work",
    }
    return get_submit_command(fake, params) + set_gres_string(fake)


LOCALRULES = """
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings
with SnakemakeApi(OutputSettings()) as api:
    workflow = api.workflow(resource_settings=ResourceSettings(cores=1), snakefile=Path("Snakefile"),
                            config_settings=ConfigSettings(configfiles=[Path("{config}")]), workdir=Path("."))
    print("LOCALRULES", " ".join(sorted(workflow._workflow._localrules)))
"""


def checkout(tmp_path) -> tuple:
    """A copy of the repository with the SciMRC stub, and the cluster command's environment
    (partitions, account, a placeholder key, conda's stand-in)."""
    workdir = copy_repo(tmp_path / "checkout")
    stub = workdir / "resources/local/scimrc/scimrc_train_dev.json"
    stub.parent.mkdir(parents=True)
    stub.write_text("[]\n")
    run_env = {k: v for k, v in env().items() if not k.startswith("SLURM_")} | ENV
    run_env["PATH"] = f"{install(tmp_path / 'conda')}:{run_env['PATH']}"
    return workdir, run_env


def run_snakemake(workdir, run_env, *args, code=None):
    import subprocess
    import sys

    cmd = [sys.executable, "-c", code] if code else [sys.executable, "-m", "snakemake", *args]
    result = subprocess.run(
        cmd, cwd=workdir, capture_output=True, text=True, timeout=600, env=run_env
    )
    text = result.stdout + result.stderr
    assert result.returncode == 0, text[-4000:]
    return text


def local_rules(workdir, run_env, config) -> set[str]:
    """The workflow's localrules, read from Snakemake itself (a dry run does not show them)."""
    text = run_snakemake(workdir, run_env, code=LOCALRULES.format(config=config))
    return set(text.split("LOCALRULES", 1)[1].split("\n", 1)[0].split())


@pytest.fixture(scope="module")
def paper_dry_run(tmp_path_factory):
    workdir, run_env = checkout(tmp_path_factory.mktemp("cluster"))
    text = run_snakemake(workdir, run_env, *CLUSTER_COMMAND, "-n")
    return workdir, run_env, parse_jobs(text)


def test_no_workflow_profile_beside_the_cluster_profile():
    # Snakemake loads profiles/default as the workflow profile on top of any --profile
    assert not (REPO / "profiles/default").exists()
    assert "profiles/local" in (REPO / "Makefile").read_text()
    assert (
        PROFILE["executor"] == "slurm"
        and PROFILE["keep-going"] is True
        and PROFILE["latency-wait"] >= 60
    )


def test_cluster_command_plans_the_configured_threads_and_resources(paper_dry_run):
    *_, jobs = paper_dry_run
    res = PAPER["resources"]
    by_rule = {}
    for job in jobs:
        by_rule.setdefault(job["rule"], []).append(job)
    expected_threads = {
        "baseline_summaries": "generate",
        "isqa_refine": "generate",
        "finetune_feedback": "finetune",
        "drfr_judge": "judge",
        "retrieve": "retrieve",
        "convert_papers": "data",
        "arena_tables": "tables",
    }
    for rule, stage in expected_threads.items():
        for job in by_rule[rule]:
            assert job["threads"] == res[stage]["threads"], (rule, job["threads"])
            assert job["resources"]["mem_mb"] == res[stage]["mem_mb"], rule
            assert job["resources"]["runtime"] == runtime_minutes(res[stage]["runtime"]), rule
            assert job["resources"]["slurm_account"] == "acct"
    assert max(j["threads"] for j in jobs) == 8


def test_no_cpu_only_job_asks_for_the_gpu_partition(paper_dry_run):
    *_, jobs = paper_dry_run
    submitted = [j for j in jobs if not j["local"]]
    assert submitted
    for job in submitted:
        gpus = job["resources"].get("gpu", 0)
        assert job["resources"]["slurm_partition"] == ("gpuq" if gpus else "cpuq"), job
    assert any(j["resources"].get("gpu") for j in submitted)
    # API-only jobs of GPU stages go to the CPU partition
    (judge,) = [j for j in jobs if j["rule"] == "drfr_judge"]
    assert judge["resources"]["slurm_partition"] == "cpuq" and not judge["resources"].get("gpu")


def test_downloads_extraction_and_weight_fetches_are_local_jobs(paper_dry_run):
    workdir, run_env, jobs = paper_dry_run
    assert {"download", "extract", "fetch_weights", "manifest"} <= local_rules(
        workdir, run_env, "config/paper.yaml"
    )
    planned = {j["rule"] for j in jobs}
    assert {"download", "extract", "fetch_weights"} <= planned
    from isqaflow.models.weights.hub import hub_models

    fetched = sorted(
        j["wildcards"].removeprefix("model=") for j in jobs if j["rule"] == "fetch_weights"
    )
    used = hub_models(PAPER["models"], PAPER["arena"]["retrievers"])
    assert fetched and set(fetched) <= set(used) and len(fetched) == len(set(fetched))
    assert "retriever-colbert" in fetched  # ColBERTv2's encoder


def test_sbatch_arguments_of_a_cpu_a_gpu_and_a_download_job(paper_dry_run):
    *_, jobs = paper_dry_run
    res = PAPER["resources"]
    cpu = next(j for j in jobs if j["rule"] == "convert_papers")
    call = sbatch_args(cpu)
    assert (
        f"--cpus-per-task={res['data']['threads']}" in call
        and "-p cpuq" in call
        and "-A acct" in call
    )
    assert (
        f"--mem {res['data']['mem_mb']}" in call and "--gpus" not in call and "--ntasks=1" in call
    )
    gpu = next(j for j in jobs if j["rule"] == "baseline_summaries")
    call = sbatch_args(gpu)
    assert "--cpus-per-task=8" in call and "-p gpuq" in call and "--gpus=1" in call
    assert f"-t {runtime_minutes(res['generate']['runtime'])}" in call
    # a download job is a local job (previous test); were it submitted, the plugin would build:
    download = next(j for j in jobs if j["rule"] == "download")
    call = sbatch_args(download)
    assert "-p cpuq" in call and "--cpus-per-task=1" in call and "--gpus" not in call


def test_multi_gpu_jobs_are_held_on_one_node(paper_dry_run):
    """Issue 28, item 4: the plugin adds --nodes only for a nodes resource, and --gpus=N alone lets
    SLURM spread a tensor-parallel server's GPUs over nodes.  Every job asks for one node."""
    *_, jobs = paper_dry_run
    submitted = [j for j in jobs if not j["local"]]
    big = [j for j in submitted if j["resources"].get("gpu", 0) >= 4]
    assert big, "the paper config plans no job with 4 or more GPUs"
    for job in big + [j for j in submitted if j["resources"].get("gpu", 0) == 1][:3]:
        call = sbatch_args(job)
        assert "--nodes=1" in call.split() and f"--gpus={job['resources']['gpu']}" in call, (
            job["rule"],
            call,
        )
    assert all(j["resources"].get("nodes") == 1 for j in submitted)


def test_downloads_submitted_to_the_cpu_partition_when_not_local(tmp_path):
    workdir, run_env = checkout(tmp_path)
    config = yaml.safe_load((workdir / "config/paper.yaml").read_text())
    config["resources"]["download"]["local"] = False
    config["resources"]["partitions"]["gpu"]["gpu_model"] = "h100"
    config["resources"]["generate"]["constraint"] = "nvlink"
    (workdir / "config/remote.yaml").write_text(yaml.safe_dump(config))
    text = run_snakemake(
        workdir, run_env, "--profile", "profiles/slurm", "--configfile", "config/remote.yaml", "-n"
    )
    assert not {"download", "extract", "fetch_weights"} & local_rules(
        workdir, run_env, "config/remote.yaml"
    )
    jobs = parse_jobs(text)
    gpu = next(j for j in jobs if j["rule"] == "baseline_summaries")
    call = sbatch_args(gpu)
    assert "--gpus=h100:1" in call and "-C nvlink" in call and "-p gpuq" in call


def test_every_stage_honours_local(tmp_path):
    """Issue 28, item 2: resources.<stage>.local was accepted for every stage and honoured only for
    downloads; the API judges (stage judge) then needed the internet on compute nodes.  Each rule
    follows its stage's local: (read from Snakemake's own API)."""
    workdir, run_env = checkout(tmp_path)
    config = yaml.safe_load((workdir / "config/paper.yaml").read_text())
    config["resources"]["judge"]["local"] = True
    config["resources"]["data"]["local"] = True
    (workdir / "config/api-local.yaml").write_text(yaml.safe_dump(config))
    local = local_rules(workdir, run_env, "config/api-local.yaml")
    judges = {
        "arena_judge",
        "arena_judge_checks",
        "arena_summaries",
        "drfr_judge",
        "drfr_summaries",
    }
    data = {"convert_papers", "convert_qa_train", "convert_instructions", "convert_rag"}
    assert judges | data <= local
    assert (
        not {"baseline_summaries", "isqa_refine", "rag_answers", "finetune_feedback", "retrieve"}
        & local
    )
    text = run_snakemake(
        workdir,
        run_env,
        "--profile",
        "profiles/slurm",
        "--configfile",
        "config/api-local.yaml",
        "-n",
    )
    assert judges <= {
        j["rule"] for j in parse_jobs(text)
    }  # the cluster command plans them (as local jobs)


def test_each_rule_takes_local_from_the_stage_of_its_resources():
    """A rule's localrule: names the stage its cluster_resources come from (or the rule is always local)."""
    always = set()
    checked = 0
    for path in sorted((REPO / "rules").rglob("*.smk")):
        text = path.read_text()
        for block in re.findall(r"(?ms)^localrules:\n(.*?)\n\n", text):
            always |= set(re.findall(r"(\w+),", block))
        for name, body in re.findall(r"(?ms)^rule (\w+):\n(.*?)(?=^rule |\Z)", text):
            stage = re.search(r'cluster_resources\(\s*"(\w+)"', body)
            if stage is None:
                continue
            if name in always:
                assert "localrule:" not in body, name
                continue
            assert f'localrule: local_stage("{stage.group(1)}")' in body, name
            checked += 1
    assert checked >= 30 and always >= {"manifest", "check_systems"}


def test_a_request_above_its_partition_cap_fails_at_dag_build_naming_the_stage(tmp_path):
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    config["resources"]["partitions"] = {"cpu": {"max_mem_mb": 1000}}
    path = tmp_path / "capped.yaml"
    path.write_text(yaml.safe_dump(config))
    result = snakemake(REPO, "-n", "--cores", "1", "--configfile", str(path), timeout=300)
    text = result.stdout + result.stderr
    assert result.returncode != 0
    assert re.search(
        r"resources\.\w+: mem_mb \d+ is above the cpu partition's max_mem_mb 1000", text
    ), text[-3000:]


def test_the_docs_plan_figures_are_what_the_plan_computes_now(paper_dry_run):
    """docs/paper-scale.md's jobs per rule, submit-host jobs, GPU hours, dollars and weights'
    size: the block tools/plan_figures.py writes, recomputed from this dry run."""
    from isqaflow.spend import figures

    workdir, run_env, jobs = paper_dry_run
    local = local_rules(workdir, run_env, "config/paper.yaml")
    generated = figures.block(PAPER, jobs, local, root="/nonexistent")
    doc = (REPO / "docs/paper-scale.md").read_text()
    assert figures.current_block(doc) == generated, (
        "docs/paper-scale.md: stale plan figures; run .venv/bin/python tools/plan_figures.py"
    )
    _, totals = figures.job_table(jobs, local)
    assert totals["submit_host"] == sum(1 for j in jobs if j["rule"] in local) and totals[
        "jobs"
    ] == len(jobs)
    assert "| table_html | 1 | submit host 1 |" in generated  # the report's local job: every page
