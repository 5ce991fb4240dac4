"""Hub weights fetched once, where the network is, before any job that loads them.

At paper scale the local models are Hugging Face Hub repositories (``models.<name>.model``
such as ``meta-llama/Llama-2-7b-chat-hf``).  Rule ``fetch_weights`` downloads each one
with :func:`huggingface_hub.snapshot_download` at its configured ``revision`` into the
shared cache (``weights.cache_dir``, else Hugging Face's own: ``$HF_HUB_CACHE`` /
``$HF_HOME/hub``), on the submit host by default (compute nodes often have no internet),
and writes a record: the repository, the revision asked for, the commit it resolved to,
the files and a fingerprint of their contents.  Every job that loads the model depends on
that record and runs with ``HF_HUB_OFFLINE=1`` (:mod:`isqaflow.runtime`), so no job
downloads tens of GB itself or races others on the cache.

Gated repositories (Llama-2, Llama-3, Mistral) need an account that accepted the licence
and its token in ``HF_TOKEN``: it is read from the environment and never logged or
recorded.  A gated, private or missing repository fails its fetch job with
:class:`WeightsError` naming the repository and what to do.

Only the files the backends load come down (:func:`select_files`, passed to
``snapshot_download`` as ``allow_patterns``): in each folder the ``.safetensors`` weights,
or the ``.bin`` ones where the folder has no ``.safetensors``; never another weight
format (``.pth``, ``.pt``, ``.ckpt``, ``.h5``, ``.msgpack``, ``.onnx``, ``.gguf``, ...), the
``original/`` folder (Meta's ``.pth`` checkpoints) or ``consolidated*`` files (Mistral's
own format); every other file (configs, tokenizers, chat templates, remote code, adapter
and sentence-transformers configs) is kept.  A Llama-3-70B repository holds its weights
twice over (``original/*.pth``), Mistral's and older ones hold both ``.bin`` and
``.safetensors``.  The record lists the files it fetched, and the fingerprint covers those.

The fingerprint needs no second read of the weights: the cache stores each file as a
blob named by its content hash (SHA-256 for LFS files, the git blob id otherwise), so
the sorted (path, size, blob) triples identify the snapshot's contents.
"""

from __future__ import annotations

import glob
import hashlib
import json
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from isqaflow.backends import backend_of

log = logging.getLogger(__name__)

TOKEN_ENV = "HF_TOKEN"


class WeightsError(RuntimeError):
    """A repository's weights cannot be fetched; the message says why and what to do."""


_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)?$")


def is_hub_id(model: str, workdir: str | os.PathLike = ".") -> bool:
    """``owner/name`` on the Hub, not a path on disk (as the config check reads it: a path
    that exists, or whose first folder exists here, such as ``resources/x``, is local)."""
    root = Path(workdir)
    return (
        bool(_HUB_ID.match(model))
        and not (root / model).exists()
        and not (root / model.split("/", 1)[0]).is_dir()
    )


RETRIEVER_PREFIX = "retriever-"


def hub_models(
    models: Mapping[str, Mapping[str, Any]],
    retrievers: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, dict[str, Any]]:
    """What rule fetch_weights fetches, by name: the ``models:`` entries whose weights come
    from the Hub (local backends, not converted from a package, ``model`` a Hub id), and the
    arena retrievers whose encoder is an ``owner/name`` Hub repository (ColBERTv2), as
    ``retriever-<name>`` (a bare name such as ``all-MiniLM-L6-v2`` is a packaged model)."""
    found = {
        name: {"repo": spec["model"], "revision": spec.get("revision")}
        for name, spec in models.items()
        if backend_of(spec, name).hub_weights
        and "convert" not in spec
        and isinstance(spec.get("model"), str)
        and is_hub_id(spec["model"])
    }
    for name, spec in (retrievers or {}).items():
        model = spec.get("model")
        if (
            spec.get("backend") != "bm25"
            and isinstance(model, str)
            and "/" in model
            and is_hub_id(model)
        ):
            found[RETRIEVER_PREFIX + name] = {"repo": model, "revision": spec.get("revision")}
    return found


# weight formats no backend here loads (vLLM and transformers read .safetensors, else .bin)
OTHER_WEIGHTS = (
    ".pth",
    ".pt",
    ".ckpt",
    ".h5",
    ".msgpack",
    ".onnx",
    ".onnx_data",
    ".gguf",
    ".tflite",
    ".ot",
    ".mlmodel",
    ".pb",
    ".nemo",
)
SKIPPED_FOLDERS = ("original",)


def select_files(files: list[str]) -> list[str]:
    """The repository files a backend loads (module docstring), sorted."""
    safetensors_folders = {PurePosixPath(f).parent for f in files if f.endswith(".safetensors")}
    chosen = []
    for name in files:
        path = PurePosixPath(name)
        if path.parts[0] in SKIPPED_FOLDERS or path.name.startswith("consolidated"):
            continue
        if name.endswith(OTHER_WEIGHTS):
            continue
        if name.endswith((".bin", ".bin.index.json")) and path.parent in safetensors_folders:
            continue
        chosen.append(name)
    return sorted(chosen)


