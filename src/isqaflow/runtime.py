"""What every workflow job does before and after its work.

:func:`job` is the one thing a script in ``scripts/`` uses besides the library call:
it sends log records to the rule's ``log:`` file (and stderr), sets the torch thread
count from the rule's ``threads``, logs start, end and wall time, and gives the path
of the job's own call cache: ``<first output>.calls.sqlite``, beside its outputs
(SQLite locking is unreliable across cluster nodes, so no cache file is shared).
The cache file is not a declared output, so Snakemake keeps it when it deletes the
outputs of a failed or killed job, and the rerun resumes from it.

An expected failure that names its cause itself (:class:`NamedError`: a malformed input
file, with its file, line or record and field) is logged once, as its message without a
traceback, to the log file (which Snakemake prints under ``show-failed-logs``; stderr when
the job has no log), and the job exits with status 1: not the three tracebacks (the log
handler on stderr, Python's, the printed log) of an unexpected error.

Resources that must not outlive the job (a model server the job started, the
job's token-usage record) register a hook with :func:`at_job_exit`; :func:`job`
runs the hooks when the job ends -- normally, on an exception, and on SIGTERM from
the scheduler, which it turns into :class:`JobTerminated` (exit status 143) so the
hooks run before the process exits.

A job whose rule asks for GPUs (``resources: gpu``) on a machine without a scheduler
draws its own devices from the device pool first (:mod:`isqaflow.devices`,
``ISQAFLOW_GPUS``) and gives them back last; :func:`job_device` places a model on them,
and fails the job when it was given GPUs and torch sees none.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from isqaflow import devices
from isqaflow.settings import restore_secrets

log = logging.getLogger("isqaflow")

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


COMMAND_ENV = "ISQAFLOW_SNAKEMAKE_COMMAND"
# "1" when the run may reach the Hugging Face Hub (it was not started with HF_HUB_OFFLINE=1):
# only the jobs that fetch (downloads, rule fetch_weights) use it; every other job is offline.
HUB_ONLINE_ENV = "ISQAFLOW_HUB_ONLINE"


# glibc's allocator in the jobs: CPU inference allocates and frees tensors of up to hundreds of MB
# in every layer (a prefill's attention scores); above glibc's mmap threshold each one is mapped
# afresh, its pages zeroed by the kernel at first touch, and unmapped again.  Kept on the heap
# and reused instead: allocation only, the numbers computed are the same (byte-identical
# answers); one arena answering job: 4.4 -> 2.0 s of system time (AMD EPYC, docs/speed.md).
# Set only where the environment does not set them already.
ALLOCATOR_ENV = {"MALLOC_MMAP_THRESHOLD_": str(2**32), "MALLOC_TRIM_THRESHOLD_": str(2**32)}


def _truthy(value: str | None) -> bool:
    return (value or "").strip().upper() in ("1", "ON", "YES", "TRUE")


def export_workflow_environment(src: str, argv: list[str]) -> None:
    """Called when the workflow is parsed: what every job inherits from the main process.

    * ``PYTHONPATH`` starts with the workflow's own ``src/``, so a job runs the code
      of the checkout it belongs to, whatever else is installed in its environment;
    * the command that started the run, for the provenance manifest (an environment
      variable rather than a rule parameter, so that it never triggers a rerun);
    * ``HF_HUB_OFFLINE=1``: jobs load Hub weights from the cache that rule
      ``fetch_weights`` filled (:mod:`isqaflow.models.weights.hub`), never from the network;
      whether the run itself may reach the Hub is kept in ``ISQAFLOW_HUB_ONLINE`` for the
      jobs that fetch (:func:`allow_hub`);
    * :data:`ALLOCATOR_ENV`, where not set: large tensors kept on glibc's heap, not mapped anew.
    """
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != src]
    os.environ["PYTHONPATH"] = os.pathsep.join([src, *paths])
    os.environ.setdefault(COMMAND_ENV, " ".join(argv))
    os.environ.setdefault(HUB_ONLINE_ENV, "0" if _truthy(os.environ.get("HF_HUB_OFFLINE")) else "1")
    os.environ["HF_HUB_OFFLINE"] = "1"
    for name, value in ALLOCATOR_ENV.items():
        os.environ.setdefault(name, value)


def use_weights_cache(cache_dir: str | os.PathLike | None) -> None:
    """Called when the workflow is parsed: with ``weights.cache_dir`` set, every job (and the
    model servers it starts) reads Hub weights from there (``HF_HUB_CACHE``), where rule
    ``fetch_weights`` put them."""
    if cache_dir:
        os.environ["HF_HUB_CACHE"] = str(Path(cache_dir).resolve())


def allow_hub() -> bool:
    """In a job that fetches from the Hub: lift the workflow's ``HF_HUB_OFFLINE=1`` unless
    the run was started offline.  Call it before huggingface_hub is imported (it reads the
    variable at import; an already imported module is updated too).  Returns whether the
    Hub may be reached."""
    online = (
        os.environ.get(HUB_ONLINE_ENV, "0" if _truthy(os.environ.get("HF_HUB_OFFLINE")) else "1")
        == "1"
    )
    os.environ["HF_HUB_OFFLINE"] = "0" if online else "1"
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:
        constants.HF_HUB_OFFLINE = not online
    return online


class NamedError(Exception):
    """An expected failure whose message says everything (file, line or record, field):
    :func:`job` logs it once, without a traceback, and exits with status 1."""


#: A log record with this attribute set goes to the log file only, not to stderr.
FILE_ONLY = "isqaflow_file_only"


def setup_logging(log_file: str | os.PathLike | None = None, level: int = logging.INFO) -> None:
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file:
        Path(log_file).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_file, mode="w", encoding="utf-8"))
        handlers[0].addFilter(lambda record: not getattr(record, FILE_ONLY, False))
    logging.basicConfig(level=level, format=FORMAT, handlers=handlers, force=True)
    logging.captureWarnings(True)
    for noisy in ("httpx", "httpx2", "urllib3", "filelock", "huggingface_hub"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def set_threads(threads: int) -> None:
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)


def call_cache_of(first_output: str | os.PathLike) -> Path:
    """The call cache of the job whose first output is ``first_output`` (beside it)."""
    first = Path(first_output)
    return first.with_name(first.name + ".calls.sqlite")


@dataclass
class Job:
    rule: str
    threads: int
    outputs: list[str]
    wildcards: dict[str, str] = field(default_factory=dict)
    gpus: int = 0  # the rule's gpu resource (the GPU plan's count for a model stage)
    # the open lock files of the devices the job drew from the pool (isqaflow.devices): a model
    # server's watchdog inherits them, so that after kill -9 of the job the devices stay taken
    # until the watchdog has stopped the orphaned server
    device_locks: tuple[int, ...] = ()

    def label(self) -> str:
        """The job as messages name it: ``job <rule> {wildcards}``."""
        return f"job {self.rule} {self.wildcards}" if self.wildcards else f"job {self.rule}"

    def cache_path(self) -> Path:
        """This job's own call cache, beside its first output."""
        return call_cache_of(self.outputs[0])

    def usage_path(self) -> Path:
        """This job's record of its models (calls, tokens, chat templates), beside its first output."""
        first = Path(self.outputs[0])
        return first.with_name(first.name + ".usage.json")


