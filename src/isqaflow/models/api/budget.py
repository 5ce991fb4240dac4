"""The run's API budget at run time: a ledger shared by every job, checked before every call.

The workflow exports :data:`ENV` at DAG build (``rules/common.smk``; a SLURM job re-reads the
Snakefile, so it has it too): the ledger's path (``results/spend/ledger.json``), ``budget:``
of the config and the prices of its API models.  Before each request an API backend
(:mod:`.openai`) reserves the request's bound -- (estimated prompt + ``max_tokens``) x the
higher of the model's two prices -- under an exclusive lock of the ledger, and the
reservation is refused (:class:`BudgetExceeded`, before anything is sent) when what was spent
plus what is reserved plus this bound would cross ``budget.dollars`` or the stage's
``budget.stages.<rule>``.  When the reply comes the reservation becomes the cost of the tokens
the server reports.  The ledger outlives the run: a job stopped by the budget is rerun after
the budget is raised, its call cache answers what it had done, and the ledger goes on from
what was spent.  Reservations of a process that died (same host) are dropped when read.

No budget, no price, or no :data:`ENV`: nothing is checked or written.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from isqaflow import runtime
from isqaflow.backends import is_priced

ENV = "ISQAFLOW_SPEND"
_lock = threading.Lock()  # threads of one job share the process's file lock


class BudgetExceeded(RuntimeError):
    """The next call would cross the run's budget; raise ``budget:`` and rerun (the call cache keeps the rest)."""


def settings() -> dict[str, Any] | None:
    raw = os.environ.get(ENV)
    return json.loads(raw) if raw else None


def environment(ledger: str | Path, budget: dict[str, Any] | None, models: dict[str, Any]) -> str:
    """The value of :data:`ENV` for a config: its budget, its API models' prices by model id, and
    the directory of the accounts' shared rate-limit windows (:mod:`.rate_limit`), beside the ledger."""
    prices = {
        entry["model"]: entry["price"]
        for name, entry in models.items()
        if is_priced(entry, name) and entry.get("price")
    }
    return json.dumps(
        {
            "ledger": str(Path(ledger).resolve()),
            "budget": budget or {},
            "prices": prices,
            "rate_limits": str(Path(ledger).resolve().parent / "rate_limits"),
        },
        sort_keys=True,
    )


def _alive(entry: dict[str, Any]) -> bool:
    if entry.get("host") != socket.gethostname():
        return time.time() - entry.get("time", 0) < 3600  # another host's: kept for an hour
    try:
        os.kill(int(entry["pid"]), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def _ledger(path: Path) -> Iterator[dict[str, Any]]:
    """The ledger, read and written back under an exclusive lock (fcntl, also across hosts on NFS)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with _lock, open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX)
        try:
            state = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
            state.setdefault("spent", {})
            state["reserved"] = {
                k: v for k, v in (state.get("reserved") or {}).items() if _alive(v)
            }
            yield state
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(state, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            os.replace(tmp, path)
        finally:
            fcntl.lockf(lock, fcntl.LOCK_UN)


def spent(path: str | Path) -> dict[str, float]:
    """Dollars spent per rule so far, from the ledger (empty when there is none)."""
    path = Path(path)
    if not path.exists():
        return {}
    return {
        k: float(v)
        for k, v in (json.loads(path.read_text(encoding="utf-8")).get("spent") or {}).items()
    }


def _cost(price: dict[str, float], input_tokens: int, output_tokens: int) -> float:
    return (
        input_tokens * price["input_per_million"] + output_tokens * price["output_per_million"]
    ) / 1e6


def reserve(model_id: str, tokens: int) -> str | None:
    """Reserve a request's bound of ``tokens`` before it is sent; None when nothing is checked.

    Raises :class:`BudgetExceeded` naming the model, the stage and the figures."""
    conf = settings()
    price = (conf or {}).get("prices", {}).get(model_id)
    if not conf or not price:
        return None
    job = runtime.current_job()
    rule = job.rule if job else "?"
    bound = tokens * max(price["input_per_million"], price["output_per_million"]) / 1e6
    budget = conf.get("budget") or {}
    with _ledger(Path(conf["ledger"])) as state:
        reserved = state["reserved"].values()
        total = sum(state["spent"].values()) + sum(r["dollars"] for r in reserved)
        stage = state["spent"].get(rule, 0.0) + sum(
            r["dollars"] for r in reserved if r["rule"] == rule
        )
        limits = [("budget.dollars", budget.get("dollars"), total)]
        limits.append((f"budget.stages.{rule}", (budget.get("stages") or {}).get(rule), stage))
        for key, limit, used in limits:
            if limit is not None and used + bound > limit:
                raise BudgetExceeded(
                    f"{key}: the next call of {model_id} in {rule} (up to ${bound:.4f}) would cross ${limit:,.2f} "
                    f"(spent and in flight: ${used:,.4f}); no request was sent.  Raise {key} in the config and "
                    "rerun: the call cache keeps every call made, the ledger what they cost"
                )
        ticket = uuid.uuid4().hex
        state["reserved"][ticket] = {
            "rule": rule,
            "dollars": bound,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "time": time.time(),
        }
    return ticket


def settle(ticket: str | None, model_id: str, input_tokens: int, output_tokens: int) -> None:
    """Replace a reservation by the cost of the tokens the server reported (0, 0: a failed request)."""
    conf = settings()
    if ticket is None or not conf:
        return
    price = conf["prices"][model_id]
    with _ledger(Path(conf["ledger"])) as state:
        entry = state["reserved"].pop(ticket, None)
        rule = (
            entry["rule"]
            if entry
            else (runtime.current_job().rule if runtime.current_job() else "?")
        )
        state["spent"][rule] = state["spent"].get(rule, 0.0) + _cost(
            price, input_tokens, output_tokens
        )
