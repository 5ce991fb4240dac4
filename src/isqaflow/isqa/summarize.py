"""Summaries without feedback: the baseline prompts, pre-hoc prompt engineering, generic feedback.

Every prompt's summaries are kept (the paper reports the best baseline prompt per
model; the tables mark it).  A paper longer than the summarizer's input limit is cut
at its end to fit, with a logged warning that names the paper and the tokens cut.

Every summary of the workflow is written as a :class:`SummaryRecord` row -- one
format for baselines, generic feedback and every ISQA step -- so the metrics stage
reads them all the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from isqaflow.data.schema import Paper
from isqaflow.isqa import prompts
from isqaflow.models.base import GenerationParams, LanguageModel, Request
from isqaflow.models.fit import fit_document
from isqaflow.models.refusals import naming_records

log = logging.getLogger(__name__)


class SummaryRecord(BaseModel):
    """One summary of one paper by one system (a prompt, generic feedback, or an ISQA step)."""

    model_config = ConfigDict(extra="forbid")

    paper_id: str
    dataset: str
    summarizer: str
    system: str  # baseline_1 .. prehoc_3, generic, isqa-<feedback>-<questions>
    step: int | None = None  # ISQA: t of s_t (1 = the initial prompt's summary); iterated generic
    # feedback: its round; None for a single pass
    final: bool = True  # the system's output for the paper (ISQA: the last step)
    summary: str
    input_tokens: int = 0
    new_tokens: int = 0
    paper_tokens_cut: int = 0


def paper_text(paper: Paper) -> str:
    return paper.body()


def fit_paper(
    model: LanguageModel,
    build: Callable[[str], Request],
    paper: Paper,
    max_input_tokens: int | None,
    what: str,
) -> tuple[Request, int]:
    request, cut = fit_document(model, build, paper_text(paper), max_input_tokens)
    if cut:
        log.warning(
            "paper %s: %d tokens cut from its end to fit %d input tokens (%s)",
            paper.id,
            cut,
            max_input_tokens,
            what,
        )
    return request, cut


def summarize(
    model: LanguageModel,
    papers: Sequence[Paper],
    builders: Sequence[Callable[[str], Request]],
    params: GenerationParams,
    what: Sequence[str],
) -> list[tuple[Any, int]]:
    """One generation per (paper, builder), batched across papers; returns (generation, tokens cut)."""
    requests, cuts = [], []
    for paper, build, label in zip(papers, builders, what, strict=True):
        request, cut = fit_paper(model, build, paper, params.max_input_tokens, label)
        requests.append(request)
        cuts.append(cut)
    with naming_records(
        requests, [f"{paper.id} ({label})" for paper, label in zip(papers, what, strict=True)]
    ):
        outs = model.generate(requests, params.replace(max_input_tokens=None))
    return list(zip(outs, cuts, strict=True))


def baseline_summaries(
    model: LanguageModel,
    papers: Sequence[Paper],
    prompt_ids: Sequence[str],
    params: GenerationParams,
    dataset: str,
    summarizer: str,
) -> list[SummaryRecord]:
    pairs = [(paper, pid) for pid in prompt_ids for paper in papers]
    builders = [lambda text, pid=pid: prompts.summary_request(pid, text) for _, pid in pairs]
    outs = summarize(model, [p for p, _ in pairs], builders, params, [pid for _, pid in pairs])
    return [
        SummaryRecord(
            paper_id=paper.id,
            dataset=dataset,
            summarizer=summarizer,
            system=pid,
            summary=out.text,
            input_tokens=out.n_input_tokens,
            new_tokens=out.n_new_tokens,
            paper_tokens_cut=cut,
        )
        for (paper, pid), (out, cut) in zip(pairs, outs, strict=True)
    ]


def generic_feedback_summaries(
    model: LanguageModel,
    papers: Sequence[Paper],
    params: GenerationParams,
    dataset: str,
    summarizer: str,
    steps: int = 1,
) -> list[SummaryRecord]:
    """Post-hoc generic feedback (Appendix E.3): no facts, only "be more factual".

    ``steps=1`` (the paper): one pass of the E.3 prompt; the row's ``step`` is None.
    ``steps=N > 1`` (the authors' code iterates the generic feedback): round 1 is the
    same E.3 prompt, round t > 1 shows the model its summary of round t - 1 and
    repeats the feedback (:func:`~isqaflow.isqa.prompts.generic_feedback_request`);
    one row per round (``step`` 1..N), the last one ``final``.
    """
    if steps < 1:
        raise ValueError(f"isqa.generic_steps must be at least 1, got {steps}")
    rows: list[SummaryRecord] = []
    previous: dict[str, str] = {}
    for step in range(1, steps + 1):
        shown = [previous.get(paper.id) for paper in papers]  # None in round 1
        builders = [
            lambda text, prev=prev: prompts.generic_feedback_request(text, prev) for prev in shown
        ]
        outs = summarize(
            model, papers, builders, params, [f"generic feedback {step}"] * len(papers)
        )
        for paper, (out, cut) in zip(papers, outs, strict=True):
            previous[paper.id] = out.text
            rows.append(
                SummaryRecord(
                    paper_id=paper.id,
                    dataset=dataset,
                    summarizer=summarizer,
                    system="generic",
                    step=step if steps > 1 else None,
                    final=step == steps,
                    summary=out.text,
                    input_tokens=out.n_input_tokens,
                    new_tokens=out.n_new_tokens,
                    paper_tokens_cut=cut,
                )
            )
    return rows


@dataclass(frozen=True)
class SummaryJob:
    """What a summary job (rules baseline_summaries, generic_feedback) runs, from the config and
    its wildcards: the summarizer (name and model entry), the decoding (``isqa.summary_generation``),
    the dataset, the prompts of the baselines (``isqa.prompts``) and the generic-feedback rounds
    (``isqa.generic_steps``)."""

    summarizer: str
    model_spec: Mapping[str, Any]
    generation: GenerationParams
    dataset: str
    prompt_ids: tuple[str, ...] = ()
    steps: int = 1

    @classmethod
    def from_rule(cls, params: Any, wildcards: Any) -> SummaryJob:
        """From the rule's params (model, generation; prompts or steps, where the rule has them) and
        wildcards (dataset, summarizer)."""
        return cls(
            summarizer=wildcards.summarizer,
            model_spec=params.model,
            generation=GenerationParams.from_dict(params.generation),
            dataset=wildcards.dataset,
            prompt_ids=tuple(getattr(params, "prompts", ()) or ()),
            steps=getattr(params, "steps", 1),
        )


def _load(papers_path, job: SummaryJob, cache_path, threads: int | None):
    from isqaflow.data.schema import Paper as PaperRecord
    from isqaflow.io import read_records
    from isqaflow.models.registry import load_model

    papers = read_records(papers_path, PaperRecord)
    return papers, load_model(
        job.model_spec, cache=cache_path, name=job.summarizer, threads=threads
    )


def run_baselines(
    papers_path, out_path, job: SummaryJob, cache_path, threads: int | None = None
) -> int:
    """Entry point of rule baseline_summaries: every baseline and pre-hoc prompt, every paper."""
    from isqaflow.io import write_jsonl

    papers, model = _load(papers_path, job, cache_path, threads)
    rows = baseline_summaries(
        model, papers, job.prompt_ids, job.generation, job.dataset, job.summarizer
    )
    return write_jsonl(out_path, rows)


def run_generic(
    papers_path, out_path, job: SummaryJob, cache_path, threads: int | None = None
) -> int:
    """Entry point of rule generic_feedback (``job.steps``: config isqa.generic_steps)."""
    from isqaflow.io import write_jsonl

    papers, model = _load(papers_path, job, cache_path, threads)
    rows = generic_feedback_summaries(
        model, papers, job.generation, job.dataset, job.summarizer, job.steps
    )
    return write_jsonl(out_path, rows)
