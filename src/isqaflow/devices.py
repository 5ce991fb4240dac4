"""The GPUs of a job on one machine without a scheduler, and the check that a GPU job has one.

**The device pool** (``profiles/workstation``).  Under SLURM each job gets its own GPUs
(SLURM sets ``CUDA_VISIBLE_DEVICES``).  On a workstation nothing does: every job would see
every GPU and put its models on GPU 0.  With ``ISQAFLOW_GPUS`` naming the machine's devices
(``0,1,2,3``, or GPU UUIDs), a job that asks for ``gpu: N`` draws N of them from the pool
when it starts (:func:`assign_job_devices`, called by :func:`isqaflow.runtime.job`) and
sets ``CUDA_VISIBLE_DEVICES`` to them, so its servers (the GPU plan's per-server lists are
indices into it) and its in-process models (``cuda`` = its first device) use those devices
only.  Each device is one lock file in the pool directory (``ISQAFLOW_GPU_POOL``, default
``<tmp>/isqaflow-gpus-<uid>``) held with ``flock`` by the job process: it is given back when
the job ends, however it ends -- a process killed with SIGKILL closes its files, and the
kernel drops its locks.  Nothing is a marker file that a crash could leave behind.  A model
server's watchdog (:mod:`isqaflow.models.served.process`) holds the same locks, so after
``kill -9`` of a job its devices stay taken until its orphaned server has been stopped.  A job
takes all its devices or none (it never holds some while waiting for the rest), so two jobs
cannot block each other; one that finds too few free waits, logging who holds them.
Snakemake's global resource ``gpu`` (``--resources gpu=N``; the workflow sets it from
``ISQAFLOW_GPUS`` when the command line does not) keeps the number of GPU jobs running at
once within the pool, so a job rarely waits.  Under SLURM's executor (each job its own SLURM job, ``SLURM_JOB_ID``
set) the pool is never used: SLURM gave the job its devices.

**The pool inside an allocation** (``salloc --gpus=4``, then the workstation profile): every
job of the run is a process of the one allocation, and SLURM's ``CUDA_VISIBLE_DEVICES`` lists
all four devices for each of them.  There the devices the allocation grants become the pool
(:func:`adopt_allocation`, called when the workflow is parsed): ``CUDA_VISIBLE_DEVICES`` first
(the names CUDA resolves in the allocation: with cgroup-constrained devices SLURM renumbers
them from 0 while ``SLURM_JOB_GPUS`` keeps the node's indices), else ``SLURM_STEP_GPUS``, else
``SLURM_JOB_GPUS``.  The run's process exports them as ``ISQAFLOW_GPUS`` together with the
allocation's job id (``ISQAFLOW_GPU_ALLOCATION``); a job whose ``SLURM_JOB_ID`` is that id
draws from the pool, a job SLURM started on its own (another id, e.g. ``sbatch`` by the SLURM
executor with the submitting shell's environment exported) does not.

**A GPU job without a GPU** (:func:`planned_device`): a model whose device is ``auto`` runs
on CUDA when torch sees a device; in a job that was given GPUs (its ``gpu`` resource) and
sees none, it fails at start naming the job and the model -- a 7B model must not run for
days on the CPU of a node whose GPU is missing.  ``device: cpu`` in the model's (or the
retriever's) entry runs it on the CPU on purpose.  Jobs given no GPU (the embedded default
plans none) run on the CPU as before.

Only the standard library (the workflow's jobs import it before torch).
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import tempfile
import time
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

log = logging.getLogger(__name__)

GPUS_ENV = "ISQAFLOW_GPUS"
POOL_ENV = "ISQAFLOW_GPU_POOL"
SLURM_ENV = "SLURM_JOB_ID"
VISIBLE_ENV = "CUDA_VISIBLE_DEVICES"
ALLOCATION_ENV = "ISQAFLOW_GPU_ALLOCATION"
# where an allocation names the devices it grants, most specific to CUDA first (module docstring)
ALLOCATION_IDS_ENV = (VISIBLE_ENV, "SLURM_STEP_GPUS", "SLURM_JOB_GPUS")


class DevicePoolError(ValueError):
    """The pool cannot serve a job: bad device ids, or a job asking for more devices than it has."""


class NoGPUError(RuntimeError):
    """A job that was given GPUs finds no CUDA device (see :func:`planned_device`)."""


def parse_ids(text: str, source: str = GPUS_ENV) -> list[str]:
    """Device ids from a comma-separated list (``0,1,2,3`` or GPU UUIDs), in order, each once."""
    ids = [part.strip() for part in text.split(",")]
    if not text.strip() or any(not part for part in ids):
        raise DevicePoolError(
            f"{source}={text!r}: expected comma-separated device ids such as 0,1,2,3"
        )
    bad = [part for part in ids if not all(c.isalnum() or c in "-_:" for c in part)]
    if bad:
        raise DevicePoolError(
            f"{source}={text!r}: device id(s) {bad} have characters other than letters, "
            "digits, '-', '_' and ':'"
        )
    repeated = sorted({part for part in ids if ids.count(part) > 1})
    if repeated:
        raise DevicePoolError(f"{source}={text!r}: device id(s) {repeated} listed twice")
    return ids


def default_pool_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"isqaflow-gpus-{os.getuid()}"


@dataclass
class Lease:
    """Devices a job holds (open, flock-ed lock files); :meth:`release` gives them back."""

    devices: list[str]
    _fds: list[int] = field(default_factory=list, repr=False)

    @property
    def fds(self) -> tuple[int, ...]:
        """The open lock files: a child process given them (``pass_fds``) keeps the devices taken
        until it exits too, even when this process is killed (a server's watchdog)."""
        return tuple(self._fds)

    def release(self) -> None:
        while self._fds:
            fd = self._fds.pop()
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class DevicePool:
    """The devices ``ids`` of this machine, one lock file each under ``directory``."""

    def __init__(self, ids: Sequence[str], directory: str | os.PathLike | None = None) -> None:
        if not ids:
            raise DevicePoolError("a device pool needs at least one device id")
        self.ids = list(ids)
        self.directory = Path(directory) if directory else default_pool_dir()

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> DevicePool | None:
        """The pool ``ISQAFLOW_GPUS`` / ``ISQAFLOW_GPU_POOL`` describe; None without ``ISQAFLOW_GPUS``."""
        environ = os.environ if environ is None else environ
        text = environ.get(GPUS_ENV)
        if text is None or not text.strip():
            return None
        return cls(parse_ids(text), environ.get(POOL_ENV) or None)

    def _path(self, device: str) -> Path:
        return self.directory / f"gpu-{device}.lock"

    def holder(self, device: str) -> str:
        """Who last took ``device`` (the lock file's text), for messages."""
        try:
            return self._path(device).read_text(encoding="utf-8").strip() or "?"
        except OSError:
            return "?"

    def try_acquire(self, count: int, owner: str = "") -> Lease | None:
        """``count`` free devices at once, or None (holding nothing) when fewer are free."""
        self.directory.mkdir(parents=True, exist_ok=True)
        lease = Lease([])
        for device in self.ids:
            if len(lease.devices) == count:
                break
            fd = os.open(
                self._path(device), os.O_RDWR | os.O_CREAT, 0o644
            )  # not inherited by children
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as err:
                os.close(fd)
                if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    continue
                lease.release()
                raise
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()} {owner}\n".encode(), 0)
            lease.devices.append(device)
            lease._fds.append(fd)
        if len(lease.devices) == count:
            return lease
        lease.release()  # all or nothing: never hold some while waiting for the rest
        return None

    def acquire(
        self,
        count: int,
        owner: str = "",
        *,
        poll: float = 0.25,
        timeout: float | None = None,
        report_every: float = 60.0,
    ) -> Lease:
        """``count`` devices, waiting until that many are free at once (``timeout`` seconds at most)."""
        if count < 1:
            raise DevicePoolError(f"{owner or 'a job'} asks for {count} devices")
        if count > len(self.ids):
            raise DevicePoolError(
                f"{owner or 'a job'} needs {count} GPUs; {GPUS_ENV} names {len(self.ids)} "
                f"({','.join(self.ids)})"
            )
        start = time.monotonic()
        reported: float | None = None
        while True:
            lease = self.try_acquire(count, owner)
            if lease is not None:
                if reported is not None:
                    log.info(
                        "%s: got GPU(s) %s after %.1f s",
                        owner or "job",
                        ",".join(lease.devices),
                        time.monotonic() - start,
                    )
                return lease
            now = time.monotonic()
            if timeout is not None and now - start >= timeout:
                raise TimeoutError(
                    f"{owner or 'a job'}: {count} of the GPUs {','.join(self.ids)} were not free "
                    f"at once within {timeout:g} s ({self.describe()})"
                )
            if reported is None or now - reported >= report_every:
                log.info(
                    "%s waits for %d free GPU(s) of %s (%s)",
                    owner or "job",
                    count,
                    ",".join(self.ids),
                    self.describe(),
                )
                reported = now
            time.sleep(poll)

    def describe(self) -> str:
        return "; ".join(f"{d}: {self.holder(d)}" for d in self.ids)


