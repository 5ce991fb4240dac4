"""The device pool of profiles/workstation (isqaflow.devices): real job processes with fake device ids."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from isqaflow import devices, runtime

ROOT = Path(__file__).resolve().parents[2]
SRC = (
    Path(devices.__file__).resolve().parents[1]
)  # the library these tests import, for the job processes too

# One job process: isqaflow.runtime.job with a rule asking for `gpus` GPUs, as a workflow job
# runs it; it records the CUDA_VISIBLE_DEVICES it was given and when it held them.
WORKER = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from types import SimpleNamespace
    from isqaflow import runtime

    name, gpus, hold, out = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), Path(sys.argv[4])
    smk = SimpleNamespace(log=[str(out.with_suffix(".log"))], threads=1, rule="fake_gpu_job", wildcards={"n": name},
                          output=[str(out)], resources=SimpleNamespace(gpu=gpus))
    with runtime.job(smk):
        import os
        got = time.time()
        out.with_suffix(".ready").write_text(os.environ.get("CUDA_VISIBLE_DEVICES", ""))
        time.sleep(hold)
        out.write_text(json.dumps({"name": name, "gpus": gpus, "devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
                                   "start": got, "end": time.time()}))
""")


def _env(tmp_path: Path, ids: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SLURM_JOB_ID", "CUDA_VISIBLE_DEVICES")}
    env.update(
        {
            devices.GPUS_ENV: ids,
            devices.POOL_ENV: str(tmp_path / "pool"),
            "PYTHONPATH": os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")]),
        }
    )
    return env


def _start(tmp_path: Path, env, name: str, gpus: int, hold: float) -> tuple[subprocess.Popen, Path]:
    out = tmp_path / f"{name}.json"
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER, name, str(gpus), str(hold), str(out)], env=env
    )
    return proc, out


def _wait_for(path: Path, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.05)


def _overlap(a: dict, b: dict) -> bool:
    return a["start"] < b["end"] and b["start"] < a["end"]


def test_concurrent_jobs_never_share_a_device(tmp_path):
    env = _env(tmp_path, "fake0,fake1,fake2")
    procs = [_start(tmp_path, env, f"j{i}", 1, 0.6) for i in range(6)]
    for proc, _ in procs:
        assert proc.wait(timeout=120) == 0
    records = [json.loads(out.read_text()) for _, out in procs]
    for record in records:
        assert record["devices"] in ("fake0", "fake1", "fake2")
    pairs = [(a, b) for i, a in enumerate(records) for b in records[i + 1 :] if _overlap(a, b)]
    assert pairs, "no two jobs ran at once: the test shows nothing"
    for a, b in pairs:
        assert a["devices"] != b["devices"], (a, b)
    # six jobs of one GPU on three devices: never more than three at once
    assert (
        max(sum(r["start"] <= t < r["end"] for r in records) for t in (r["start"] for r in records))
        <= 3
    )


def test_a_job_killed_with_sigkill_gives_its_devices_back(tmp_path):
    env = _env(tmp_path, "fake0,fake1")
    holder, holder_out = _start(tmp_path, env, "holder", 2, 3600)
    _wait_for(holder_out.with_suffix(".ready"))
    assert holder_out.with_suffix(".ready").read_text() == "fake0,fake1"
    waiter, waiter_out = _start(tmp_path, env, "waiter", 1, 0.1)
    time.sleep(1.5)
    assert not waiter_out.with_suffix(".ready").exists(), (
        "the second job ran while the first held every device"
    )
    killed = time.time()
    os.kill(holder.pid, signal.SIGKILL)
    assert holder.wait(timeout=30) == -signal.SIGKILL
    assert waiter.wait(timeout=60) == 0
    record = json.loads(waiter_out.read_text())
    assert record["devices"] == "fake0" and record["start"] >= killed