def fingerprint(snapshot: Path, files: list[str] | None = None) -> tuple[str, list[dict[str, Any]]]:
    """sha256 over the sorted (path, size, blob name) triples of the snapshot's ``files`` (default:
    every file in it), and the triples."""
    paths = (
        sorted(p for p in snapshot.rglob("*") if p.is_file())
        if files is None
        else sorted(snapshot / f for f in files)
    )
    triples = []
    for path in paths:
        blob = path.resolve()
        triples.append(
            {
                "path": path.relative_to(snapshot).as_posix(),
                "size": blob.stat().st_size,
                "blob": blob.name,
            }
        )
    digest = hashlib.sha256(json.dumps(triples, sort_keys=True).encode()).hexdigest()
    return f"sha256:{digest}", triples


def _advice(repo: str, error: Exception) -> str:
    from huggingface_hub.errors import (
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    has_token = bool(os.environ.get(TOKEN_ENV))
    page = f"https://huggingface.co/{repo}"
    if isinstance(error, GatedRepoError):
        if has_token:
            return (
                f"{repo} is a gated repository and the account of $HF_TOKEN has no access: "
                f"accept its licence at {page} with that account, then rerun"
            )
        return (
            f"{repo} is a gated repository: accept its licence at {page} with your Hugging Face "
            f"account, create a read token (https://huggingface.co/settings/tokens) and "
            f"export {TOKEN_ENV}=<token> before the run"
        )
    if isinstance(error, RevisionNotFoundError):
        return f"{repo} has no revision like this one: check the model's revision in the config"
    if isinstance(error, RepositoryNotFoundError):
        return (
            f"{repo} was not found on the Hub (or is private"
            + ("" if has_token else f" and {TOKEN_ENV} is not set")
            + "): check the model's name in the config"
            + ("" if has_token else f", or export {TOKEN_ENV}=<token> of an account with access")
        )
    if isinstance(error, LocalEntryNotFoundError):
        return (
            f"{repo} is not in the cache and the Hub cannot be reached (HF_HUB_OFFLINE=1 or no "
            f"network): run the fetch where the network is, or fill the cache"
        )
    return f"{repo}: {type(error).__name__}"


def _listing(repo: str, revision: str | None, token: str | None) -> list[str] | None:
    """The repository's files at ``revision``; None offline or where the listing fails (then
    ``snapshot_download`` reads the cache or raises the error :func:`_advice` explains, as
    before; what a cached snapshot holds is selected the same way for the record)."""
    from huggingface_hub import HfApi, constants
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.utils import OfflineModeIsEnabled

    if constants.HF_HUB_OFFLINE:
        return None
    try:
        return list(HfApi().list_repo_files(repo, revision=revision, token=token))
    except (HfHubHTTPError, OfflineModeIsEnabled) as error:
        log.warning("%s: cannot list its files (%s)", repo, type(error).__name__)
        return None
    except Exception as error:  # the Hub unreachable: httpx's/requests' connection errors
        if type(error).__module__.split(".")[0] not in ("httpx", "httpx2", "requests", "urllib3"):
            raise
        log.warning("%s: cannot list its files (%s)", repo, type(error).__name__)
        return None


def fetch(
    repo: str,
    revision: str | None,
    record: str | os.PathLike,
    cache_dir: str | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    """Download ``repo`` at ``revision`` (default: the main branch) and write its record."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    token = os.environ.get(TOKEN_ENV) or None  # never logged
    log.info(
        "fetching %s at %s into %s (token: %s)",
        repo,
        revision or "main",
        cache_dir or "the HF cache",
        "set" if token else "none",
    )
    try:
        listing = _listing(repo, revision, token)
        patterns = None if listing is None else [glob.escape(f) for f in select_files(listing)]
        path = snapshot_download(
            repo, revision=revision, cache_dir=cache_dir, token=token, allow_patterns=patterns
        )
    except (HfHubHTTPError, LocalEntryNotFoundError) as error:
        where = f"model {name!r} ({repo})" if name else repo
        raise WeightsError(f"{where}: {_advice(repo, error)}") from None
    snapshot = Path(path)
    present = [p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*") if p.is_file()]
    digest, files = fingerprint(snapshot, select_files(present))
    result = {
        "model": name,
        "repo": repo,
        "revision": revision,
        "commit": snapshot.name,
        "fingerprint": digest,
        "files": files,
        "bytes": sum(f["size"] for f in files),
        "cache_dir": str(cache_dir) if cache_dir else None,
    }
    out = Path(record)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    tmp.replace(out)
    log.info(
        "%s at commit %s: %d files, %.1f GB, %s",
        repo,
        snapshot.name,
        len(files),
        result["bytes"] / 1e9,
        digest,
    )
    return result
