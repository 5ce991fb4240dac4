"""Arena-Hard-Auto's files (lmarena/arena-hard-auto): judgments, battles, answers, questions.

Formats as arena-hard-auto writes them.  The judgments and battles of Arena-Hard-Auto v0.1 come
from its v0.1 code (commit 0489bf3 and before: ``gen_judgment.py`` writes
``data/<bench>/model_judgment/<judge>/<model>.jsonl``, ``show_result.py``'s
``get_battles_from_judgment`` turns them into ``data/arena_hard_battles.jsonl``); the answers and
questions are read in both layouts its history has (v0.1: ``question_id``, ``turns``,
``choices``; from commit 196f6b8 on: ``uid``, ``prompt``, ``messages``), because the released
v0.1 data are distributed in the later layout.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pandas as pd

from isqaflow.data.peers.common import PeerRead, as_path, counted
from isqaflow.data.raw import Raw, once
from isqaflow.io import RecordError, read_jsonl

# arena-hard's documented weight of a strong verdict (show_result.py: --weight / multiplier=3).
STRONG_WEIGHT = 3
# The baseline of Arena-Hard-Auto v0.1 (config/judge_config.yaml: baseline_model).
BASELINE = "gpt-4-0314"
WINNERS = ("model_a", "model_b", "tie")

# The five verdict labels of the v0.1 judge prompt, as (winner in game 1, strong?).  In game 1
# assistant A is the baseline (model_a of the battle) and B the judged model (model_b); in game
# 2 gen_judgment.py swaps the answers, so the same label names the other battle side.
_LEVELS = {
    "A>>B": ("model_a", True),
    "A>B": ("model_a", False),
    "A=B": ("tie", False),
    "B>A": ("model_b", False),
    "B>>A": ("model_b", True),
}
_SWAP = {"model_a": "model_b", "model_b": "model_a", "tie": "tie"}
#: the five labels in the judge prompt's order (strongest for A first)
VERDICT_LEVELS = tuple(_LEVELS)


def game_winner(label: object, game: int) -> str | None:
    """The battle side a game's label gives (``model_a`` = the baseline, ``model_b``, ``tie``),
    game 2 swapped as ``gen_judgment.py`` swaps the answers; None for a label outside the five."""
    if label not in _LEVELS:
        return None
    winner = _LEVELS[label][0]
    return _SWAP[winner] if game == 2 else winner


def read_arena_hard_judgments(
    path: str | Path, *, strong_weight: int = STRONG_WEIGHT, baseline: str = BASELINE
) -> PeerRead:
    """A ``model_judgment`` file turned into battles exactly as v0.1 ``show_result.py`` does.

    Each line (``gen_judgment.py``'s ``judgment``) holds ``question_id``, ``model``, ``judge``
    and ``games``: two games, each ``{"user_prompt", "judgment", "score"}`` where ``score`` is
    the verdict label the judge's ``[[...]]`` held, or null when it gave none or several
    (``get_score``).  ``get_battles_from_row`` makes ``strong_weight`` identical battles of a
    strong verdict (``A>>B``, ``B>>A``) and one of any other, ``model_a`` being the baseline;
    a game whose score is not one of the five labels gets weight 0 there -- left out without a
    word.  Here it is left out too (the battles stay arena-hard's) and counted in ``skipped``
    by reason: a null score, a null game, a label outside the five (e.g. ``A<B``, which the
    regex ``[AB<>=]+`` admits).

    ``table``: one row per battle -- ``question_id``, ``model_a`` (``baseline``), ``model_b``
    (the file's model), ``winner`` in {"model_a", "model_b", "tie"}, ``game`` (1 or 2),
    ``verdict`` (the label), ``judge``.  ``counts``: ``"game <g> <label>"`` per game and label
    read, and ``"battles"``.
    """
    if isinstance(strong_weight, bool) or not isinstance(strong_weight, int) or strong_weight < 1:
        raise ValueError(f"strong_weight must be a positive integer, got {strong_weight!r}")
    path = as_path(path)
    rows: list[dict] = []
    skipped: Counter = Counter()
    verdicts: Counter = Counter()
    seen: dict = {}
    for line, obj in read_jsonl(path):
        raw = Raw(path, obj.get("question_id"), obj, line=line)
        question_id = raw.id("question_id")
        model = raw.id("model")
        judge = raw.get("judge", str, "")
        once(seen, f"{model} / {question_id}", raw, "question_id", "judged question")
        games = raw.get("games", list)
        if len(games) != 2:
            raise raw.error(f"expected 2 games (the second swapped), got {len(games)}", "games")
        for number, game in enumerate(games, start=1):
            where = f"games[{number - 1}]"
            if game is None:
                skipped[f"game {number} null (arena-hard: weight 0, not a battle)"] += 1
                continue
            game_raw = Raw(path, question_id, game, where, line)
            if "score" not in game:
                raise game_raw.error("missing field", f"{where}.score")
            label = game["score"]
            if label is None:
                skipped[f"game {number} score null (arena-hard: weight 0, not a battle)"] += 1
                continue
            if not isinstance(label, str):
                raise game_raw.error(
                    f"expected a verdict label or null, got {type(label).__name__}",
                    f"{where}.score",
                )
            verdicts[f"game {number} {label}"] += 1
            if label not in _LEVELS:
                skipped[
                    f"game {number} label {label!r} outside the five levels "
                    "(arena-hard: weight 0, not a battle)"
                ] += 1
                continue
            winner, strong = game_winner(label, number), _LEVELS[label][1]
            battle = {
                "question_id": question_id,
                "model_a": baseline,
                "model_b": model,
                "winner": winner,
                "game": number,
                "verdict": label,
                "judge": judge,
            }
            rows.extend([battle] * (strong_weight if strong else 1))
    if not seen:
        raise RecordError(path, "the file holds no judgments")
    table = pd.DataFrame(
        rows, columns=["question_id", "model_a", "model_b", "winner", "game", "verdict", "judge"]
    )
    if (table["model_b"] == baseline).any():
        raise RecordError(path, f"the judged model is the baseline {baseline!r}", field="model")
    return PeerRead(str(path), table, counted(skipped), {**counted(verdicts), "battles": len(rows)})


def read_arena_hard_battles(path: str | Path, *, baseline: str | None = None) -> PeerRead:
    """``arena_hard_battles.jsonl``, as v0.1 ``show_result.py`` writes it (``battles.to_json``).

    One JSON object per battle: ``question_id``, ``model_a``, ``model_b``, ``winner`` in
    {"model_a", "model_b", "tie"} (a strong verdict is already repeated; ``conv_metadata`` is
    present when it ran with style control, and is not read).  ``table``: those four columns,
    one row per line.  Nothing is skipped: a battle it cannot read is an error.

    With ``baseline`` (a table of scores against it, :mod:`isqaflow.arena_hard.tables`) every
    battle must have the baseline on one side -- v0.1 judges each model against it only -- and
    is turned so that it is ``model_a``, as :func:`read_arena_hard_judgments` gives it (a
    battle written the other way round has its winner swapped); a battle of two other models is
    an error naming its line.
    """
    path = as_path(path)
    rows = []
    for line, obj in read_jsonl(path):
        raw = Raw(path, obj.get("question_id"), obj, line=line)
        row = {
            "question_id": raw.id("question_id"),
            "model_a": raw.id("model_a"),
            "model_b": raw.id("model_b"),
            "winner": raw.get("winner", str),
        }
        if row["winner"] not in WINNERS:
            raise raw.error(f"winner must be one of {WINNERS}, got {row['winner']!r}", "winner")
        if row["model_a"] == row["model_b"]:
            raise raw.error("a battle of a model against itself", "model_b")
        if baseline is not None and row["model_a"] != baseline:
            if row["model_b"] != baseline:
                raise raw.error(
                    f"a battle of {row['model_a']!r} and {row['model_b']!r}: neither is the "
                    f"baseline {baseline!r}, against which each model is scored",
                    "model_a",
                )
            row["model_a"], row["model_b"] = row["model_b"], row["model_a"]
            row["winner"] = _SWAP[row["winner"]]
        rows.append(row)
    if not rows:
        raise RecordError(path, "the file holds no battles")
    return PeerRead(str(path), pd.DataFrame(rows), {}, {"battles": len(rows)})


def read_arena_hard_answers(path: str | Path) -> PeerRead:
    """One ``model_answer/<model>.jsonl`` file: the model's answer to each question.

    Two layouts: v0.1 ``gen_answer.py`` writes ``question_id``, ``answer_id``, ``model_id``
    and ``choices[0].turns[-1].content``; from commit 196f6b8 on it writes ``uid``,
    ``ans_id``, ``model`` and ``messages[-1].content.answer`` (the released v0.1 answers are in
    this one).  arena-hard's ``load_model_answers`` keys answers by question id, so a second
    answer to a question silently replaces the first; here it is an error, as is a second model
    in one file (``show_result.py`` reads the model name from the first row only).

    ``table``: ``question_id``, ``model``, ``answer_id``, ``answer`` (the text of the last
    assistant turn, which the judge saw), one row per line.
    """
    path = as_path(path)
    rows = []
    seen: dict = {}
    for line, obj in read_jsonl(path):
        key = "uid" if "uid" in obj else "question_id"
        raw = Raw(path, obj.get(key), obj, line=line)
        question_id = raw.id(key)
        if key == "uid":
            model, answer_id = raw.id("model"), raw.get("ans_id", str, "")
            messages = list(raw.children("messages"))
            if not messages:
                raise raw.error("no messages", "messages")
            last = messages[-1]
            if last.get("role", str) != "assistant":
                raise last.error("the last message is not the assistant's", last.path + ".role")
            answer = last.child("content").get("answer", str)
        else:
            model, answer_id = raw.id("model_id"), raw.get("answer_id", str, "")
            choices = list(raw.children("choices"))
            if not choices:
                raise raw.error("no choices", "choices")
            turns = list(choices[0].children("turns"))
            if not turns:
                raise choices[0].error("no turns", choices[0].path + ".turns")
            answer = turns[-1].get("content", str)
        once(seen, question_id, raw, key, "question")
        if rows and model != rows[0]["model"]:
            raise raw.error(
                f"a second model {model!r} in a file of {rows[0]['model']!r}",
                "model" if key == "uid" else "model_id",
            )
        rows.append(
            {"question_id": question_id, "model": model, "answer_id": answer_id, "answer": answer}
        )
    if not rows:
        raise RecordError(path, "the file holds no answers")
    return PeerRead(str(path), pd.DataFrame(rows), {}, {"answers": len(rows)})


def read_arena_hard_questions(path: str | Path) -> PeerRead:
    """``question.jsonl``: v0.1 layout ``question_id``, ``category``, ``cluster``,
    ``turns[0].content``, or the later ``uid``, ``category``, ``cluster``, ``prompt``.

    ``table``: ``question_id``, ``category``, ``cluster``, ``prompt``; a question id twice is an
    error (``load_questions`` keeps both and the judging would judge it twice).
    """
    path = as_path(path)
    rows = []
    seen: dict = {}
    for line, obj in read_jsonl(path):
        key = "uid" if "uid" in obj else "question_id"
        raw = Raw(path, obj.get(key), obj, line=line)
        question_id = raw.id(key)
        if key == "uid":
            prompt = raw.get("prompt", str)
        else:
            turns = list(raw.children("turns"))
            if not turns:
                raise raw.error("no turns", "turns")
            prompt = turns[0].get("content", str)
        if not prompt.strip():
            raise raw.error("empty prompt", "prompt" if key == "uid" else "turns[0].content")
        once(seen, question_id, raw, key, "question")
        rows.append(
            {
                "question_id": question_id,
                "category": raw.get("category", str, ""),
                "cluster": raw.get("cluster", str, ""),
                "prompt": prompt,
            }
        )
    if not rows:
        raise RecordError(path, "the file holds no questions")
    return PeerRead(str(path), pd.DataFrame(rows), {}, {"questions": len(rows)})


# One model's line of a console table in misc/past_leaderboards.md (show_result.py's print).
_BOARD_LINE = re.compile(
    r"^(?P<model>\S+)\s*\|\s*score:\s*(?P<score>[-\d.]+)\s*\|\s*95% CI:\s*"
    r"\((?P<lower>[-+\d.]+),\s*(?P<upper>[-+\d.]+)\)\s*\|\s*average #tokens:\s*(?P<tokens>\d+)\s*$"
)


def read_arena_hard_past_leaderboards(path: str | Path) -> PeerRead:
    """``misc/past_leaderboards.md``: fenced console tables as ``show_result.py`` printed them,
    each (optionally) after a bold title line such as ``**Arena-Hard-v0.1 (Style Control)**``.

    ``table``: ``block`` (1, 2, ... in file order), ``title`` (the bold line before the block
    since the previous one, "" when none), ``model``, ``score`` (%), ``ci_lower`` and
    ``ci_upper`` (the printed interval, *relative* to the score, e.g. -2.3 and 2.5) and
    ``tokens`` (the printed average token count, an integer).  A line inside a block that is not
    such a row is an error naming its line; so is a model twice in one block."""
    path = as_path(path)
    rows: list[dict] = []
    title, block, inside, seen = "", 0, False, set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("```"):
            if not inside:
                block, seen = block + 1, set()
            else:
                title = ""
            inside = not inside
            continue
        if not inside:
            if stripped.startswith("**") and stripped.endswith("**") and len(stripped) > 4:
                title = stripped.strip("*").strip()
            continue
        if not stripped:
            continue
        match = _BOARD_LINE.match(stripped)
        if match is None:
            raise RecordError(
                path, "not a leaderboard row (model | score | CI | tokens)", line=number
            )
        model = match["model"]
        if model in seen:
            raise RecordError(path, f"model {model!r} twice in block {block}", line=number)
        seen.add(model)
        rows.append(
            {
                "block": block,
                "title": title,
                "model": model,
                "score": float(match["score"]),
                "ci_lower": float(match["lower"]),
                "ci_upper": float(match["upper"]),
                "tokens": int(match["tokens"]),
            }
        )
    if inside:
        raise RecordError(path, f"block {block} is not closed (no closing ```)")
    if not rows:
        raise RecordError(path, "the file holds no leaderboard rows")
    return PeerRead(str(path), pd.DataFrame(rows), {}, {"rows": len(rows), "blocks": block})
