"""Iterative factuality refinement with ISQA feedback (Algorithm 1 of the paper).

For each paper, with F and F̄ (facts, non-facts) empty and the initial prompt p0:

    s_0 = G(p_0)
    for t = 1..N:
        B_t ~ D                                  a seeded batch of b QA pairs
        for (q, a*) in B_t:  a, e = F(s_{t-1}, q)    feedback on the current summary
            F1(a, a*) >= epsilon ? add e to F : add e to F̄   (near-duplicates skipped)
        p_t = act-on-feedback prompt with F and F̄ (Appendix E.4)
        s_t = G(p_t)

This is the paper's loop with its summaries numbered from 0: Algorithm 1 generates
s_t = G(p_{t-1}) at the top of step t and the final summary after the last step's
feedback, G(p_N) -- here s_N.  Every step is recorded (summary, batch, raw
feedback, parsed answer and evidence, F1, decision, facts and non-facts), so any
metric can be computed per step.  The final summary is s_N; a best-of-steps
selection is an oracle and is never the ISQA result (the authors' public code takes
the maximum over steps).

Model calls are batched across papers within a step: one generation call for all
summaries of a step, one for all feedback questions of a step.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from isqaflow.data.schema import Paper, QAPair
from isqaflow.finetune.formats import feedback_request, parse_feedback
from isqaflow.isqa import prompts
from isqaflow.isqa.feedback import FeedbackItem, decide
from isqaflow.isqa.summarize import SummaryRecord, fit_paper
from isqaflow.models.base import GenerationParams, LanguageModel
from isqaflow.models.fit import fit_document
from isqaflow.seeds import keyed_rng
from isqaflow.settings import from_mapping
from isqaflow.text.similarity import DuplicateCheck

log = logging.getLogger(__name__)

NO_FEEDBACK = "no feedback possible: the paper has no usable QA pairs"


@dataclass(frozen=True)
class RefineSettings:
    steps: int = 8  # N (Table 5)
    batch_size: int = 4  # b (Table 5)
    epsilon: float = 0.5  # F1 threshold: the authors' scripts use 0.5 (their code's default is 0.3)
    zero_f1: str = "non_fact"  # paper text; "drop" = the authors' code
    repeat_draws: bool = True  # independent draws per step (QA pairs may recur across steps)
    include_unanswerable: bool = False  # draw QA pairs whose gold answer is "Unanswerable"
    initial_prompt: str = "baseline_2"
    feedback_style: str = "isqa"  # isqa (E.3) | gpt35 (E.5)
    dedup_method: str = "embedding"
    dedup_threshold: float = 0.8
    dedup_model: str = "all-MiniLM-L6-v2"
    seed: int = 13

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> RefineSettings:
        return from_mapping(cls, values, "refinement")


class BatchSampler:
    """Seeded QA batches for one paper.

    ``repeat_draws=True`` (the paper: "randomly selected from the complete set" at each
    step): every step draws b distinct pairs independently, so a pair may recur in a
    later step.  ``False``: pairs are used without repetition until all were drawn,
    then a new shuffled pass starts.
    """

    def __init__(self, qas: Sequence[QAPair], batch_size: int, repeat_draws: bool, rng: np.random.Generator):
        self.qas, self.b, self.repeat, self.rng = list(qas), batch_size, repeat_draws, rng
        self.queue: list[int] = []

    def draw(self) -> list[QAPair]:
        n = len(self.qas)
        if n == 0:
            return []
        k = min(self.b, n)
        if self.repeat:
            return [self.qas[i] for i in sorted(self.rng.choice(n, size=k, replace=False))]
        picked: list[int] = []
        while len(picked) < k:
            if not self.queue:
                # a new pass: pairs already in this batch go last, none is skipped
                order = [int(i) for i in self.rng.permutation(n)]
                self.queue = [i for i in order if i not in picked] + [i for i in order if i in picked]
            nxt = next((i for i in self.queue if i not in picked), None)
            if nxt is None:
                break
            self.queue.remove(nxt)
            picked.append(nxt)
        return [self.qas[i] for i in picked]


@dataclass
class PaperState:
    paper: Paper
    sampler: BatchSampler
    facts: list[str]
    non_facts: list[str]
    summary: str = ""
    steps: list[dict[str, Any]] = None  # type: ignore[assignment]
    counts: Counter = None  # type: ignore[assignment]


def usable_qas(paper: Paper, include_unanswerable: bool) -> list[QAPair]:
    return [q for q in paper.qas if include_unanswerable or not q.unanswerable]


def refine(
    papers: Sequence[Paper],
    summarizer: LanguageModel,
    feedback_model: LanguageModel,
    settings: RefineSettings,
    summary_params: GenerationParams,
    feedback_params: GenerationParams,
    duplicates: DuplicateCheck | None = None,
    initial: dict[str, SummaryRecord] | None = None,
) -> list[dict[str, Any]]:
    """Run Algorithm 1 on all papers; returns one record per paper with every step.

    ``initial`` holds s_0 = G(p_0) per paper when it was already generated: the
    baseline job's summaries with the same prompt, model and decoding settings.
    """
    duplicates = duplicates or DuplicateCheck(settings.dedup_method, settings.dedup_threshold, settings.dedup_model)
    states = []
    for paper in papers:
        qas = usable_qas(paper, settings.include_unanswerable)
        if not qas:
            log.warning("paper %s: %s", paper.id, NO_FEEDBACK)
        states.append(
            PaperState(paper, BatchSampler(qas, settings.batch_size, settings.repeat_draws,
                                           keyed_rng(settings.seed, paper.id)), [], [], steps=[], counts=Counter())
        )

    def generate_summaries(active: list[PaperState], step: int,
                           feedback: dict[str, list[FeedbackItem]] | None = None) -> None:
        requests, cuts = [], []
        for st in active:
            if step == 0:
                build = lambda text: prompts.summary_request(settings.initial_prompt, text)  # noqa: E731
            else:
                build = lambda text, st=st: prompts.act_on_feedback_request(text, st.facts, st.non_facts)  # noqa: E731
            request, cut = fit_paper(summarizer, build, st.paper, summary_params.max_input_tokens,
                                     f"ISQA step {step}")
            requests.append(request)
            cuts.append(cut)
        outs = summarizer.generate(requests, summary_params.replace(max_input_tokens=None))
        for st, out, cut in zip(active, outs, cuts, strict=True):
            st.summary = out.text
            st.steps.append({
                "step": step,
                # the feedback on the previous summary that this step's prompt acts on
                "feedback": [i.as_dict() for i in (feedback or {}).get(st.paper.id, [])],
                "facts": list(st.facts),
                "non_facts": list(st.non_facts),
                "summary": out.text,
                "input_tokens": out.n_input_tokens,
                "new_tokens": out.n_new_tokens,
                "paper_tokens_cut": cut,
            })

    missing = [st for st in states if not initial or st.paper.id not in initial]
    for st in states:
        if initial and st.paper.id in initial:
            row = initial[st.paper.id]
            st.summary = row.summary
            st.steps.append({"step": 0, "feedback": [], "facts": [], "non_facts": [], "summary": row.summary,
                             "input_tokens": row.input_tokens, "new_tokens": row.new_tokens,
                             "paper_tokens_cut": row.paper_tokens_cut})
    if missing:
        generate_summaries(missing, 0)
    for step in range(1, settings.steps + 1):
        active = [st for st in states if st.sampler.qas]
        if not active:
            break
        jobs: list[tuple[PaperState, QAPair]] = []
        for st in active:
            jobs += [(st, qa) for qa in st.sampler.draw()]
        requests = [
            fit_document(
                feedback_model,
                lambda ctx, qa=qa: feedback_request(qa.question, ctx, settings.feedback_style),
                st.summary, feedback_params.max_input_tokens,
            )[0]
            for st, qa in jobs
        ]
        outs = feedback_model.generate(requests, feedback_params.replace(max_input_tokens=None))
        items_by_paper: dict[str, list[FeedbackItem]] = {st.paper.id: [] for st in active}
        for (st, qa), out in zip(jobs, outs, strict=True):
            parsed = parse_feedback(out.text)
            f1, decision = decide(parsed, qa.gold_answers, settings.epsilon, settings.zero_f1)
            item = FeedbackItem(qa.id, qa.question, qa.gold_answers, out.text, parsed.status, parsed.answer,
                                parsed.evidence, f1, decision)
            if decision in ("fact", "non_fact"):
                _add(st, item, duplicates)
            st.counts[decision] += 1
            st.counts["added"] += int(item.added)
            items_by_paper[st.paper.id].append(item)
        generate_summaries(active, step, items_by_paper)
        log.info("ISQA step %d/%d: %s", step, settings.steps,
                 dict(sum((st.counts for st in states), Counter())))

    records = []
    for st in states:
        records.append({
            "paper_id": st.paper.id,
            "dataset": st.paper.dataset,
            "n_qas": len(st.sampler.qas),
            "note": None if st.sampler.qas else NO_FEEDBACK,
            "final_summary": st.summary,
            "final_step": st.steps[-1]["step"],
            "facts": st.facts,
            "non_facts": st.non_facts,
            "counts": dict(st.counts),
            "steps": st.steps,
        })
    return records


def _add(state: PaperState, item: FeedbackItem, duplicates: DuplicateCheck) -> None:
    """Add the evidence to the facts or non-facts unless a near-duplicate is already there."""
    for name, pool in (("facts", state.facts), ("non_facts", state.non_facts)):
        hit = duplicates.find_duplicate(item.evidence, pool)
        if hit is not None:
            item.duplicate_of = {"list": name, "index": hit[0], "similarity": round(hit[1], 4)}
            return
    (state.facts if item.decision == "fact" else state.non_facts).append(item.evidence)
    item.added = True


def summary_rows(records: Sequence[dict[str, Any]], summarizer: str, system: str) -> list[SummaryRecord]:
    """Every step's summary as a :class:`SummaryRecord` (``final`` marks the last step)."""
    rows = []
    for rec in records:
        for st in rec["steps"]:
            rows.append(SummaryRecord(
                paper_id=rec["paper_id"], dataset=rec["dataset"], summarizer=summarizer, system=system,
                step=st["step"], final=st["step"] == rec["final_step"], summary=st["summary"],
                input_tokens=st["input_tokens"], new_tokens=st["new_tokens"],
                paper_tokens_cut=st["paper_tokens_cut"],
            ))
    return rows


