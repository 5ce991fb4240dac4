"""RAG-QA Arena's pairwise judge: which of two answers to a query is better, or a tie.

The judge gets a system instruction with the paper's rubric (truthfulness first,
then helpfulness and completeness; "not sure" is a tie), three invented in-context
examples as earlier user/assistant turns, and the pair to rate in ``<query>``,
``<answer 1>`` and ``<answer 2>`` tags.  It thinks briefly in ``<thinking>`` tags and
puts its label in ``<rating></rating>``: 1 (answer 1 is better), 2 (answer 2 is
better) or 0 (tie or not sure).  The prompt asks for 0 as the tie label (the authors'
public code); the paper's Table 15 writes it as 3, and :func:`parse_verdict` reads
both.

Modes: ``"text"`` generates the reply and parses it (:func:`parse_verdict`);
``"logprob"`` (local models) asks for the rating only and scores the three possible
replies ``<rating>1``, ``<rating>2``, ``<rating>0`` (the label token decides), taking
the most likely one as the order's label (deterministic, never invalid) and keeping
the three log-probabilities.

Position bias: :func:`judge_pairs` judges both orders of each pair, or one
seeded-random order per pair.  Both orders are combined by the judge's verdict rule
(:mod:`isqaflow.arena.judging.verdicts`): ``raw`` (the orders' labels must agree, a
disagreement is a tie) or ``calibrated`` (the mean label log-probability margin over
both orders, a tie inside ``tie_band``; logprob mode).  In logprob mode with both
orders the records carry both rules' verdicts and the margins, whichever is configured.
:func:`judge_with_model` (one group of pairs) and :func:`judge_groups` (several) are
what the judging jobs run: load the judge once, with the job's call cache, and judge
each group of pairs in one call.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from isqaflow.arena.judging.verdicts import (
    RATING_LABELS,
    Verdict,
    calibrated_side,
    check_verdict_rule,
    combine_orders,
    margins_agree,
    parse_verdict,
    position_consistency,
    preference_margin,
)
from isqaflow.models.base import GenerationParams, LanguageModel, Message

if TYPE_CHECKING:
    from isqaflow.data.prompts import ArenaPrompt

log = logging.getLogger(__name__)

__all__ = [
    "FEW_SHOT",
    "REPEATED_KEYS",
    "SYSTEM_PROMPT",
    "judge_groups",
    "judge_pairs",
    "judge_with_model",
    "leading_messages",
    "pair_message",
    "pair_request",
]

SYSTEM_PROMPT = (
    "You will see a query and two answers to it. Your task is to say which answer you "
    "prefer.\n\n"
    "Start by working out, for each answer, whether its information helps to answer the "
    "query truthfully. Two qualities matter:\n"
    "- Helpfulness: the information is relevant to the query. The best answer contains "
    "only relevant information.\n"
    "- Truthfulness: the information is correct as an answer to the query; only helpful "
    "information can be truthful. Treat information as untruthful when you cannot tell "
    "whether it is correct (often because the answer gives too little context), and when "
    "the answer states conflicting facts without reconciling them.\n\n"
    "Decide with these rules, the first one that applies winning:\n"
    "1. When one answer is entirely truthful and the other contains something "
    "untruthful, prefer the entirely truthful one.\n"
    "2. When both contain something untruthful, prefer the one with less untruthful "
    "information.\n"
    "3. When both are entirely truthful, prefer the one that gives more truthful and "
    "helpful information, i.e. the more complete one.\n"
    "4. When the answers seem equally good, or the rules above do not separate them, "
    "call it a tie."
)

_THINK_THEN_RATE = (
    "Think it over briefly (fewer than 50 words) inside <thinking></thinking> tags. Then "
    "write your rating inside <rating></rating> tags: 1 if answer 1 is better, 2 if "
    "answer 2 is better, 0 if they tie or you are not sure."
)
_RATE_ONLY = (
    "Write only your rating inside <rating></rating> tags: 1 if answer 1 is better, 2 if "
    "answer 2 is better, 0 if they tie or you are not sure."
)

# Invented in-context examples: (query, answer 1, answer 2, thinking, label).
FEW_SHOT: tuple[tuple[str, str, str, str, str], ...] = (
    (
        "how long should i boil an egg to keep the yolk runny",
        (
            "Lower the egg into water that is already boiling and cook it for about six "
            "minutes; the white sets while the yolk stays runny. Cool it in cold water "
            "straight away so it stops cooking."
        ),
        "Boil the egg for twelve minutes; that keeps the yolk soft and runny.",
        "Answer 1 is correct. Twelve minutes gives a hard yolk, so answer 2 is untruthful.",
        "1",
    ),
    (
        "what does git stash do",
        "It saves your changes.",
        (
            "git stash puts your uncommitted changes, staged and unstaged, aside and leaves "
            "a clean working tree; git stash pop applies them again later."
        ),
        (
            "Both are truthful. Answer 2 also says which changes are saved, that the "
            "working tree becomes clean and how to get the changes back: more complete."
        ),
        "2",
    ),
    (
        "why do cats purr",
        (
            "Cats purr when they are content, but also when they are stressed or in pain; "
            "purring may help them calm themselves."
        ),
        (
            "Purring usually means a cat is relaxed, yet cats also purr when anxious or "
            "hurt, probably to soothe themselves."
        ),
        "Both give the same truthful points, equally complete; neither is better.",
        "0",
    ),
)

# The label token right after the opening tag decides; the closing tag that follows
# carries no decision, and leaving it out lets one forward pass score all three labels.
_CANDIDATES = tuple(f"<rating>{label}" for label in RATING_LABELS)

# "</rating>" as a stop string: the reply ends right after the label (the stop string
# itself is cut from the text, which parse_verdict accepts).
DEFAULT_PARAMS = GenerationParams(max_new_tokens=256, stop=("</rating>",))

_TO_SIDE = {
    "ab": {"1": "a", "2": "b", "tie": "tie", None: None},
    "ba": {"1": "b", "2": "a", "tie": "tie", None: None},
}
_SIDE_TO_VERDICT = {"a": "1", "b": "2", "tie": "tie", None: None}
#: what each repetition of a repeated judgment keeps (``repetitions`` of the record)
REPEATED_KEYS = ("verdict", "verdict_raw", "verdict_calibrated", "margin", "raw_ab", "raw_ba")
_OUTPUT_KEYS = (
    "verdict",
    "rule",
    "verdict_raw",
    "verdict_calibrated",
    "order",
    "raw_ab",
    "raw_ba",
    "verdict_ab",
    "verdict_ba",
    "logprobs_ab",
    "logprobs_ba",
    "margin",
    "margin_ab",
    "margin_ba",
    "tie_band",
    "position_consistent",
    "position_consistent_calibrated",
)


def _user_message(query: str, answer_1: str, answer_2: str, with_thinking: bool) -> str:
    return (
        f"<query>\n{query}\n</query>\n\n"
        f"<answer 1>\n{answer_1}\n</answer 1>\n\n"
        f"<answer 2>\n{answer_2}\n</answer 2>\n\n"
        f"{_THINK_THEN_RATE if with_thinking else _RATE_ONLY}"
    )


def leading_messages(few_shot: bool = True, with_thinking: bool = True) -> list[Message]:
    """The messages our prompt's every request begins with: the system instruction and, with
    ``few_shot``, the in-context examples as earlier user/assistant turns (the same for every
    pair, so the spend plan counts them once for all its pairs; :func:`pair_request` ends them
    with :func:`pair_message`)."""
    messages = [{"role": "system", "content": SYSTEM_PROMPT}]
    if few_shot:
        for example_query, example_1, example_2, thinking, label in FEW_SHOT:
            reply = f"<rating>{label}</rating>"
            if with_thinking:
                reply = f"<thinking>{thinking}</thinking>\n{reply}"
            example = _user_message(example_query, example_1, example_2, with_thinking)
            messages.append({"role": "user", "content": example})
            messages.append({"role": "assistant", "content": reply})
    return messages


def pair_message(query: str, answer_1: str, answer_2: str, with_thinking: bool = True) -> Message:
    """The user message that asks about one ordered pair: the last message of our prompt's
    :func:`pair_request`, after :func:`leading_messages`."""
    return {"role": "user", "content": _user_message(query, answer_1, answer_2, with_thinking)}


def pair_request(
    query: str,
    answer_1: str,
    answer_2: str,
    few_shot: bool = True,
    with_thinking: bool = True,
    prompt: ArenaPrompt | None = None,
) -> list[Message]:
    """The chat request that asks the judge to rate one ordered pair of answers.

    ``with_thinking=False`` asks for the rating alone (logprob mode); the in-context
    examples' replies then hold the rating alone too, so they show the same format.
    ``prompt``: the published RAG-QA Arena prompt (:mod:`isqaflow.data.prompts`), used
    as printed (its template asks for thinking; logprob mode scores the rating first).
    """
    if prompt is not None:
        return prompt.messages(query, answer_1, answer_2, few_shot)
    return [
        *leading_messages(few_shot, with_thinking),
        pair_message(query, answer_1, answer_2, with_thinking),
    ]


def _judge_requests(
    model: LanguageModel,
    requests: list[tuple[str, str, str]],
    mode: Literal["text", "logprob"],
    few_shot: bool,
    params: GenerationParams,
    prompt: ArenaPrompt | None = None,
) -> list[tuple[str, Verdict | None, dict[str, float] | None]]:
    """(raw reply, positional verdict, label log-probs) for each (query, answer 1, answer 2)."""
    if mode == "text":
        chats = [pair_request(*request, few_shot=few_shot, prompt=prompt) for request in requests]
        replies = [g.text for g in model.generate(chats, params)]
        return [(reply, parse_verdict(reply), None) for reply in replies]
    chats = [
        pair_request(*req, few_shot=few_shot, with_thinking=False, prompt=prompt)
        for req in requests
    ]
    scores = model.score_batch([(chat, list(_CANDIDATES)) for chat in chats])
    labels = list(RATING_LABELS)
    results = []
    for row in scores:
        best = labels[int(np.argmax(row))]  # an exact tie goes to the first of 1, 2, 0
        results.append(("", RATING_LABELS[best], dict(zip(labels, map(float, row)))))
    return results


def judge_pairs(
    model: LanguageModel,
    pairs: Sequence[Mapping[str, Any]],
    mode: Literal["text", "logprob"] = "text",
    orders: Literal["both", "random"] = "both",
    seed: int = 0,
    params: GenerationParams | None = None,
    few_shot: bool = True,
    rule: Literal["raw", "calibrated"] = "raw",
    tie_band: float = 0.0,
    prompt: ArenaPrompt | None = None,
) -> list[dict[str, Any]]:
    """Judge pairs ``{"pair_id", "query", "system_a", "answer_a", "system_b", "answer_b", ...}``.

    Orders: "ab" shows answer_a as answer 1, "ba" shows answer_b first.
    ``orders="both"`` judges both, all requests in one model call; ``orders="random"``
    judges one order per pair drawn by a numpy Generator seeded with ``seed`` (the
    public RAG-QA Arena code instead picks it from the parity of the query's word
    count).  ``rule`` chooses the verdict (see :mod:`isqaflow.arena.judging.verdicts`);
    ``"calibrated"`` needs ``mode="logprob"`` and ``orders="both"`` (ValueError
    otherwise).

    Each record holds the pair's keys plus:

    * ``verdict`` -- the configured rule's, in the convention of
      :func:`isqaflow.arena.ratings.bootstrap.battles_from_verdicts` with system_1 = system_a and
      system_2 = system_b ("1": system_a better, "2": system_b better, "tie", None:
      invalid); ``rule`` names it;
    * ``verdict_raw`` -- the raw rule's (both orders: :func:`combine_orders`; one order:
      that order's label); ``verdict_calibrated`` -- the calibrated rule's (logprob mode,
      both orders; else None);
    * ``order`` ("both", "ab" or "ba"); per order the raw reply ``raw_ab`` / ``raw_ba``
      ("" in logprob mode), the label in the pair's terms ``verdict_ab`` /
      ``verdict_ba`` ("a", "b", "tie", None), the label log-probs ``logprobs_ab`` /
      ``logprobs_ba`` (``{"1", "2", "0"}``, logprob mode) and the margin of system_a
      in that order ``margin_ab`` / ``margin_ba`` (logprob mode) -- None for an order
      not judged;
    * ``margin`` (their mean; logprob mode, both orders) and ``tie_band``;
    * ``position_consistent`` (the two orders' labels agree) and
      ``position_consistent_calibrated`` (the two margins have the same sign) -- None
      unless both orders were judged and valid.

    ``params`` (text mode) defaults to greedy decoding of at most 256 new tokens,
    stopping at "</rating>".
    """
    if mode not in ("text", "logprob"):
        raise ValueError(f"mode must be 'text' or 'logprob', got {mode!r}")
    if orders not in ("both", "random"):
        raise ValueError(f"orders must be 'both' or 'random', got {orders!r}")
    check_verdict_rule("judge_pairs", mode, rule, tie_band, orders)
    for pair in pairs:
        clash = set(pair) & set(_OUTPUT_KEYS)
        if clash:
            name = pair.get("pair_id")
            raise ValueError(f"pair {name!r} already has output key(s) {sorted(clash)}")
    if not pairs:
        return []
    if orders == "both":
        plan = [(i, order) for order in ("ab", "ba") for i in range(len(pairs))]
    else:
        swap = np.random.default_rng(seed).random(len(pairs)) < 0.5
        plan = [(i, "ba" if swapped else "ab") for i, swapped in enumerate(swap)]
    requests = []
    for i, order in plan:
        answers = (pairs[i]["answer_a"], pairs[i]["answer_b"])
        first, second = answers if order == "ab" else answers[::-1]
        requests.append((pairs[i]["query"], first, second))
    judged = _judge_requests(model, requests, mode, few_shot, params or DEFAULT_PARAMS, prompt)

    records = [{**pair, **dict.fromkeys(_OUTPUT_KEYS)} for pair in pairs]
    for (i, order), (raw, verdict, logprobs) in zip(plan, judged, strict=True):
        record = records[i]
        record["order"] = orders if orders == "both" else order
        record[f"raw_{order}"] = raw
        record[f"verdict_{order}"] = _TO_SIDE[order][verdict]
        record[f"logprobs_{order}"] = logprobs
        if logprobs is not None:
            first, second = ("1", "2") if order == "ab" else ("2", "1")
            record[f"margin_{order}"] = logprobs[first] - logprobs[second]
    for record in records:
        record["rule"] = rule
        record["tie_band"] = tie_band
        if record["order"] == "both":
            raw_side = combine_orders(record["verdict_ab"], record["verdict_ba"])
            if record["verdict_ab"] is not None and record["verdict_ba"] is not None:
                record["position_consistent"] = record["verdict_ab"] == record["verdict_ba"]
        else:
            raw_side = record[f"verdict_{record['order']}"]
        record["verdict_raw"] = _SIDE_TO_VERDICT[raw_side]
        if record["logprobs_ab"] is not None and record["logprobs_ba"] is not None:
            margin, _, _ = preference_margin(record["logprobs_ab"], record["logprobs_ba"])
            record["margin"] = margin
            record["verdict_calibrated"] = _SIDE_TO_VERDICT[calibrated_side(margin, tie_band)]
            record["position_consistent_calibrated"] = margins_agree(
                record["margin_ab"], record["margin_ba"]
            )
        record["verdict"] = record[f"verdict_{rule}"]
    return records


def judge_groups(
    groups: Mapping[str, Sequence[Mapping[str, Any]]],
    judge_spec: Mapping[str, Any],
    judge_name: str,
    mode: Literal["text", "logprob"],
    orders: Literal["both", "random"],
    seed: int,
    generation: Mapping[str, Any] | None,
    cache_path,
    threads: int | None = None,
    rule: Literal["raw", "calibrated"] = "raw",
    tie_band: float = 0.0,
    prompt_files: Sequence[str] = (),
    repeats: int = 1,
) -> dict[str, list[dict[str, Any]]]:
    """Load the judge ``judge_spec`` once, with its call cache, and judge each group of pairs.

    Each group is judged by its own :func:`judge_pairs` call (so with
    ``orders="random"`` a group's orders do not depend on the other groups) and comes
    back under its name.  Each record gets ``judge`` = ``judge_name``.  ``generation``
    (text mode) overrides the default decoding; ``rule`` and ``tie_band`` choose the
    verdict; ``prompt_files``: RAG-QA Arena's published system, template and examples files
    (``prompts: published``), or none for our own prompt.  No pairs at all: no model is loaded.

    ``repeats`` = k > 1 judges every pair k times (judge noise): each repetition's calls carry
    its index in their call-cache key (:func:`isqaflow.models.cache.call_key`; k = 1 keeps the
    keys and the records as they always were) and, with sampling, the seed plus the index.  The
    record's verdict is the first repetition's; ``repetitions`` lists every repetition's
    verdicts and margin (:data:`REPEATED_KEYS`).
    """
    check_verdict_rule(f"judge {judge_name!r}", mode, rule, tie_band, orders)
    if repeats < 1:
        raise ValueError(f"judge {judge_name!r}: repeats must be at least 1, got {repeats}")
    if not any(groups.values()):
        log.info("%s: no pairs to judge", judge_name)
        return {name: [] for name in groups}
    from isqaflow.data.prompts import load_arena_prompt
    from isqaflow.models.registry import load_model

    prompt = load_arena_prompt(*prompt_files) if prompt_files else None
    model = load_model(dict(judge_spec), cache=cache_path, name=judge_name, threads=threads)
    params = GenerationParams.from_dict(generation) if generation else None
    judged = {}
    for name, pairs in groups.items():
        runs = []
        for repetition in range(repeats):
            model.repetition = repetition if repeats > 1 else None
            runs.append(
                judge_pairs(
                    model,
                    pairs,
                    mode=mode,
                    orders=orders,
                    seed=seed,
                    params=_repetition_params(params, repetition),
                    rule=rule,
                    tie_band=tie_band,
                    prompt=prompt,
                )
            )
        model.repetition = None
        records = runs[0]
        for i, record in enumerate(records):
            record["judge"] = judge_name
            if repeats > 1:
                record["repetitions"] = [
                    {key: run[i][key] for key in REPEATED_KEYS} for run in runs
                ]
        invalid = sum(record["verdict"] is None for record in records)
        log.info(
            "%s judged %d pairs%s (rule %s): %d without a valid verdict; position consistency raw %s, "
            "calibrated %s",
            judge_name,
            len(records),
            f" ({name})" if name else "",
            rule,
            invalid,
            position_consistency(records),
            position_consistency(records, "position_consistent_calibrated"),
        )
        judged[name] = records
    return judged


def _repetition_params(params: GenerationParams | None, repetition: int) -> GenerationParams | None:
    """A repetition's decoding (:meth:`GenerationParams.for_repetition`); None: the default."""
    return None if params is None else params.for_repetition(repetition)


def judge_with_model(
    pairs: Sequence[Mapping[str, Any]], *args: Any, **kwargs: Any
) -> list[dict[str, Any]]:
    """Load the judge and judge ``pairs``: :func:`judge_groups` with one group (the same
    parameters after ``pairs``)."""
    return judge_groups({"": pairs}, *args, **kwargs)[""]
