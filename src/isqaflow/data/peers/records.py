"""The peers' released judgments as this workflow's judged records (rule peer_judgments).

A config entry of ``peers:`` (config/peers.yaml) names released files and their format; each is
read by its reader (:mod:`isqaflow.data.peers`, which counts what the publisher's own code
leaves out) and written in the record format the workflow's own judges write, so the same table
code reads them (rules/peers.smk):

- **arena** (``arena_hard_battles``, ``arena_hard_judgments``, ``alpaca_eval_annotations``): one
  record per battle or annotation as rule arena_judge writes them -- ``pair_id``, ``kind``,
  ``domain``, ``qid``, ``query``, ``system_a``/``answer_a``, ``system_b``/``answer_b``,
  ``verdict``, ``rule``, ``judge`` -- with the baseline as ``system_b`` and kind ``reference``
  (each model judged against the benchmark's baseline, as a model against LFRQA), a battle of
  two other models kind ``all_pairs``.  ``domain`` is the entry's name (the queries of one
  benchmark), ``qid`` the publisher's question id (AlpacaEval has none: a digest of the
  instruction's text, the key alpaca_eval itself merges annotations on).  Verdicts: ``"1"``
  (system_a wins), ``"2"``, ``"tie"``; AlpacaEval's soft preference becomes a soft verdict on the
  same scale (``3 - preference``: the model's preference 2 is verdict 1,
  :mod:`isqaflow.arena.ratings.length_inputs`).  arena-hard's strong verdicts are already
  repeated ``strong_weight`` times by its reader (battles files hold them repeated).  The answer
  texts come from the answers files where given (arena-hard) or the annotations (AlpacaEval);
  without them ``answer_a``/``answer_b`` are null and the length tables leave the pairs out.
- **drfr** (``infobench_eval``): one record per decomposed question as rule drfr_judge writes
  them -- ``model``, ``instruction_id``, ``subset`` (Easy/Hard), ``category``,
  ``question_index``, ``labels``, ``answer`` (YES/NO/INVALID), ``rule``, ``judge``; InFoBench's
  None (neither YES nor NO) is INVALID, which the DRFR tables count as NO -- InFoBench's own
  ``bool_ratio``.

``rule`` is ``"released"``: the verdicts are the publisher's, read as released, under no rule of
this workflow's judges.

Arena-Hard-Auto's files are in the formats of the Arena-Hard suite itself (its judge writes
model_judgment files; show_result.py writes the battles file): its table code reads them as
released, with the same readers (:func:`released_files`, rule peer_arena_hard_tables, its table
``arena_hard_scores`` and leaderboard column), and the arena's tables read their judged records
beside (ratings, lengths), off the leaderboard (:class:`PeerFormat`: ``also``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from isqaflow.data.peers.alpaca_eval import read_alpaca_eval_annotations
from isqaflow.data.peers.arena_hard import (
    BASELINE,
    STRONG_WEIGHT,
    read_arena_hard_answers,
    read_arena_hard_battles,
    read_arena_hard_judgments,
)
from isqaflow.data.peers.common import PeerRead
from isqaflow.data.peers.infobench_eval import read_infobench_eval
from isqaflow.io import RecordError, read_jsonl, write_jsonl
from isqaflow.suites import suite as registered_suite
from isqaflow.text.matching import match_key


@dataclass(frozen=True)
class PeerFormat:
    """What the records of one format are, in the one place the tables and the leaderboard read
    it: the ``suite`` whose tables and leaderboard columns show them, the ``benchmark`` whose
    released judgments they are, its ``publisher`` (the repository that releases the benchmark
    and its judgments) and what one record's verdict is (``verdicts``: ``battles`` -- labels the
    ratings fit --, ``soft preferences`` -- a judge's probability, no battle outcome: win rates
    against the baseline, no ratings -- or ``questions``: InFoBench's one YES/NO per decomposed
    question); ``baseline``: the benchmark's baseline where the entry names none, and
    ``baseline_ranked``: whether the benchmark ranks its baseline among the systems
    (arena-hard's leaderboard lists gpt-4-0314 at 50 among the models; AlpacaEval's win rates
    are each a model against its baseline).  ``as_released``: the suite's table code reads the
    released files themselves -- they are in its own formats (Arena-Hard's) -- not judged
    records; ``also``: suites whose tables read the entry's judged records (rule
    peer_judgments) beside, as analyses the leaderboard does not show (their cells' origin says
    ``shown: False``)."""

    suite: str
    benchmark: str
    publisher: str
    verdicts: str
    baseline: str | None = None
    baseline_ranked: bool = False
    as_released: bool = False
    also: tuple[str, ...] = ()

    @property
    def judged_by(self) -> tuple[str, ...]:
        """The suites whose tables read the entry's judged records (rule peer_judgments)."""
        return (*(() if self.as_released else (self.suite,)), *self.also)

    @property
    def read_by(self) -> tuple[str, ...]:
        """Every suite whose tables read the entry's records, the one that shows them first."""
        return (self.suite, *self.also)