def under_slurm(environ: Mapping[str, str] | None = None) -> bool:
    """Whether SLURM gave this job its own devices: a SLURM job that is not a job of a run
    inside the allocation whose devices are the pool (:func:`adopt_allocation`)."""
    environ = os.environ if environ is None else environ
    job_id = environ.get(SLURM_ENV)
    return bool(job_id) and environ.get(ALLOCATION_ENV) != job_id


def allocation_ids(environ: Mapping[str, str] | None = None) -> tuple[str, list[str]] | None:
    """The devices a SLURM allocation grants (``SLURM_JOB_ID`` set) and the variable that
    named them; None outside an allocation or where it names none (a CPU allocation)."""
    environ = os.environ if environ is None else environ
    if not environ.get(SLURM_ENV):
        return None
    for name in ALLOCATION_IDS_ENV:
        text = environ.get(name, "")
        # "NoDevFiles"/"N/A": SLURM's words for a step given no GPU
        if text.strip() and text.strip() not in ("NoDevFiles", "N/A"):
            return name, parse_ids(text, name)
    return None


def adopt_allocation(environ: MutableMapping[str, str] | None = None) -> list[str] | None:
    """In a run on this machine inside a SLURM allocation: the pool is the allocation's
    devices (``ISQAFLOW_GPUS`` when set, else :func:`allocation_ids`), marked in ``environ``
    (``ISQAFLOW_GPUS``, ``ISQAFLOW_GPU_ALLOCATION``) for the jobs it starts.  Returns the
    pool's ids, None outside an allocation or in one without devices (nothing changed)."""
    environ = os.environ if environ is None else environ
    job_id = environ.get(SLURM_ENV)
    if not job_id:
        return None
    if environ.get(GPUS_ENV, "").strip():
        ids = parse_ids(environ[GPUS_ENV])
    else:
        found = allocation_ids(environ)
        if found is None:
            return None
        source, ids = found
        environ[GPUS_ENV] = ",".join(ids)
        log.info(
            "the pool is the allocation %s's devices (%s=%s)", job_id, source, environ[GPUS_ENV]
        )
    environ[ALLOCATION_ENV] = job_id
    return ids


