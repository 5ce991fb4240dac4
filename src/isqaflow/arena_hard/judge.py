"""Arena-Hard-Auto's pairwise judge: each answer against the baseline's, in two games.

As v0.1's ``gen_judgment.py`` (lmarena/arena-hard-auto @ 0489bf3): game 1 shows the
baseline as assistant A and the judged answer as B, game 2 swaps them; the judge ends with one
of five labels in double brackets -- ``[[A>>B]]``, ``[[A>B]]``, ``[[A=B]]``, ``[[B>A]]``,
``[[B>>A]]``.  Each game is written as arena-hard writes it (``user_prompt``, ``judgment``,
``score``), one line per (model, question) with ``question_id``, ``model``, ``judge`` and
``games``: the file is a ``model_judgment`` file, and
:func:`isqaflow.data.peers.read_arena_hard_judgments` turns it into battles (a strong verdict
``strong_weight`` times, a game without a valid label counted and left out) for our judges'
files and the released ones alike.

Prompts: ``ours`` (default) -- a short rubric asking for the label directly, so a small local
judge can follow it; ``published`` -- v0.1's ``config/judge_config.yaml`` system prompt and
template, as printed.  Modes: ``text`` generates the judgment and reads its label as
arena-hard's ``get_score`` does (the one distinct ``[[...]]`` match; none or several different
ones: null, counted and never a tie); ``logprob`` (local models) scores the five labels as the
reply and takes the likeliest (deterministic, never invalid), keeping the five
log-probabilities in the game.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from isqaflow.data.peers import VERDICT_LEVELS
from isqaflow.models.base import GenerationParams, LanguageModel, Message

__all__ = [
    "LEVELS",
    "OUR_SYSTEM",
    "PUBLISHED_SYSTEM",
    "PUBLISHED_TEMPLATE",
    "game_request",
    "judge_games",
    "parse_label",
]

LEVELS = VERDICT_LEVELS  # the reader's (isqaflow.data.peers.arena_hard): one table of labels
# judge_config.yaml's regex_pattern
_LABEL = re.compile(r"\[\[([AB<>=]+)\]\]")

# lmarena/arena-hard-auto @ 0489bf3, config/judge_config.yaml: system_prompt, prompt_template[0]
PUBLISHED_SYSTEM = (
    "Please act as an impartial judge and evaluate the quality of the responses provided by two "
    "AI assistants to the user prompt displayed below. You will be given assistant A's answer and "
    "assistant B's answer. Your job is to evaluate which assistant's answer is better.\n\n"
    "Begin your evaluation by generating your own answer to the prompt. You must provide your "
    "answers before judging any answers.\n\n"
    "When evaluating the assistants' answers, compare both assistants' answers with your answer. "
    "You must identify and correct any mistakes or inaccurate information.\n\n"
    "Then consider if the assistant's answers are helpful, relevant, and concise. Helpful means "
    "the answer correctly responds to the prompt or follows the instructions. Note when user "
    "prompt has any ambiguity or more than one interpretation, it is more helpful and appropriate "
    "to ask for clarifications or more information from the user than providing an answer based "
    "on assumptions. Relevant means all parts of the response closely connect or are appropriate "
    "to what is being asked. Concise means the response is clear and not verbose or excessive.\n\n"
    "Then consider the creativity and novelty of the assistant's answers when needed. Finally, "
    "identify any missing important information in the assistants' answers that would be "
    "beneficial to include when responding to the user prompt.\n\n"
    "After providing your explanation, you must output only one of the following choices as your "
    "final verdict with a label:\n\n"
    "1. Assistant A is significantly better: [[A>>B]]\n"
    "2. Assistant A is slightly better: [[A>B]]\n"
    "3. Tie, relatively the same: [[A=B]]\n"
    "4. Assistant B is slightly better: [[B>A]]\n"
    "5. Assistant B is significantly better: [[B>>A]]\n\n"
    'Example output: "My final verdict is tie: [[A=B]]".'
)
PUBLISHED_TEMPLATE = (
    "<|User Prompt|>\n{question_1}\n\n"
    "<|The Start of Assistant A's Answer|>\n{answer_1}\n<|The End of Assistant A's Answer|>\n\n"
    "<|The Start of Assistant B's Answer|>\n{answer_2}\n<|The End of Assistant B's Answer|>"
)

OUR_SYSTEM = (
    "You will see a user's prompt and the answers of two assistants, A and B. Say which answer "
    "is better: correct first, then helpful, relevant and concise; an answer that does not "
    "answer the prompt loses. Give your verdict as one label:\n"
    "[[A>>B]] A is much better; [[A>B]] A is slightly better; [[A=B]] they are about the same; "
    "[[B>A]] B is slightly better; [[B>>A]] B is much better."
)
_OUR_TEMPLATE = (
    "<prompt>\n{question_1}\n</prompt>\n\n"
    "<answer A>\n{answer_1}\n</answer A>\n\n"
    "<answer B>\n{answer_2}\n</answer B>"
)
_LABEL_ONLY = "\n\nWrite only your verdict label."
_CANDIDATES = tuple(f"[[{level}]]" for level in LEVELS)


def parse_label(text: str) -> str | None:
    """The verdict label of a judgment as arena-hard's ``get_score`` reads it: the one distinct
    ``[[...]]`` match (``[AB<>=]+`` inside); no match, or several different ones, is None.  A
    label outside the five (``A<B``) is returned as it is: the battles' reader counts it."""
    matches = {m.strip("\n") for m in _LABEL.findall(text) if m != ""}
    return matches.pop() if len(matches) == 1 else None


