"""Values of different sections that contradict each other: sample sizes against the
datasets they are drawn from, and retriever options against their backend.

Each of these used to surface late or not at all: the human evaluation's sample sizes
only inside its sheet job, after every summary was made; a retriever option its
backend does not read was ignored or failed inside the retrieval job.
"""

from __future__ import annotations

from typing import Any

from isqaflow.configcheck.references import References

#: The options each retrieval backend reads (isqaflow.arena.retrieval.bm25_dense, isqaflow.arena.retrieval.colbert).
RETRIEVER_OPTIONS = {
    "bm25": ("k1", "b"),
    "dense": ("model", "batch_size"),
    "colbert": ("model", "batch_size", "nbits", "kmeans_niters", "document_length", "query_length"),
}


def check_samples(refs: References) -> None:
    """``human_eval`` and ``validity.metrics`` sample sizes against each other and against
    ``datasets.papers.<name>.max_papers``; ``arena.retrievers`` options against their backend."""
    human = refs.section("human_eval")
    papers, shared = human.get("papers", 20), human.get("shared", 5)
    if human.get("systems"):
        if isinstance(papers, int) and isinstance(shared, int) and shared > papers:
            refs.problem(
                "human_eval.shared",
                f"{shared} papers judged by every annotator, but "
                f"human_eval.papers samples only {papers}",
            )
    datasets = refs.section("datasets", "papers")
    for name in refs.section("isqa").get("datasets") or []:
        cap = (
            datasets.get(name, {}).get("max_papers")
            if isinstance(datasets.get(name), dict)
            else None
        )
        if cap is None:
            continue
        wanted: list[tuple[str, Any]] = []
        if human.get("systems"):
            wanted += [("human_eval.papers", papers), ("human_eval.shared", shared)]
        wanted.append(
            ("validity.metrics.papers", refs.section("validity", "metrics").get("papers"))
        )
        for path, size in wanted:
            if isinstance(size, int) and size > cap:
                refs.problem(
                    path,
                    f"{size} papers per dataset, but datasets.papers.{name}.max_papers keeps {cap}",
                )
    for name, entry in refs.section("arena", "retrievers").items():
        backend = entry.get("backend")
        known = RETRIEVER_OPTIONS.get(backend)
        if known is None:
            continue
        for option in entry:
            if option != "backend" and option not in known:
                refs.problem(
                    f"arena.retrievers.{name}.{option}",
                    f"backend {backend!r} does not read {option!r} (it reads: {', '.join(known)})",
                )