class JobTerminated(SystemExit):
    """SIGTERM (a scheduler's cancel or time limit) inside :func:`job`: unwinds the job."""


_current: Job | None = None
_exit_hooks: list[Callable[[], None]] = []


def current_job() -> Job | None:
    """The job this process runs, inside :func:`job`; None elsewhere (tests, benchmarks)."""
    return _current


def at_job_exit(hook: Callable[[], None]) -> None:
    """Run ``hook`` when the current job ends, however it ends (hooks run last-in first-out).

    Outside a job it runs at interpreter exit instead.
    """
    if _current is None:
        atexit.register(hook)
    else:
        _exit_hooks.append(hook)


def _raise_terminated(signum, frame) -> None:
    raise JobTerminated(128 + signum)


def _run_exit_hooks() -> None:
    while _exit_hooks:
        hook = _exit_hooks.pop()
        try:
            hook()
        except Exception:  # one failing clean-up must not skip the others
            log.exception("clean-up at job exit failed: %r", hook)


def restore_params(smk: Any) -> None:
    """Put the config's secrets back into the job's params: a rule passes a model's key-bearing
    fields (``base_url?api-key=...``) redacted (:func:`isqaflow.settings.redact_secrets`), so
    that Snakemake never prints or stores them; the job reads them from its config here."""
    params = getattr(smk, "params", None)
    config = getattr(smk, "config", None)
    if params is None or not config or not hasattr(params, "_names"):
        return
    for name, (index, end) in list(params._names.items()):
        if end is not None:
            continue
        restored = restore_secrets(params[index], config)
        params[index] = restored
        setattr(params, name, restored)