def test_a_job_needing_two_of_two_waits_for_both(tmp_path):
    env = _env(tmp_path, "fake0,fake1")
    first, first_out = _start(tmp_path, env, "one", 1, 1.5)
    _wait_for(first_out.with_suffix(".ready"))
    both, both_out = _start(tmp_path, env, "both", 2, 0.1)
    assert first.wait(timeout=60) == 0 and both.wait(timeout=60) == 0
    one, two = json.loads(first_out.read_text()), json.loads(both_out.read_text())
    assert two["devices"] == "fake0,fake1"
    assert two["start"] >= one["end"], "the two-GPU job started while one of its devices was held"
    # it held nothing while it waited: the log says it waited, with the holder
    assert "waits for 2 free GPU(s)" in both_out.with_suffix(".log").read_text()


def test_all_or_nothing_and_release(tmp_path):
    pool = devices.DevicePool(["a", "b"], tmp_path)
    first = pool.try_acquire(1, "first")
    assert first is not None and first.devices == ["a"]
    assert pool.try_acquire(2, "second") is None
    # the failed try holds nothing: the other device is still free
    other = pool.try_acquire(1, "third")
    assert other is not None and other.devices == ["b"]
    assert "third" in pool.holder("b")
    first.release()
    other.release()
    with pool.acquire(2, "fourth") as lease:
        assert lease.devices == ["a", "b"]
    with pytest.raises(TimeoutError, match="were not free"), pool.acquire(2, "x"):
        pool.acquire(1, "y", timeout=0.3, poll=0.05)


def test_more_devices_than_the_pool_is_an_error(tmp_path):
    pool = devices.DevicePool(["0", "1"], tmp_path)
    with pytest.raises(devices.DevicePoolError, match="needs 3 GPUs; ISQAFLOW_GPUS names 2"):
        pool.acquire(3, "job big")


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "expected comma-separated"),
        ("0,,1", "expected comma-separated"),
        ("0,1,0", "listed twice"),
        ("0;1", "characters other"),
    ],
)
def test_bad_device_ids_are_refused(text, message):
    with pytest.raises(devices.DevicePoolError, match=message):
        devices.parse_ids(text)


def test_no_pool_under_slurm_without_gpus_or_without_ids(tmp_path):
    base = {devices.GPUS_ENV: "0,1", devices.POOL_ENV: str(tmp_path)}
    slurm = {**base, "SLURM_JOB_ID": "17", "CUDA_VISIBLE_DEVICES": "3"}
    assert devices.assign_job_devices(1, "job", slurm) is None
    assert slurm["CUDA_VISIBLE_DEVICES"] == "3"  # SLURM's choice stands
    assert devices.assign_job_devices(0, "job", dict(base)) is None
    assert devices.assign_job_devices(1, "job", {}) is None
    env = dict(base)
    lease = devices.assign_job_devices(2, "job", env)
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1"
    lease.release()


def test_inside_an_allocation_its_devices_are_the_pool(tmp_path):
    # salloc --gpus=4: SLURM_JOB_ID set, and SLURM's CUDA_VISIBLE_DEVICES for every process
    env = {"SLURM_JOB_ID": "17", "CUDA_VISIBLE_DEVICES": "0,1,2,3", "SLURM_JOB_GPUS": "4,5,6,7"}
    env[devices.POOL_ENV] = str(tmp_path)
    assert devices.adopt_allocation(env) == ["0", "1", "2", "3"]  # what CUDA resolves here
    assert env[devices.GPUS_ENV] == "0,1,2,3" and env[devices.ALLOCATION_ENV] == "17"
    assert not devices.under_slurm(env)
    assert devices.pool_gpu_limit(None, env) == 4
    leases, given = [], []
    for n in range(4):  # four jobs of the run at once: one device each, never the first for all
        job_env = dict(env)
        leases.append(devices.assign_job_devices(1, f"job{n}", job_env, timeout=1))
        given.append(job_env["CUDA_VISIBLE_DEVICES"])
    assert sorted(given) == ["0", "1", "2", "3"]
    with pytest.raises(TimeoutError):  # a fifth waits: the allocation has no more
        devices.assign_job_devices(1, "job4", dict(env), timeout=0.3)
    for lease in leases:
        lease.release()
    # a job SLURM started on its own (sbatch, the shell's environment exported): SLURM's choice
    sbatch = {**env, "SLURM_JOB_ID": "18", "CUDA_VISIBLE_DEVICES": "0"}
    assert devices.under_slurm(sbatch)
    assert devices.assign_job_devices(1, "job", sbatch) is None
    assert sbatch["CUDA_VISIBLE_DEVICES"] == "0"