# arena-hard's files fill the Arena-Hard suite's table as released; the arena's tables read the
# same battles as judged records beside (Bradley-Terry and Elo ratings, lengths), off the board
_ARENA_HARD = PeerFormat(
    "arena_hard",
    "Arena-Hard-Auto",
    "lmarena/arena-hard-auto",
    "battles",
    BASELINE,
    True,
    as_released=True,
    also=("arena",),
)
PEER_FORMATS = {
    "arena_hard_battles": _ARENA_HARD,
    "arena_hard_judgments": _ARENA_HARD,
    "alpaca_eval_annotations": PeerFormat(
        "arena", "AlpacaEval 2.0", "tatsu-lab/alpaca_eval", "soft preferences"
    ),
    "infobench_eval": PeerFormat("drfr", "InFoBench", "qinyiwei/InFoBench", "questions"),
}
# format -> the suite whose tables and leaderboard columns show its records
SUITES = {name: fmt.suite for name, fmt in PEER_FORMATS.items()}
# format -> the suites whose tables read its judged records (rule peer_judgments' output)
JUDGED_BY = {name: fmt.judged_by for name, fmt in PEER_FORMATS.items()}
# format -> every suite whose tables read its records (the one that shows them first)
READ_BY = {name: fmt.read_by for name, fmt in PEER_FORMATS.items()}
# format -> the suite whose tables read its released files as they are, or None
RELEASED_TO = {name: fmt.suite if fmt.as_released else None for name, fmt in PEER_FORMATS.items()}
FORMATS = tuple(SUITES)
RULE = "released"
_WINNER_VERDICT = {"model_a": "1", "model_b": "2", "tie": "tie"}
_FLIP = {"1": "2", "2": "1", "tie": "tie"}
_SUBSETS = {"Easy_set": "Easy", "Hard_set": "Hard", "Easy": "Easy", "Hard": "Hard"}


@dataclass(frozen=True)
class PeerEntry:
    """One entry of config ``peers:``: its ``name`` (the records' domain or dataset), ``format``
    (:data:`FORMATS`), the released ``files``, the ``judge`` that wrote the verdicts, the
    benchmark's ``baseline`` (arena formats), arena-hard's ``strong_weight``, the ``answers``
    files (arena-hard: the answer texts) and the judged ``system`` (InFoBench's files do not
    name it)."""

    name: str
    format: str
    files: tuple[str, ...]
    judge: str
    baseline: str | None = None
    strong_weight: int = STRONG_WEIGHT
    answers: tuple[str, ...] = ()
    system: str | None = None

    def __post_init__(self) -> None:
        if self.format not in SUITES:
            raise ValueError(f"peers.{self.name}.format: {self.format!r} is not one of {FORMATS}")
        if not self.files:
            raise ValueError(f"peers.{self.name}.files: no file")
        if self.format == "infobench_eval" and not self.system:
            raise ValueError(
                f"peers.{self.name}.system: an InFoBench evaluation file does not name its model"
            )

    @property
    def suite(self) -> str:
        return SUITES[self.format]

    @classmethod
    def from_config(cls, name: str, entry: Mapping[str, Any]) -> PeerEntry:
        return cls(
            name=name,
            format=entry["format"],
            files=tuple(entry["files"]),
            judge=entry["judge"],
            baseline=entry.get("baseline"),
            strong_weight=int(entry.get("strong_weight", STRONG_WEIGHT)),
            answers=tuple(entry.get("answers") or ()),
            system=entry.get("system"),
        )

    @classmethod
    def from_rule(cls, params: Any, wildcards: Any) -> PeerEntry:
        """From rule peer_judgments' params (``entry``: the config entry) and wildcard ``name``."""
        return cls.from_config(wildcards.name, params.entry)


