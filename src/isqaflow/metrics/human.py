"""Human factuality evaluation (ISQA Section 5.5, Appendix A): sample, sheets, scores, agreement.

The paper's protocol, the default: a sample of 20 papers (of SciMRC, summarized by
Llama2 with and without ISQA) judged by three annotators, five of the papers by all of
them for inter-annotator agreement (Cohen's kappa).  Here, per dataset and
summarizer, :func:`assign_papers` draws ``papers`` papers (seeded by the run's seed
and the dataset, so every summarizer of a dataset gets the same papers when it has
summaries of them), makes the first ``shared`` of the sample shared by every
annotator and deals the others out in turn, one annotator each.  With fewer papers
than the sample size all of them are taken (and ``shared`` is capped at what there
is), and the assignment says so in its ``note`` and in the log.

Annotators judge every summary sentence as factual or not.  A summary's factuality
is its share of factual sentences, a system's the mean over its summaries (per
summary the annotators who judged it are averaged first).  Agreement is Cohen's kappa
of each pair of annotators on the sentences of the shared papers, and their mean
(Light's kappa) as one number for three or more annotators.  The sheets annotators
fill in are blind: systems are hidden behind opaque item ids and the summaries of
each paper are shuffled; the separate key maps item ids back to systems.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from isqaflow.io import RecordError, atomic_open, read_csv
from isqaflow.seeds import keyed_rng
from isqaflow.stats import bootstrap_ci
from isqaflow.text.sentences import split_sentences

log = logging.getLogger(__name__)

__all__ = [
    "annotator_agreement",
    "annotator_sheets",
    "assign_papers",
    "build_sheet",
    "check_assigned",
    "cohen_kappa",
    "read_filled_sheet",
    "shared_agreement",
    "system_factuality",
    "write_sheet",
]

SHEET_COLUMNS = ("item_id", "paper_id", "sentence_index", "sentence", "factual")
KEY_COLUMNS = ("item_id", "paper_id", "system", "n_sentences")
# Accepted spellings of a judgment, positive then negative of each pair.
FACTUAL_SPELLINGS = {
    "1": 1,
    "0": 0,
    "yes": 1,
    "no": 0,
    "y": 1,
    "n": 0,
    "true": 1,
    "false": 0,
    "factual": 1,
    "non-factual": 0,
}


def assign_papers(
    paper_ids: Iterable[str],
    papers: int,
    shared: int,
    annotators: Sequence[str],
    seed: int,
    key: str,
) -> dict[str, Any]:
    """The paper sample and who judges what (module docstring); deterministic in its arguments.

    ``paper_ids`` are the papers that can be sampled; the draw is a permutation by
    ``keyed_rng(seed, "human_eval:<key>")`` of their sorted ids, so it does not depend
    on their order.  Returns ``papers_requested``, ``papers_available``,
    ``papers_sampled``, ``shared_requested``, ``shared``, ``annotators``, ``note``
    (None, or why fewer papers or shared papers than requested) and ``papers``: one
    ``{"paper_id", "shared", "annotators"}`` per sampled paper, in sample order.
    """
    annotators = list(annotators)
    if len(annotators) < 2 or len(set(annotators)) != len(annotators):
        raise ValueError(
            f"human_eval.annotators needs at least two distinct names, got {annotators}"
        )
    if papers < 1 or not 0 <= shared <= papers:
        raise ValueError(
            f"human_eval needs papers >= 1 and 0 <= shared <= papers, got papers={papers}, "
            f"shared={shared}"
        )
    available = sorted(set(paper_ids))
    order = [available[i] for i in keyed_rng(seed, f"human_eval:{key}").permutation(len(available))]
    sample = order[:papers]
    n_shared = min(shared, len(sample))
    notes = []
    if len(available) < papers:
        notes.append(
            f"{len(available)} papers available, fewer than the sample size {papers}: all taken"
        )
    if n_shared < shared:
        notes.append(f"{n_shared} shared papers instead of {shared}")
    rows = [
        {"paper_id": pid, "shared": True, "annotators": list(annotators)}
        for pid in sample[:n_shared]
    ]
    rows += [
        {"paper_id": pid, "shared": False, "annotators": [annotators[i % len(annotators)]]}
        for i, pid in enumerate(sample[n_shared:])
    ]
    return {
        "papers_requested": papers,
        "papers_available": len(available),
        "papers_sampled": len(sample),
        "shared_requested": shared,
        "shared": n_shared,
        "annotators": annotators,
        "note": "; ".join(notes) or None,
        "papers": rows,
    }


def annotator_sheets(sheet: pd.DataFrame, assignment: Mapping[str, Any]) -> dict[str, pd.DataFrame]:
    """Each annotator's part of the blind sheet: the rows of the papers assigned to them."""
    sheets = {}
    for annotator in assignment["annotators"]:
        mine = {row["paper_id"] for row in assignment["papers"] if annotator in row["annotators"]}
        sheets[annotator] = sheet[sheet["paper_id"].isin(mine)].reset_index(drop=True)
    return sheets