@pytest.mark.parametrize(
    ("granted", "expected"),
    [
        ({"SLURM_STEP_GPUS": "2,3", "SLURM_JOB_GPUS": "0,1,2,3"}, ["2", "3"]),
        ({"SLURM_JOB_GPUS": "1,3"}, ["1", "3"]),
        ({"CUDA_VISIBLE_DEVICES": "GPU-aa,GPU-bb", "SLURM_JOB_GPUS": "1,3"}, ["GPU-aa", "GPU-bb"]),
        ({devices.GPUS_ENV: "5", "CUDA_VISIBLE_DEVICES": "0,1"}, ["5"]),  # named: it stands
        ({"CUDA_VISIBLE_DEVICES": "NoDevFiles"}, None),  # a CPU allocation: no pool
        ({}, None),
    ],
)
def test_the_pool_an_allocation_grants(granted, expected):
    env = {"SLURM_JOB_ID": "9", **granted}
    assert devices.adopt_allocation(env) == expected
    assert (env.get(devices.ALLOCATION_ENV) == "9") is (expected is not None)
    assert devices.adopt_allocation({devices.GPUS_ENV: "0,1"}) is None  # outside an allocation


def test_the_global_gpu_resource_follows_the_pool():
    assert devices.pool_gpu_limit(None, {}) is None
    assert devices.pool_gpu_limit(None, {devices.GPUS_ENV: "0,1,2,3"}) == 4
    assert devices.pool_gpu_limit(2, {devices.GPUS_ENV: "0,1,2,3"}) == 2
    with pytest.raises(devices.DevicePoolError, match="gpu=5 .* names 4"):
        devices.pool_gpu_limit(5, {devices.GPUS_ENV: "0,1,2,3"})


# ----------------------------------------------------------------------------- through Snakemake

SNAKEFILE = """
import sys
sys.path.insert(0, {src!r})
from isqaflow.devices import use_gpu_pool

use_gpu_pool(workflow)


rule all:
    input:
        expand("out/one{{i}}.json", i=range(4)),
        "out/two.json",


rule one:
    output:
        "out/one{{i}}.json",
    resources:
        gpu=1,
    script:
        "record.py"


rule two:
    output:
        "out/two.json",
    resources:
        gpu=2,
    script:
        "record.py"
"""

RECORD = """
import json, os, time
from isqaflow import runtime

with runtime.job(snakemake):
    start = time.time()
    time.sleep(1.0)
    with open(snakemake.output[0], "w") as f:
        json.dump({"gpus": snakemake.resources.gpu, "devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
                   "start": start, "end": time.time()}, f)
"""


def test_workstation_profile_gives_each_snakemake_job_its_own_devices(tmp_path):
    _run_workstation_profile(tmp_path, _env(tmp_path, "g0,g1"))


@pytest.mark.parametrize("granted", ["CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS"])
def test_inside_an_allocation_each_snakemake_job_gets_its_own_granted_devices(tmp_path, granted):
    # `salloc --gpus=2`, then the workstation profile: no ISQAFLOW_GPUS, the allocation's ids
    env = _env(tmp_path, "")
    del env[devices.GPUS_ENV]
    env.update({"SLURM_JOB_ID": "4242", granted: "g0,g1"})
    _run_workstation_profile(tmp_path, env)