def pool_gpu_limit(given: int | None, environ: Mapping[str, str] | None = None) -> int | None:
    """Snakemake's global ``gpu`` resource for a run on this machine: with ``ISQAFLOW_GPUS``, the
    command line's ``--resources gpu=N`` (at most the pool's size), else the pool's size;
    None without a pool (``given`` stays as it is)."""
    pool = DevicePool.from_environ(environ)
    if pool is None:
        return None
    if given is not None and int(given) > len(pool.ids):
        raise DevicePoolError(
            f"--resources gpu={given} lets Snakemake run jobs that need {given} GPUs at once, but "
            f"{GPUS_ENV} names {len(pool.ids)} ({','.join(pool.ids)}): pass gpu={len(pool.ids)} "
            "or fewer, or leave it out (the workflow then uses the pool's size)"
        )
    return len(pool.ids) if given is None else int(given)


def check_job_gpus(needed: int, limit: int | None, job: str) -> int:
    """A job's GPU count against Snakemake's global ``gpu`` resource (``limit``), at DAG build:
    Snakemake would silently cut a larger request down to the limit, and the job's GPU plan
    (tensor parallelism, one GPU per server) would then not fit the devices it gets."""
    if limit is not None and needed > int(limit):
        raise DevicePoolError(
            f"{job} needs {needed} GPUs (its GPU plan or its stage's resources), but this run "
            f"has gpu={limit} ({GPUS_ENV} or --resources gpu): run it on a machine with "
            f"{needed} GPUs, or lower the stage's needs (gpu_plan, resources)"
        )
    return needed