def build_sheet(summaries: Iterable[dict], seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split summaries into sentences for blind annotation; returns ``(sheet, key)``.

    Each summary dict needs ``paper_id``, ``system`` and ``summary``.  Papers are
    taken in order of ``paper_id``; within a paper the summaries are sorted by system
    and then shuffled with ``seed``, so the result depends only on the set of
    summaries and the seed, not on their input order.  Item ids ("s0001", ...) are
    numbered in sheet order and reveal nothing about the system.  ``sheet`` has one
    row per sentence (``sentence_index`` 1-based, ``factual`` empty); ``key`` has one
    row per summary with its system and sentence count (a summary without sentences
    is in the key but not on the sheet).
    """
    by_paper: dict[str, list[dict]] = {}
    seen: set[tuple[str, str]] = set()
    for position, summary in enumerate(summaries):
        missing = [field for field in ("paper_id", "system", "summary") if field not in summary]
        if missing:
            raise ValueError(f"summary #{position} lacks {', '.join(missing)}")
        paper_id, system = str(summary["paper_id"]), str(summary["system"])
        if (paper_id, system) in seen:
            raise ValueError(f"two summaries of paper {paper_id!r} by system {system!r}")
        seen.add((paper_id, system))
        by_paper.setdefault(paper_id, []).append(
            {**summary, "paper_id": paper_id, "system": system}
        )

    rng = np.random.default_rng(seed)
    ordered = []
    for paper_id in sorted(by_paper):
        paper_summaries = sorted(by_paper[paper_id], key=lambda summary: summary["system"])
        ordered.extend(paper_summaries[i] for i in rng.permutation(len(paper_summaries)))

    width = max(4, len(str(len(ordered))))
    sheet_rows, key_rows = [], []
    for number, summary in enumerate(ordered, start=1):
        item_id = f"s{number:0{width}d}"
        sentences = split_sentences(summary["summary"] or "")
        key_rows.append((item_id, summary["paper_id"], summary["system"], len(sentences)))
        sheet_rows.extend(
            (item_id, summary["paper_id"], index, sentence, "")
            for index, sentence in enumerate(sentences, start=1)
        )
    sheet = pd.DataFrame(sheet_rows, columns=list(SHEET_COLUMNS))
    key = pd.DataFrame(key_rows, columns=list(KEY_COLUMNS))
    return sheet, key


def write_sheet(
    sheet: pd.DataFrame,
    key: pd.DataFrame,
    sheet_path: str | os.PathLike,
    key_path: str | os.PathLike,
) -> None:
    """Write the annotation sheet and its key as CSV files, each atomically."""
    for frame, path in ((sheet, sheet_path), (key, key_path)):
        with atomic_open(path) as handle:
            frame.to_csv(handle, index=False, lineterminator="\n")


def read_filled_sheet(path: str | os.PathLike, annotator: str) -> pd.DataFrame:
    """Read one annotator's filled sheet; ``factual`` becomes 0/1.

    Accepted (case-insensitive) ``factual`` values: 1/0, yes/no, y/n, true/false,
    factual/non-factual.  Anything else, an empty cell included, raises
    :class:`RecordError` with the CSV line (header = line 1), the item id and the
    field; a missing column raises it naming the column.  Extra columns are ignored.
    """
    path = Path(path)
    rows = []
    # Read as every CSV input is (isqaflow.io.read_csv): a byte-order mark dropped, bytes that
    # are not UTF-8 and parser errors named by their line; a record may span lines.
    header, found = read_csv(path)
    for column in SHEET_COLUMNS:
        if column not in header:
            raise RecordError(path, f"missing column {column!r}", field=column)
    for line, row in found:
        item_id = row["item_id"].strip()
        try:
            sentence_index = int(row["sentence_index"])
        except ValueError:
            raise RecordError(
                path,
                f"sentence_index {row['sentence_index']!r} is not an integer",
                record=item_id,
                field="sentence_index",
                line=line,
            ) from None
        factual = FACTUAL_SPELLINGS.get(row["factual"].strip().lower())
        if factual is None:
            raise RecordError(
                path,
                f"factual {row['factual']!r} is not one of {'/'.join(FACTUAL_SPELLINGS)}",
                record=item_id,
                field="factual",
                line=line,
            )
        rows.append((item_id, row["paper_id"], sentence_index, row["sentence"], factual))
    filled = pd.DataFrame(rows, columns=list(SHEET_COLUMNS))
    filled["factual"] = filled["factual"].astype(int)
    filled["annotator"] = annotator
    duplicated = filled.duplicated(["item_id", "sentence_index"])
    if duplicated.any():
        item_id, sentence_index = filled.loc[duplicated, ["item_id", "sentence_index"]].iloc[0]
        raise RecordError(
            path, f"sentence {sentence_index} judged twice", record=item_id, field="sentence_index"
        )
    return filled


def system_factuality(
    filled: pd.DataFrame,
    key: pd.DataFrame,
    alpha: float = 0.05,
    rounds: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """Per system: mean over summaries of the share of factual sentences, with a bootstrap CI.

    ``filled`` holds the judgments of one or more annotators (concatenated outputs of
    :func:`read_filled_sheet`).  Each annotator's share is computed per summary, the
    shares are averaged over the annotators who judged that summary, then over the
    system's summaries; the interval resamples summaries.  Indexed by system with
    ``factuality``, ``lower``, ``upper``, ``n_summaries``, ``n_sentences`` (distinct
    sentences judged), ``n_judgments`` and ``n_annotators``.
    """
    judged = filled.merge(key[["item_id", "system"]], on="item_id", how="left", validate="m:1")
    unknown = judged.loc[judged["system"].isna(), "item_id"]
    if not unknown.empty:
        raise ValueError(f"item {unknown.iloc[0]!r} of the filled sheets is not in the key")
    per_annotator = judged.groupby(["system", "item_id", "annotator"])["factual"].mean()
    per_summary = per_annotator.groupby(level=["system", "item_id"]).mean()
    rows = {}
    for system, shares in per_summary.groupby(level="system"):
        interval = bootstrap_ci(shares.to_numpy(), rounds=rounds, alpha=alpha, seed=seed)
        judgments = judged[judged["system"] == system]
        rows[system] = {
            "factuality": interval["estimate"],
            "lower": interval["lower"],
            "upper": interval["upper"],
            "n_summaries": len(shares),
            "n_sentences": len(judgments.drop_duplicates(["item_id", "sentence_index"])),
            "n_judgments": len(judgments),
            "n_annotators": judgments["annotator"].nunique(),
        }
    result = pd.DataFrame.from_dict(rows, orient="index")
    result.index.name = "system"
    return result


def cohen_kappa(first: Iterable, second: Iterable) -> float:
    """Cohen's kappa of two raters' labels on the same items: (p_o - p_e) / (1 - p_e).

    When chance agreement p_e is 1 the formula is 0/0.  That happens only when both
    raters gave one and the same label to every item, so they agree on everything
    (p_o = 1) and we return 1.0.  No items give NaN.
    """
    first, second = np.asarray(list(first)), np.asarray(list(second))
    if first.shape != second.shape:
        raise ValueError(f"kappa needs paired labels, got {first.size} and {second.size}")
    if first.size == 0:
        return float("nan")
    observed = float(np.mean(first == second))
    labels = np.union1d(first, second)
    share_first = (first[:, None] == labels).mean(axis=0)
    share_second = (second[:, None] == labels).mean(axis=0)
    expected = float(share_first @ share_second)
    if expected == 1.0:
        return 1.0
    return (observed - expected) / (1.0 - expected)


def annotator_agreement(filled: pd.DataFrame) -> pd.DataFrame:
    """Cohen's kappa for every pair of annotators on the sentences both judged.

    Sentences are aligned on ``item_id`` + ``sentence_index``.  One row per pair
    (``annotator_a`` < ``annotator_b``) with ``n`` shared sentences, the raw
    ``agreement`` (p_o) and ``kappa`` (NaN when they share no sentence).
    """
    judgments = {
        name: group.set_index(["item_id", "sentence_index"])["factual"]
        for name, group in filled.groupby("annotator")
    }
    rows = []
    for name_a, name_b in itertools.combinations(sorted(judgments), 2):
        both = pd.concat([judgments[name_a], judgments[name_b]], axis=1, join="inner")
        labels_a, labels_b = both.iloc[:, 0].to_numpy(), both.iloc[:, 1].to_numpy()
        rows.append(
            {
                "annotator_a": name_a,
                "annotator_b": name_b,
                "n": len(both),
                "agreement": float(np.mean(labels_a == labels_b)) if len(both) else np.nan,
                "kappa": cohen_kappa(labels_a, labels_b),
            }
        )
    return pd.DataFrame(rows, columns=["annotator_a", "annotator_b", "n", "agreement", "kappa"])


def shared_agreement(
    filled: pd.DataFrame, key: pd.DataFrame, assignment: Mapping[str, Any]
) -> pd.DataFrame:
    """Cohen's kappa of every pair of annotators on the shared papers, then their mean (Light's kappa).

    Only the sentences of the shared papers count (``key`` maps item ids to papers).
    The last row, ``annotator_a`` "all pairs (Light's kappa)", holds the number of
    sentences judged by every annotator, their raw agreement averaged over the
    pairs, and the mean of the pairs' kappas (NaN when a pair has none).
    """
    shared = {row["paper_id"] for row in assignment["papers"] if row["shared"]}
    items = set(key.loc[key["paper_id"].astype(str).isin(shared), "item_id"])
    table = annotator_agreement(filled[filled["item_id"].isin(items)])
    if len(table) > 1:
        common = (
            filled[filled["item_id"].isin(items)]
            .groupby(["item_id", "sentence_index"])["annotator"]
            .nunique()
        )
        table.loc[len(table)] = {
            "annotator_a": "all pairs (Light's kappa)",
            "annotator_b": "",
            "n": int((common == filled["annotator"].nunique()).sum()),
            "agreement": table["agreement"].mean(skipna=False),
            "kappa": table["kappa"].mean(skipna=False),
        }
    return table


def check_assigned(
    filled: pd.DataFrame,
    sheet_path: str | os.PathLike,
    annotator: str,
    key: pd.DataFrame,
    assignment: Mapping[str, Any],
) -> None:
    """A filled sheet holds exactly the sentences assigned to its annotator, or a RecordError says what differs."""
    if annotator not in assignment["annotators"]:
        raise RecordError(
            sheet_path,
            f"annotator {annotator!r} is not one of the assignment's "
            f"{assignment['annotators']} (config human_eval.annotators)",
        )
    mine = {row["paper_id"] for row in assignment["papers"] if annotator in row["annotators"]}
    expected = key[key["paper_id"].astype(str).isin(mine)]
    wanted = {
        (item, index)
        for item, n in zip(expected["item_id"], expected["n_sentences"], strict=True)
        for index in range(1, int(n) + 1)
    }
    given = set(zip(filled["item_id"], filled["sentence_index"], strict=True))
    extra = sorted(given - wanted)
    if extra:
        item, index = extra[0]
        raise RecordError(
            sheet_path,
            f"sentence {index} is not on {annotator}'s sheet ({len(extra)} such "
            f"rows): a sheet of another annotator?",
            record=item,
            field="item_id",
        )
    missing = sorted(wanted - given)
    if missing:
        item, index = missing[0]
        raise RecordError(
            sheet_path,
            f"sentence {index} of {annotator}'s sheet is not judged ({len(missing)} "
            f"sentences missing)",
            record=item,
            field="factual",
        )


@dataclass(frozen=True)
class HumanEvalSample:
    """The human-evaluation sample of one dataset, from the config's ``human_eval`` section
    (``systems``, ``papers``: papers sampled, ``shared``: papers every annotator judges) and
    the run's ``seed``."""

    dataset: str
    systems: tuple[str, ...]
    papers: int
    shared: int
    seed: int

    @classmethod
    def from_rule(cls, params: Any, wildcards: Any) -> HumanEvalSample:
        """From rule human_eval_sheets' params (systems, papers, shared, seed) and its ``dataset``."""
        return cls(
            dataset=wildcards.dataset,
            systems=tuple(params.systems),
            papers=params.papers,
            shared=params.shared,
            seed=params.seed,
        )