def _run_workstation_profile(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "Snakefile").write_text(SNAKEFILE.format(src=str(SRC)))
    (tmp_path / "record.py").write_text(RECORD)
    snakemake = Path(sys.executable).with_name("snakemake")
    run = subprocess.run(
        [
            str(snakemake),
            "--profile",
            str(ROOT / "profiles" / "workstation"),
            "--cores",
            "4",
            "--workflow-profile",
            "none",
        ],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    records = [json.loads(p.read_text()) for p in sorted((tmp_path / "out").glob("*.json"))]
    assert len(records) == 5
    for record in records:
        assert len(record["devices"].split(",")) == record["gpus"]
        assert set(record["devices"].split(",")) <= {"g0", "g1"}
    pairs = [(a, b) for i, a in enumerate(records) for b in records[i + 1 :] if _overlap(a, b)]
    assert pairs, "no two jobs ran at once: the test shows nothing"
    for a, b in pairs:
        assert not set(a["devices"].split(",")) & set(b["devices"].split(",")), (a, b)
    # Snakemake's gpu=2 (set from ISQAFLOW_GPUS): no job waited for the pool
    for log in (tmp_path / ".snakemake" / "log").glob("*.log"):
        assert "waits for" not in log.read_text()


# ----------------------------------------------------------------------------- a GPU job without a GPU


def _gpu_job(tmp_path: Path, gpus: int):
    smk = SimpleNamespace(
        log=[],
        threads=1,
        rule="drfr_judge",
        wildcards={"judge": "vicuna"},
        output=[str(tmp_path / "out.jsonl")],
        resources=SimpleNamespace(gpu=gpus),
    )
    return runtime.job(smk)


def test_planned_device():
    assert devices.planned_device("auto", job_gpus=1, cuda_available=True, model="m") == "cuda"
    assert devices.planned_device("cpu", job_gpus=1, cuda_available=False, model="m") == "cpu"
    assert devices.planned_device("auto", job_gpus=0, cuda_available=False, model="m") == "cpu"
    assert devices.planned_device(None, job_gpus=0, cuda_available=False, model="m") == "cpu"
    with pytest.raises(
        devices.NoGPUError,
        match=r"job drfr_judge .* 2 GPU\(s\) for model m\b.*models\.m\.device: cpu",
    ):
        devices.planned_device(
            "auto", job_gpus=2, cuda_available=False, model="m", job="job drfr_judge {}"
        )


@pytest.mark.skipif(
    __import__("torch").cuda.is_available(), reason="checks a machine without a CUDA device"
)
def test_an_in_process_model_in_a_gpu_job_without_a_gpu_fails_naming_job_and_model(
    tmp_path, tiny_causal, monkeypatch
):
    from isqaflow.models.inprocess.hf import HFModel

    monkeypatch.delenv(devices.GPUS_ENV, raising=False)
    message = r"job drfr_judge \{'judge': 'vicuna'\}.*model judge-7b.*models\.judge-7b\.device: cpu"
    with pytest.raises(devices.NoGPUError, match=message), _gpu_job(tmp_path, 1):
        HFModel(str(tiny_causal), name="judge-7b")
    with _gpu_job(tmp_path, 1):  # on the CPU on purpose
        assert HFModel(str(tiny_causal), name="judge-7b", device="cpu").device == "cpu"
    with _gpu_job(tmp_path, 0):  # no GPU planned (the embedded default): the CPU, as before
        assert HFModel(str(tiny_causal), name="judge-7b").device == "cpu"


@pytest.mark.skipif(
    __import__("torch").cuda.is_available(), reason="checks a machine without a CUDA device"
)
def test_retrievers_in_a_gpu_job_without_a_gpu_fail_and_colbert_gets_its_device(
    tmp_path, monkeypatch
):
    from isqaflow.arena.retrieval import colbert
    from isqaflow.text.embeddings import load_encoder

    monkeypatch.delenv(devices.GPUS_ENV, raising=False)
    seen = []

    def engine(model, device=None, **options):
        seen.append(device)
        raise RuntimeError("stop here")

    monkeypatch.setattr(colbert, "pylate_engine", engine)
    passages = [SimpleNamespace(id="p1", doc_id="d1", text="a passage")]
    with pytest.raises(RuntimeError, match="stop here"):
        colbert.build_colbert_index(passages, tmp_path / "index")
    assert seen == ["cpu"]  # explicit, not left to PyLate
    with _gpu_job(tmp_path, 1):
        with pytest.raises(
            devices.NoGPUError, match="colbert-ir/colbertv2.0.*arena.retrievers.<name>.device: cpu"
        ):
            colbert.build_colbert_index(passages, tmp_path / "index")
        with pytest.raises(devices.NoGPUError, match="all-MiniLM-L6-v2"):
            load_encoder("all-MiniLM-L6-v2")
        with pytest.raises(RuntimeError, match="stop here"):
            colbert.build_colbert_index(passages, tmp_path / "index", device="cpu")
    assert seen == ["cpu", "cpu"]


# ----------------------------------------------------------------------------- the paper grid on a workstation


@pytest.fixture(scope="module")
def paper_workdir(tmp_path_factory):
    from workflow_utils import copy_repo

    workdir = copy_repo(tmp_path_factory.mktemp("paper-workstation"))
    stub = workdir / "resources/local/scimrc/scimrc_train_dev.json"
    stub.parent.mkdir(parents=True)
    stub.write_text("[]\n")
    return workdir


@pytest.mark.parametrize("ids, ok", [("0,1", False), ("0,1,2,3,4,5,6,7", True)])
def test_paper_grid_on_a_workstation_plans_only_what_its_gpus_hold(
    paper_workdir, monkeypatch, ids, ok
):
    """Snakemake cuts a job's gpu request down to --resources gpu without a word; the workflow
    refuses instead, at DAG build, naming the job (a 4-GPU tensor-parallel server on 2 GPUs fails)."""
    from workflow_utils import snakemake

    monkeypatch.setenv("OPENAI_API_KEY", "placeholder-for-a-dry-run")
    monkeypatch.setenv(devices.GPUS_ENV, ids)
    result = snakemake(
        paper_workdir,
        "-n",
        "--profile",
        "profiles/workstation",
        "--configfile",
        "config/paper.yaml",
        timeout=300,
    )
    text = result.stdout + result.stderr
    if ok:
        assert result.returncode == 0, text[-3000:]
        assert "drfr_responses" in text
    else:
        assert result.returncode != 0
        assert "needs 4 GPUs" in text and "this run has gpu=2" in text, text[-3000:]


# A job that starts a model server (a stand-in that ignores SIGTERM, as a slow engine would) and is
# then killed: its watchdog stops the orphaned server, and holds the job's devices until it has.
SERVER_JOB = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from types import SimpleNamespace
    from isqaflow import runtime
    from isqaflow.models.served.process import ManagedServer

    out = Path(sys.argv[1])
    smk = SimpleNamespace(log=[str(out.with_suffix(".log"))], threads=1, rule="fake_served_job", wildcards={},
                          output=[str(out)], resources=SimpleNamespace(gpu=1))
    up = out.with_suffix(".up")
    server = [sys.executable, "-c", "import pathlib, signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
              "pathlib.Path(sys.argv[1]).touch(); time.sleep(600)", str(up)]
    with runtime.job(smk):
        started = ManagedServer(server, name="stand-in", port=1, probe_model="m", stop_timeout=2.0).start()
        while not up.exists():  # the stand-in ignores SIGTERM from here on
            time.sleep(0.02)
        out.with_suffix(".ready").write_text(str(started.pgid))
        time.sleep(600)
""")


def test_after_kill_9_the_devices_stay_taken_until_the_orphaned_server_is_gone(tmp_path):
    from isqaflow.models.served.process import group_alive

    env = _env(tmp_path, "fake0")
    out = tmp_path / "served.json"
    job = subprocess.Popen([sys.executable, "-c", SERVER_JOB, str(out)], env=env)
    _wait_for(out.with_suffix(".ready"))
    pgid = int(out.with_suffix(".ready").read_text())
    pool = devices.DevicePool(["fake0"], tmp_path / "pool")
    assert pool.try_acquire(1, "test") is None
    os.kill(job.pid, signal.SIGKILL)
    job.wait(timeout=30)
    time.sleep(0.3)
    assert group_alive(pgid), "the stand-in server should outlive the job for its stop timeout"
    assert pool.try_acquire(1, "test") is None, (
        "the device was free while the orphaned server still ran"
    )
    with pool.acquire(1, "test", timeout=60, poll=0.05) as lease:
        assert lease.devices == ["fake0"]
        assert not group_alive(pgid), "the device came back before the orphaned server was gone"
