"""Model-generated questions for ISQA (Section 5.4): an alternative to the human QA pairs.

Answer candidates are extracted from the paper (spaCy named entities and noun
chunks), a question-generation model writes a question whose answer is the
candidate, and the candidate becomes the gold answer.  Generated questions must end
with a question mark, have at least three words and be distinct.  The result has
the same schema as the human QA pairs (``source="generated"``), so the refinement
reads either.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from isqaflow.data.schema import Answer, Paper, QAPair
from isqaflow.qa.generation import QuestionGenerator, valid_question
from isqaflow.models.base import GenerationParams
from isqaflow.seeds import keyed_rng
from isqaflow.text.candidates import extract_candidates, sample_candidates
from isqaflow.text.f1 import normalize_answer

log = logging.getLogger(__name__)


def generate_questions(
    papers: list[Paper], qg: QuestionGenerator, pipeline: str, per_paper: int, seed: int
) -> tuple[list[Paper], dict[str, int]]:
    jobs: list[tuple[int, Any]] = []
    for i, paper in enumerate(papers):
        candidates = extract_candidates(paper.body(), pipeline)
        for cand in sample_candidates(candidates, per_paper, keyed_rng(seed, f"qg:{paper.id}")):
            jobs.append((i, cand))
    questions = qg.generate([(cand.sentence, cand.text) for _, cand in jobs])
    kept: dict[int, list[QAPair]] = {i: [] for i in range(len(papers))}
    seen: dict[int, set[str]] = {i: set() for i in range(len(papers))}
    stats = {"candidates": len(jobs), "invalid": 0, "duplicate": 0, "kept": 0}
    for (i, cand), question in zip(jobs, questions, strict=True):
        key = normalize_answer(question)
        if not valid_question(question):
            stats["invalid"] += 1
            continue
        if key in seen[i]:
            stats["duplicate"] += 1
            continue
        seen[i].add(key)
        kept[i].append(
            QAPair(
                id=f"{papers[i].id}-gen-{len(kept[i])}",
                question=question,
                source="generated",
                answers=[Answer(text=cand.text, type="extractive", evidence=[cand.sentence])],
            )
        )
        stats["kept"] += 1
    log.info("generated questions: %s", stats)
    return [paper.model_copy(update={"qas": kept[i]}) for i, paper in enumerate(papers)], stats


@dataclass(frozen=True)
class QuestionsJob:
    """What rule generate_questions runs, from the config's generated question source
    (``model``, ``mode``, ``generation``, ``spacy_pipeline``, ``per_paper``) and the run's ``seed``."""

    qg_spec: Mapping[str, Any]
    qg_mode: str
    generation: GenerationParams
    pipeline: str
    per_paper: int
    seed: int

    @classmethod
    def from_rule(cls, params: Any) -> QuestionsJob:
        """From the rule's params (model, mode, generation, pipeline, per_paper, seed)."""
        return cls(
            qg_spec=params.model,
            qg_mode=params.mode,
            generation=GenerationParams.from_dict(params.generation),
            pipeline=params.pipeline,
            per_paper=params.per_paper,
            seed=params.seed,
        )


def run_generated_questions(
    papers_path, out_path, job: QuestionsJob, cache_path, threads: int | None = None
) -> dict[str, int]:
    """Entry point of rule generate_questions."""
    from isqaflow.io import read_records, write_jsonl
    from isqaflow.models.registry import load_model

    papers = read_records(papers_path, Paper)
    model = load_model(job.qg_spec, cache=cache_path, name="question-generator", threads=threads)
    qg = QuestionGenerator(model, job.qg_mode, job.generation)
    out, stats = generate_questions(papers, qg, job.pipeline, job.per_paper, job.seed)
    write_jsonl(out_path, out)
    return stats