@contextlib.contextmanager
def job(smk: Any) -> Iterator[Job]:
    """Set up a Snakemake ``script:`` job; see the module docstring."""
    log_file = smk.log[0] if len(smk.log) else None
    setup_logging(log_file)
    restore_params(smk)
    threads = int(getattr(smk, "threads", 1) or 1)
    set_threads(threads)
    rule = getattr(smk, "rule", "job")
    wildcards = dict(getattr(smk, "wildcards", {}).items()) if hasattr(smk, "wildcards") else {}
    gpus = int(getattr(getattr(smk, "resources", None), "gpu", 0) or 0)
    log.info("start %s %s (threads=%d, gpus=%d)", rule, wildcards, threads, gpus)
    started = time.monotonic()
    global _current
    _current = Job(
        rule=rule,
        threads=threads,
        outputs=[str(o) for o in smk.output],
        wildcards={k: str(v) for k, v in wildcards.items()},
        gpus=gpus,
    )
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if main_thread else None
    try:
        # on a workstation (ISQAFLOW_GPUS, no SLURM): the job's own GPUs from the device pool,
        # given back last, after the job's servers have stopped (hooks run last-in first-out)
        lease = devices.assign_job_devices(gpus, _current.label())
        if lease is not None:
            _current.device_locks = tuple(lease.fds)
            _exit_hooks.append(lease.release)
        yield _current
    except NamedError as err:
        log.error(
            "%s failed after %.1fs: %s",
            rule,
            time.monotonic() - started,
            err,
            extra={FILE_ONLY: log_file is not None},
        )
        raise SystemExit(1) from None
    except BaseException:
        log.exception("%s failed after %.1fs", rule, time.monotonic() - started)
        raise
    finally:
        if main_thread:  # a second SIGTERM must not interrupt the clean-up
            signal.signal(
                signal.SIGTERM,
                lambda signum, frame: log.warning("SIGTERM during clean-up: ignored"),
            )
        try:
            _run_exit_hooks()
        finally:
            _current = None
            if main_thread:
                signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
    log.info("done %s in %.1fs", rule, time.monotonic() - started)


def job_device(device: str | None, *, model: str, key: str | None = None) -> str:
    """The torch device of a model in this process (:func:`isqaflow.devices.planned_device`):
    ``auto`` is CUDA when torch sees a device, else the CPU -- but a job given GPUs that sees
    none fails, naming the job and the model, unless the entry says ``device: cpu``."""
    if device not in (None, "", "auto"):
        return str(device)
    import torch

    current = current_job()
    return devices.planned_device(
        device,
        job_gpus=current.gpus if current else 0,
        cuda_available=torch.cuda.is_available(),
        model=model,
        job=current.label() if current else "this job",
        key=key,
    )