def setting_label(name: str) -> str:
    """The arena's setting of entry ``name`` (its tables' ``setting`` column; run "peers", judge
    ``name``: rules/inputs/peers.smk)."""
    return f"peers.{name}"


def table_key(suite: str, entry: PeerEntry) -> str:
    """What ``suite``'s tables call the records of ``entry`` (the suite's ``block``): a setting
    ``peers.<name>`` (:func:`setting_label`: the arena) or the entry's judge (DRFR, Arena-Hard:
    one block per judge, as their own judges' verdicts)."""
    if registered_suite(suite).block == "setting":
        return setting_label(entry.name)
    return entry.judge


def leaderboard_origins(peers: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """What the peers' leaderboard says of each entry's cells (rule peer_leaderboard's
    ``origins``; :class:`isqaflow.report.leaderboard.LeaderboardSettings`): keyed
    ``<suite>:<table key>`` (:func:`table_key`) for every suite whose tables read the entry, its
    ``section`` (the benchmark, "released judgments"), the rows' ``source`` (released judgments
    and their publisher), the ``baseline``, ``baseline_ranked`` and the ``verdicts``
    (:class:`PeerFormat`), and ``shown``: whether that suite's leaderboard columns show them
    (False for a suite whose tables read them beside: :attr:`PeerFormat.also`).  Two entries
    one key serves (a judge's entries of one format) must agree, or it is an error naming
    them."""
    out: dict[str, dict[str, Any]] = {}
    owner: dict[str, str] = {}
    for name, config in peers.items():
        entry = PeerEntry.from_config(name, config)
        fmt = PEER_FORMATS[entry.format]
        for suite in fmt.read_by:
            key = f"{suite}:{table_key(suite, entry)}"
            origin = {
                "section": f"{fmt.benchmark} (released judgments)",
                "source": f"released judgments ({fmt.publisher})",
                "baseline": entry.baseline or fmt.baseline,
                "baseline_ranked": fmt.baseline_ranked,
                "verdicts": fmt.verdicts,
                "shown": suite == fmt.suite,
            }
            if key in out and out[key] != origin:
                raise ValueError(
                    f"peers.{name} and peers.{owner[key]}: one block {key!r} of the tables, but "
                    f"not one benchmark and baseline ({origin} vs {out[key]})"
                )
            out[key], owner[key] = origin, owner.get(key, name)
    return out


@dataclass(frozen=True)
class ReleasedFiles:
    """What a suite's table code reads of the entries whose released files it reads as they are
    (:attr:`PeerFormat.as_released`; rule peer_arena_hard_tables): per file its ``paths``, the
    ``judges`` whose block it is in (:func:`table_key`), its ``formats`` and ``strong_weights``
    (None for a battles file, which holds them repeated); the one ``baseline``, the ``answers``
    files and the caption's first sentence (``about``)."""

    paths: tuple[str, ...] = ()
    judges: tuple[str, ...] = ()
    formats: tuple[str, ...] = ()
    strong_weights: tuple[int | None, ...] = ()
    baseline: str | None = None
    answers: tuple[str, ...] = ()
    about: str = ""


def released_files(peers: Mapping[str, Mapping[str, Any]], suite: str) -> ReleasedFiles:
    """The released files of every entry whose format ``suite`` reads as released
    (:data:`RELEASED_TO`), in config order; none: an empty :class:`ReleasedFiles`.  The entries
    must share one baseline (the table scores each model against it): else an error naming
    them."""
    entries = [
        PeerEntry.from_config(name, config)
        for name, config in peers.items()
        if RELEASED_TO.get(config["format"]) == suite
    ]
    if not entries:
        return ReleasedFiles()
    baselines = {e.name: e.baseline or PEER_FORMATS[e.format].baseline for e in entries}
    if len(set(baselines.values())) > 1:
        raise ValueError(
            "peers: "
            + ", ".join(f"peers.{n}.baseline {b!r}" for n, b in baselines.items())
            + f": {suite}'s table scores every model against one baseline"
        )
    rows = [(path, entry) for entry in entries for path in entry.files]
    benchmarks = dict.fromkeys(
        f"{PEER_FORMATS[e.format].benchmark} ({PEER_FORMATS[e.format].publisher})" for e in entries
    )
    return ReleasedFiles(
        paths=tuple(path for path, _ in rows),
        judges=tuple(table_key(suite, entry) for _, entry in rows),
        formats=tuple(entry.format for _, entry in rows),
        strong_weights=tuple(
            entry.strong_weight if entry.format == "arena_hard_judgments" else None
            for _, entry in rows
        ),
        baseline=next(iter(baselines.values())),
        answers=tuple(dict.fromkeys(a for entry in entries for a in entry.answers)),
        about=(
            f"Released judgments of {', '.join(benchmarks)} (config peers: "
            + ", ".join(e.name for e in entries)
            + "), read as released: nothing was judged here."
        ),
    )


def question_digest(instruction: str) -> str:
    """AlpacaEval's question id: its instruction's text (white space collapsed, NFC), digested."""
    return hashlib.sha1(match_key(instruction).encode("utf-8")).hexdigest()[:12]


def _answers(paths: Sequence[str]) -> tuple[dict[tuple[str, str], str], list[str]]:
    texts: dict[tuple[str, str], str] = {}
    reports = []
    for path in paths:
        read = read_arena_hard_answers(path)
        reports.append(read.report())
        for row in read.table.itertuples(index=False):
            texts[(row.model, row.question_id)] = row.answer
    return texts, reports


def battle_records(
    read: PeerRead, entry: PeerEntry, answers: Mapping[tuple[str, str], str]
) -> list[dict]:
    """arena-hard battles (a battles file, or a judgments file's battles) as judged records;
    a battle's side that is the baseline becomes ``system_b`` (its verdict flipped)."""
    baseline = entry.baseline or BASELINE
    records, copies = [], {}
    for row in read.table.itertuples(index=False):
        a, b, verdict = row.model_a, row.model_b, _WINNER_VERDICT[row.winner]
        if a == baseline:
            a, b, verdict = b, a, _FLIP[verdict]
        qid = str(row.question_id)
        key = f"{entry.name}:{qid}:{a}|{b}"
        copies[key] = copies.get(key, 0) + 1
        if answers and ((a, qid) not in answers or (b, qid) not in answers):
            missing = a if (a, qid) not in answers else b
            raise RecordError(
                read.path,
                f"no answer of {missing!r} to this question in peers.{entry.name}.answers",
                record=qid,
                field="answers",
            )
        records.append(
            {
                "pair_id": f"{key}#{copies[key]}",  # a strong verdict's repeated battles
                "kind": "reference" if b == baseline else "all_pairs",
                "domain": entry.name,
                "qid": qid,
                "query": "",
                "system_a": a,
                "answer_a": answers.get((a, qid)),
                "system_b": b,
                "answer_b": answers.get((b, qid)),
                "verdict": verdict,
                "rule": RULE,
                "judge": getattr(row, "judge", "") or entry.judge,
            }
        )
    return records


def annotation_records(read: PeerRead, entry: PeerEntry) -> list[dict]:
    """AlpacaEval annotations as judged records: the model (``generator_2``) as ``system_a``, the
    baseline (``generator_1``) as ``system_b``, the soft verdict ``3 - preference``."""
    records = []
    for row in read.table.itertuples(index=False):
        if entry.baseline and row.generator_1 != entry.baseline:
            raise RecordError(
                read.path,
                f"baseline {row.generator_1!r}, not peers.{entry.name}.baseline {entry.baseline!r}",
                record=f"#{row.index}",
                field="generator_1",
            )
        qid = question_digest(row.instruction)
        records.append(
            {
                "pair_id": f"{entry.name}:{qid}:{row.generator_2}|{row.generator_1}",
                "kind": "reference",
                "domain": entry.name,
                "qid": qid,
                "query": row.instruction,
                "system_a": row.generator_2,
                "answer_a": row.output_2,
                "system_b": row.generator_1,
                "answer_b": row.output_1,
                "verdict": 3.0 - float(row.preference),
                "rule": RULE,
                "judge": entry.judge,
            }
        )
    return records


def infobench_records(path: str | Path, read: PeerRead, entry: PeerEntry) -> list[dict]:
    """InFoBench's evaluation file as DRFR judgment records (one per decomposed question asked);
    subset, category and the question's constraint labels from the file's own entry."""
    meta = {}
    for line, obj in read_jsonl(path):
        subset = _SUBSETS.get(obj.get("subset"))
        if subset is None:
            raise RecordError(
                path,
                f"subset {obj.get('subset')!r} is not Easy_set or Hard_set",
                record=obj.get("id"),
                field="subset",
                line=line,
            )
        labels = obj.get("question_label")
        if not isinstance(labels, list) or len(labels) != len(obj["decomposed_questions"]):
            raise RecordError(
                path,
                "expected one list of labels per decomposed question",
                record=obj["id"],
                field="question_label",
                line=line,
            )
        meta[obj["id"]] = (subset, str(obj.get("category", "")), labels)
    records = []
    for row in read.table.itertuples(index=False):
        subset, category, labels = meta[row.id]
        answer = "INVALID" if row.eval is None else ("YES" if row.eval else "NO")
        records.append(
            {
                "model": entry.system,
                "instruction_id": row.id,
                "subset": subset,
                "category": category,
                "question_index": int(row.question_index),
                "question": row.question,
                "labels": list(labels[row.question_index]),
                "answer": answer,
                "rule": RULE,
                "judge": entry.judge,
            }
        )
    return records


def convert_peer_judgments(entry: PeerEntry, out_path: str | Path) -> list[str]:
    """Entry point of rule peer_judgments: every file of ``entry`` read and written as judged
    records to ``out_path``; returns the log's lines (each file's rows and every count of what
    was left out, by reason; the records written)."""
    reports: list[str] = []
    records: list[dict] = []
    if entry.format == "alpaca_eval_annotations":
        for path in entry.files:
            read = read_alpaca_eval_annotations(path)
            reports.append(read.report())
            records += annotation_records(read, entry)
    elif entry.format == "infobench_eval":
        for path in entry.files:
            read = read_infobench_eval(path)
            reports.append(read.report() + f" ({dict(read.counts)})")
            records += infobench_records(path, read, entry)
    else:
        answers, answer_reports = _answers(entry.answers)
        reports += answer_reports
        for path in entry.files:
            if entry.format == "arena_hard_judgments":
                read = read_arena_hard_judgments(
                    path, strong_weight=entry.strong_weight, baseline=entry.baseline or BASELINE
                )
            else:
                read = read_arena_hard_battles(path)
            reports.append(read.report())
            records += battle_records(read, entry, answers)
        if not answers:
            reports.append(
                f"peers.{entry.name}: no answers files: the records carry no answer text, "
                "and the length tables leave them out"
            )
    keys = [
        r.get("pair_id") or (r["model"], r["instruction_id"], r["question_index"]) for r in records
    ]
    if len(set(keys)) != len(keys):
        seen: set = set()
        twice = next(k for k in keys if k in seen or seen.add(k))
        raise ValueError(f"peers.{entry.name}: {twice!r} is in two of its files")
    n = write_jsonl(out_path, records)
    reports.append(
        f"peers.{entry.name}: {n} judged records written ({', '.join(JUDGED_BY[entry.format])})"
    )
    return reports