def game_request(
    question: str,
    answer_1: str,
    answer_2: str,
    prompts: Literal["ours", "published"] = "ours",
    label_only: bool = False,
) -> list[Message]:
    """The chat request of one game: ``answer_1`` as assistant A, ``answer_2`` as B.
    ``label_only`` (logprob mode, our prompt) asks for the label alone; the published prompt is
    sent as printed (logprob mode then scores the label as the reply's start)."""
    if prompts not in ("ours", "published"):
        raise ValueError(f"prompts must be 'ours' or 'published', got {prompts!r}")
    system, template = (
        (PUBLISHED_SYSTEM, PUBLISHED_TEMPLATE)
        if prompts == "published"
        else (OUR_SYSTEM, _OUR_TEMPLATE)
    )
    user = template.format(question_1=question, answer_1=answer_1, answer_2=answer_2)
    if label_only and prompts == "ours":
        user += _LABEL_ONLY
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def judge_games(
    model: LanguageModel,
    items: Sequence[Mapping[str, Any]],
    judge: str,
    mode: Literal["text", "logprob"] = "logprob",
    prompts: Literal["ours", "published"] = "ours",
    params: GenerationParams | None = None,
) -> list[dict[str, Any]]:
    """Judge each item ``{"question_id", "model", "question", "answer", "baseline_answer"}``
    in both games, all requests in one model call; one arena-hard judgment line per item.

    Game 1: the baseline as A, the answer as B; game 2: the answer as A, the baseline as B.
    Each game: ``user_prompt`` (the user turn sent), ``judgment`` (the reply; "" in logprob
    mode), ``score`` (the label, or None) and, in logprob mode, ``logprobs`` (label ->
    log-probability of the reply ``[[label]]``).
    """
    if mode not in ("text", "logprob"):
        raise ValueError(f"mode must be 'text' or 'logprob', got {mode!r}")
    chats = []
    for item in items:
        for first, second in (
            (item["baseline_answer"], item["answer"]),
            (item["answer"], item["baseline_answer"]),
        ):
            chats.append(game_request(item["question"], first, second, prompts, mode == "logprob"))
    if not chats:
        return []
    games: list[dict[str, Any]] = []
    if mode == "text":
        replies = model.generate(chats, params or GenerationParams(max_new_tokens=4096))
        for chat, reply in zip(chats, replies, strict=True):
            games.append(
                {
                    "user_prompt": chat[-1]["content"],
                    "judgment": reply.text,
                    "score": parse_label(reply.text),
                }
            )
    else:
        scores = model.score_batch([(chat, list(_CANDIDATES)) for chat in chats])
        for chat, row in zip(chats, scores, strict=True):
            games.append(
                {
                    "user_prompt": chat[-1]["content"],
                    "judgment": "",
                    # an exact tie goes to the first of the five, as np.argmax reads them
                    "score": LEVELS[int(np.argmax(row))],
                    "logprobs": dict(zip(LEVELS, map(float, row), strict=True)),
                }
            )
    return [
        {
            "question_id": item["question_id"],
            "model": item["model"],
            "judge": judge,
            "games": games[2 * i : 2 * i + 2],
        }
        for i, item in enumerate(items)
    ]


def run_judge(
    questions_path,
    baseline_path,
    answer_paths: Sequence[str],
    out_path,
    controls_path,
    *,
    judge: str,
    model_spec: Mapping[str, Any],
    mode: Literal["text", "logprob"],
    prompts: Literal["ours", "published"],
    generation: Mapping[str, Any] | None,
    cache_path,
    scope: str,
    limit: int | None = None,
    control_questions: int | None = None,
    threads: int | None = None,
) -> int:
    """Entry point of rule arena_hard_judge: every answerer's answers against the baseline's
    (``out_path``, arena-hard's judgment format) and the known-answer controls on the first
    ``control_questions`` questions (``controls_path``, :mod:`isqaflow.arena_hard.controls`),
    with one model load."""
    from isqaflow.arena_hard.answers import read_questions
    from isqaflow.arena_hard.controls import control_items, control_records
    from isqaflow.data.peers import read_arena_hard_answers
    from isqaflow.io import write_jsonl
    from isqaflow.models.registry import load_model

    questions = read_questions(questions_path, limit)
    baseline = _answers_of(read_arena_hard_answers(baseline_path).table, questions, baseline_path)
    items = []
    for path in answer_paths:
        table = read_arena_hard_answers(path).table
        answers = _answers_of(table, questions, path)
        name = str(table["model"].iloc[0])
        for qid, prompt in zip(questions["question_id"], questions["prompt"], strict=True):
            items.append(
                {
                    "question_id": qid,
                    "model": name,
                    "question": prompt,
                    "answer": answers[qid],
                    "baseline_answer": baseline[qid],
                }
            )
    rows = questions.to_dict("records")
    checks = control_items(
        rows if control_questions is None else rows[:control_questions], baseline
    )
    model = load_model(dict(model_spec), cache=cache_path, name=judge, threads=threads)
    params = GenerationParams.from_dict(dict(generation)) if generation else None
    judged = judge_games(model, items + checks, judge, mode, prompts, params)
    write_jsonl(controls_path, control_records(judged[len(items) :], judge, scope))
    return write_jsonl(out_path, judged[: len(items)])


def _answers_of(table, questions, path) -> dict[str, str]:
    """question id -> answer text of one answers file; every question must be answered."""
    answers = dict(zip(table["question_id"], table["answer"], strict=True))
    missing = [q for q in questions["question_id"] if q not in answers]
    if missing:
        raise ValueError(
            f"{path}: no answer to {len(missing)} of the {len(questions)} questions "
            f"(first: {missing[0]!r})"
        )
    return answers