def use_gpu_pool(workflow) -> int | None:
    """Called when the workflow is parsed (Snakefile): in a run on this machine (not SLURM's
    executor) with ``ISQAFLOW_GPUS`` or inside a SLURM allocation (:func:`adopt_allocation`), Snakemake's global ``gpu`` resource becomes the pool's size
    unless ``--resources gpu=N`` set fewer (more is an error, :class:`DevicePoolError`), so no
    more GPU jobs run at once than there are devices.  Returns the limit (None: nothing set)."""
    if not workflow.is_main_process or not workflow.local_exec:
        return None
    adopt_allocation()
    given = workflow.global_resources.get("gpu").value
    limit = pool_gpu_limit(given)
    if limit is not None and given is None:
        workflow.register_resource("gpu", limit)
    return limit


def assign_job_devices(
    gpus: int, owner: str, environ: MutableMapping[str, str] | None = None, **acquire_options
) -> Lease | None:
    """A job's own devices from the pool, set as ``CUDA_VISIBLE_DEVICES`` in ``environ``.

    None (nothing changed) for a job without GPUs, one SLURM gave its own devices
    (:func:`under_slurm`), or without ``ISQAFLOW_GPUS``.
    """
    environ = os.environ if environ is None else environ
    if gpus <= 0 or under_slurm(environ):
        return None
    pool = DevicePool.from_environ(environ)
    if pool is None:
        return None
    lease = pool.acquire(gpus, owner, **acquire_options)
    environ[VISIBLE_ENV] = ",".join(lease.devices)
    log.info(
        "%s: GPU(s) %s from the pool %s (%s=%s)",
        owner,
        ",".join(lease.devices),
        pool.directory,
        VISIBLE_ENV,
        environ[VISIBLE_ENV],
    )
    return lease


def planned_device(
    device: str | None,
    *,
    job_gpus: int,
    cuda_available: bool,
    model: str,
    job: str = "this job",
    key: str | None = None,
) -> str:
    """The device of a model: an explicit one as given, ``auto`` (or None) CUDA when there is
    one, else the CPU -- except in a job given GPUs, which raises :class:`NoGPUError`."""
    if device not in (None, "", "auto"):
        return device
    if cuda_available:
        return "cuda"
    if job_gpus > 0:
        where = key or f"models.{model}.device"
        raise NoGPUError(
            f"{job}: was given {job_gpus} GPU(s) for model {model}, but torch sees no CUDA device "
            f"({VISIBLE_ENV}={os.environ.get(VISIBLE_ENV, '<unset>')!s}); it would run on the CPU. "
            f"Run it where the GPU is, or set {where}: cpu to use the CPU on purpose"
        )
    return "cpu"