def run_sheets(
    summary_paths: Iterable[str | os.PathLike],
    sample: HumanEvalSample,
    sheet_outs: Mapping[str, str | os.PathLike],
    key_out: str | os.PathLike,
    assignment_out: str | os.PathLike,
) -> int:
    """Entry point of rule human_eval_sheets: the sample, each annotator's blind sheet, the key.

    Papers with a final summary of every chosen system can be sampled (so the systems
    are compared on the same papers); ``sheet_outs`` maps each annotator to their
    sheet.  The key covers every sampled summary; the assignment (JSON) records the
    sample and who judges what.
    """
    from isqaflow.io import read_jsonl, write_json

    wanted = list(dict.fromkeys(sample.systems))
    seed, dataset = sample.seed, sample.dataset
    summaries = [
        {"paper_id": str(obj["paper_id"]), "system": obj["system"], "summary": obj["summary"]}
        for path in summary_paths
        for _, obj in read_jsonl(path)
        if obj["system"] in wanted and obj.get("final", True)
    ]
    by_paper: dict[str, set[str]] = {}
    for summary in summaries:
        by_paper.setdefault(summary["paper_id"], set()).add(summary["system"])
    complete = [pid for pid, have in by_paper.items() if have >= set(wanted)]
    if len(complete) < len(by_paper):
        log.warning(
            "%d papers lack a summary of one of %s and cannot be sampled",
            len(by_paper) - len(complete),
            wanted,
        )
    assignment = assign_papers(
        complete, sample.papers, sample.shared, list(sheet_outs), seed, dataset
    )
    assignment["systems"] = wanted
    if assignment["note"]:
        log.warning("human evaluation sample of %s: %s", dataset, assignment["note"])
    sampled = {row["paper_id"] for row in assignment["papers"]}
    sheet, key = build_sheet([s for s in summaries if s["paper_id"] in sampled], seed=seed)
    for annotator, part in annotator_sheets(sheet, assignment).items():
        with atomic_open(sheet_outs[annotator]) as handle:
            part.to_csv(handle, index=False, lineterminator="\n")
    with atomic_open(key_out) as handle:
        key.to_csv(handle, index=False, lineterminator="\n")
    write_json(assignment_out, assignment)
    log.info(
        "human evaluation of %s: %d papers (%d shared) x %d systems, %d sentences, annotators %s",
        dataset,
        assignment["papers_sampled"],
        assignment["shared"],
        len(wanted),
        len(sheet),
        assignment["annotators"],
    )
    return len(sheet)