def run_refine(papers_path, baseline_path, steps_out, summaries_out, summarizer_spec: dict[str, Any], summarizer: str,
               feedback_spec: dict[str, Any], feedback_adapter: str | None, settings: dict[str, Any],
               summary_generation: dict[str, Any], feedback_generation: dict[str, Any], system: str,
               cache_path, threads: int | None = None) -> dict[str, int]:
    """Entry point of rule isqa_refine: Algorithm 1 over all papers of a dataset."""
    from isqaflow.io import read_records, write_jsonl
    from isqaflow.models.cache import CallCache
    from isqaflow.models.registry import load_model

    papers = read_records(papers_path, Paper)
    refine_settings = RefineSettings.from_dict(settings)
    # s_0 is the baseline job's summary with the initial prompt (same model and decoding)
    initial = {r.paper_id: r for r in read_records(baseline_path, SummaryRecord, id_field="paper_id")
               if r.system == refine_settings.initial_prompt}
    cache = CallCache(cache_path)
    summ = load_model(summarizer_spec, cache=cache, name=summarizer, threads=threads)
    feedback = load_model(feedback_spec, cache=cache, adapter=feedback_adapter, name=f"feedback({system})",
                          threads=threads)
    records = refine(papers, summ, feedback, refine_settings, GenerationParams.from_dict(summary_generation),
                     GenerationParams.from_dict(feedback_generation), initial=initial)
    for rec in records:
        rec.update(summarizer=summarizer, system=system)
    write_jsonl(steps_out, records)
    write_jsonl(summaries_out, summary_rows(records, summarizer, system))
    totals = sum((Counter(r["counts"]) for r in records), Counter())
    log.info("%s: %d papers, feedback decisions %s", system, len(records), dict(totals))
    return dict(totals)
