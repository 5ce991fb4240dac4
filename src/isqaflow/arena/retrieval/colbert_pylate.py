"""The PyLate implementation of :class:`isqaflow.arena.retrieval.colbert.LateInteraction`.

Imported only inside the jobs of rules ``colbert_index`` and ``retrieve_colbert``, which
run in ``envs/colbert.yaml`` (PyLate 1.6.0, fast-plaid 1.4.6.2110, torch 2.11.0); the
main environment never imports it.  A ColBERT checkpoint (``colbert-ir/colbertv2.0`` by
default, a Hugging Face id or a local folder) encodes passages and queries into token
embeddings; fast-plaid's PLAID index holds the passages.

PLAID settings: ``nbits=2`` (the residual compression of the ColBERTv2 paper and its
released indexes; PyLate's default is 4), K-means with a fixed seed and without Triton
kernels (PyLate's own advice for exactly reproducible indexes); PyLate's defaults for
the rest (query length 32, document length 180 tokens: ColBERTv2's).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

from pylate import indexes, models

INDEX_NAME = "plaid"
SEED = 42


class PylateEngine:
    """ColBERT encoding with PyLate's ``models.ColBERT``, PLAID indexing with ``indexes.PLAID``."""

    def __init__(
        self,
        model: str,
        *,
        device: str | None = None,
        nbits: int = 2,
        kmeans_niters: int = 4,
        document_length: int | None = None,
        query_length: int | None = None,
        batch_size: int = 32,
    ) -> None:
        self.model_name = model
        self.device = device
        self.nbits = nbits
        self.kmeans_niters = kmeans_niters
        self.document_length = document_length
        self.query_length = query_length
        self.batch_size = batch_size

    def identity(self) -> dict[str, Any]:
        return {
            "model": self.model_name,
            "pylate": version("pylate"),
            "fast_plaid": version("fast-plaid"),
            "params": {
                "nbits": self.nbits,
                "kmeans_niters": self.kmeans_niters,
                "seed": SEED,
                "document_length": self.document_length,
                "query_length": self.query_length,
            },
        }

    @functools.cached_property
    def model(self):
        lengths = {
            key: value
            for key, value in (
                ("document_length", self.document_length),
                ("query_length", self.query_length),
            )
            if value
        }
        return models.ColBERT(model_name_or_path=self.model_name, device=self.device, **lengths)

    def _index(self, folder: Path, *, override: bool):
        return indexes.PLAID(
            index_folder=str(folder),
            index_name=INDEX_NAME,
            override=override,
            nbits=self.nbits,
            kmeans_niters=self.kmeans_niters,
            seed=SEED,
            use_triton=False,
            show_progress=False,
            device=self.device,
        )

    def _encode(self, texts: Sequence[str], *, is_query: bool):
        return self.model.encode(
            list(texts), is_query=is_query, batch_size=self.batch_size, show_progress_bar=False
        )

    def build(self, folder: Path, ids: Sequence[str], texts: Sequence[str]) -> None:
        index = self._index(folder, override=True)
        index.add_documents(
            documents_ids=list(ids), documents_embeddings=self._encode(texts, is_query=False)
        )

    def search(self, folder: Path, texts: Sequence[str], k: int) -> list[list[tuple[str, float]]]:
        index = self._index(folder, override=False)
        rows = index(self._encode(texts, is_query=True), k=k)
        return [[(str(hit["id"]), float(hit["score"])) for hit in row] for row in rows]