def run_results(
    key_path: str | os.PathLike,
    assignment_path: str | os.PathLike,
    filled: Mapping[str, str | os.PathLike],
    seed: int,
    factuality_out: str | os.PathLike,
    agreement_out: str | os.PathLike,
) -> None:
    """Entry point of rule human_eval_results: factuality per system, Cohen's kappa on the shared papers.

    ``filled`` maps annotators to their filled sheets (config human_eval.filled); each
    must hold exactly the sentences of that annotator's sheet, all judged.
    """
    import json

    if not filled:
        raise ValueError(
            "no filled sheets to score: config human_eval.filled has none for this dataset/summarizer"
        )
    key = pd.read_csv(key_path, dtype={"item_id": str, "paper_id": str, "system": str})
    assignment = json.loads(Path(assignment_path).read_text(encoding="utf-8"))
    sheets = []
    for annotator, path in filled.items():
        judged = read_filled_sheet(path, annotator)
        check_assigned(judged, path, annotator, key, assignment)
        sheets.append(judged)
    judgments = pd.concat(sheets, ignore_index=True)
    with atomic_open(factuality_out) as handle:
        system_factuality(judgments, key, seed=seed).to_csv(handle)
    with atomic_open(agreement_out) as handle:
        shared_agreement(judgments, key, assignment).to_csv(handle, index=False)
