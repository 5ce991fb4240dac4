"""The arena's judgment browser (rule arena_browser): every judged pair on one static page.

Items (:mod:`isqaflow.report.browser`), one per judged pair and judge:

* the judged pairs of ``results/arena/judgments/`` (kinds "reference" and "all_pairs"),
  as written by :func:`isqaflow.arena.judging.judge.judge_pairs`: the query, both answers, both
  orders' replies (the raw text; for log-prob judges, which generate no text, the three
  label log-probabilities and the margin of system_a in that order), the verdict under
  each rule, whether the order flipped it (the configured rule's position consistency:
  raw labels for ``raw``, the margins' signs for ``calibrated``) and the length
  difference in characters;
* the human-labelled pairs (kind "human", ``results/arena/agreement/<judge>.jsonl``) with
  the human majority label (:func:`isqaflow.arena.judging.agreement.human_majority`, in verdict
  terms: "1", "2", "tie") and whether the judge's verdict agrees with it;
* the ISQA summaries judged in the arena (``results/arena/summaries/``: each summary vs the
  paper's abstract, kind "summary reference", and vs the baseline summary, "summary
  head_to_head"; the query is "Summarize the scientific paper ...");
* the known-answer controls (kind "control", ``results/validity/arena/<judge>.jsonl``),
  marked as such with their expected side; their records keep no texts, so the pairs'
  texts are rebuilt by :func:`isqaflow.arena.judging.controls.build_controls` from the same
  queries, controls, ``per_domain`` and seed (deterministic) and joined by pair id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from isqaflow.arena.judging.agreement import human_majority, read_human_labels, verdict_to_score
from isqaflow.arena.judging.controls import build_controls
from isqaflow.data.schema import RagQuery
from isqaflow.io import read_jsonl, read_records
from isqaflow.report.browser import write_browser

__all__ = ["arena_items", "control_items", "pair_item", "run_arena_browser"]

TALLY_KEYS = ("1", "2", "tie", "invalid")
_SCORE_VERDICT = {1: "1", -1: "2", 0: "tie"}
_OUTCOME_VERDICT = {"a": "1", "b": "2", "tie": "tie", "invalid": "invalid"}
_ORDER_LABEL = {"ab": "order ab (answer a shown first)", "ba": "order ba (answer b shown first)"}
NOTES = (
    (
        "Verdict 1: answer a (system a) is better; 2: answer b is better; tie; invalid: no "
        "verdict could be read. The verdict shown first is the judge's configured rule's; the "
        "badges give every rule's."
    ),
    (
        "Log-prob judges generate no reply text: they score the three replies <rating>1, "
        "<rating>2 and <rating>0, whose log-probabilities (and the margin of answer a in that "
        "order) are listed instead."
    ),
    (
        "Known-answer controls (yellow) are pairs whose right verdict is known by construction; "
        "red-edged items disagree with the human label."
    ),
)


def _verdict(value: Any) -> str:
    return "invalid" if value is None else str(value)


def _replies(record: Mapping[str, Any]) -> list[list[Any]]:
    replies = []
    for order in ("ab", "ba"):
        logprobs = record.get(f"logprobs_{order}")
        label = record.get(f"verdict_{order}")
        raw = record.get(f"raw_{order}") or ""
        if label is None and logprobs is None and not raw:
            continue  # this order was not judged (orders: random), or no record of it
        scores: dict[str, Any] | None = None
        if logprobs is not None:
            scores = {f"logP <rating>{k}": v for k, v in logprobs.items()}
            scores["margin of a"] = record.get(f"margin_{order}")
        replies.append(
            [f"{_ORDER_LABEL[order]}: {label if label is not None else 'invalid'}", raw, scores]
        )
    return replies


def _flip(record: Mapping[str, Any], rule: str) -> bool | None:
    field = "position_consistent_calibrated" if rule == "calibrated" else "position_consistent"
    consistent = record.get(field)
    return None if consistent is None else not consistent


def pair_item(
    record: Mapping[str, Any], setting: str, judge: str, rule: str | None = None
) -> dict[str, Any]:
    """A browser item of one judged pair (a record of :func:`isqaflow.arena.judging.judge.judge_pairs`)."""
    rule = rule or record.get("rule") or "raw"
    verdicts = {"raw": _verdict(record.get("verdict_raw"))}
    if record.get("margin") is not None:
        verdicts["calibrated"] = _verdict(record.get("verdict_calibrated"))
        verdicts["mean margin of a"] = f"{record['margin']:.3f}"
    verdict = _verdict(record.get("verdict"))
    return {
        "id": record["pair_id"],
        "kind": record.get("kind") or "pair",
        "judge": judge,
        "setting": setting,
        "title": f"{record.get('domain', '')}:{record.get('qid', '')}  {record['system_a']} vs {record['system_b']}",
        "systems": [record["system_a"], record["system_b"]],
        "texts": [
            ["query", record["query"]],
            [f"answer a: {record['system_a']}", record["answer_a"]],
            [f"answer b: {record['system_b']}", record["answer_b"]],
        ],
        "replies": _replies(record),
        "verdict": verdict,
        "verdicts": verdicts,
        "flip": _flip(record, rule),
        "length_diff": len(record["answer_a"]) - len(record["answer_b"]),
        "human": None,
        "human_agrees": None,
        "control": None,
        "expected": None,
        "correct": None,
        "tally": {verdict: 1},
    }


def human_items(records: Sequence[Mapping[str, Any]], majority: Mapping[str, int]) -> list[dict]:
    """Items of the judged human-labelled pairs, each with the human majority label."""
    items = []
    for record in records:
        item = pair_item(record, "human-labelled", record.get("judge", ""))
        score = majority.get(record["pair_id"])
        if score is not None:
            item["human"] = _SCORE_VERDICT[int(score)]
            item["human_agrees"] = verdict_to_score(record.get("verdict")) == int(score)
        items.append(item)
    return items


def control_items(
    records: Sequence[Mapping[str, Any]], pairs: Mapping[str, Mapping[str, Any]], rule: str
) -> list[dict[str, Any]]:
    """Items of the known-answer controls: the validity records (one per pair and rule) joined to
    their rebuilt pairs (``pairs``: pair id -> pair of :func:`build_controls`)."""
    grouped: dict[str, dict[str, Mapping[str, Any]]] = {}
    for record in records:
        grouped.setdefault(f"control:{record['control']}:{record['item']}", {})[record["rule"]] = (
            record
        )
    items = []
    for pair_id, by_rule in grouped.items():
        if pair_id not in pairs:
            raise ValueError(
                f"control {pair_id!r} of judge {next(iter(by_rule.values()))['name']!r} is not "
                "among the rebuilt control pairs: the validity settings or the seed differ"
            )
        shown = by_rule.get(rule) or by_rule["raw"]
        detail = {**by_rule["raw"]["detail"], **shown["detail"]}
        verdicts = {name: _OUTCOME_VERDICT[r["outcome"]] for name, r in sorted(by_rule.items())}
        record = {
            **pairs[pair_id],
            **detail,
            "verdict": verdicts.get(shown["rule"]),
            "verdict_raw": verdicts["raw"],
            "verdict_calibrated": verdicts.get("calibrated"),
            "position_consistent": None
            if detail.get("verdict_ba") is None or detail.get("verdict_ab") is None
            else detail["verdict_ab"] == detail["verdict_ba"],
        }
        if detail.get("margin_ab") is not None and detail.get("margin_ba") is not None:
            sign = lambda value: (value > 0) - (value < 0)
            record["position_consistent_calibrated"] = sign(detail["margin_ab"]) == sign(
                detail["margin_ba"]
            )
        item = pair_item(record, "controls", shown["name"], shown["rule"])
        item["verdict"] = verdicts[shown["rule"]]
        item["tally"] = {item["verdict"]: 1}
        item.update(
            control=shown["control"],
            expected=_OUTCOME_VERDICT[shown["expected"]],
            correct=shown["correct"],
        )
        items.append(item)
    return items


def arena_items(
    judged: Mapping[str, str],
    human_paths: Sequence[str] = (),
    human_csv: str | None = None,
    control_paths: Sequence[str] = (),
    queries: Sequence[RagQuery] = (),
    controls: Sequence[str] = (),
    per_domain: int = 0,
    seed: int = 0,
    rules: Mapping[str, str] | None = None,
    summary_paths: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Every item of the arena browser: ``judged`` (setting label -> judged pairs file), the judged
    human pairs (with ``human_csv``), the control records (texts rebuilt from ``queries``,
    ``controls``, ``per_domain``, ``seed``), the judged summaries (``summary_paths``: rule
    arena_summaries' files; kinds "summary reference" -- vs the abstract -- and "summary
    head_to_head", setting "summaries <dataset>/<summarizer>"); ``rules``: judge -> configured
    verdict rule."""
    rules = dict(rules or {})
    items = []
    for setting, path in judged.items():
        for _, record in read_jsonl(path):
            judge = record.get("judge", "")
            items.append(pair_item(record, setting.removesuffix(f".{judge}"), judge))
    for path in summary_paths:
        for _, record in read_jsonl(path):
            item = pair_item(
                record,
                f"summaries {record['domain']}/{record['summarizer']}",
                record.get("judge", ""),
            )
            item["kind"] = f"summary {record['kind']}"
            items.append(item)
    if human_paths:
        if not human_csv:
            raise ValueError("judged human pairs given without the human preference file")
        majority = human_majority(read_human_labels(human_csv)).to_dict()
        for path in human_paths:
            records = [record for _, record in read_jsonl(path)]
            items += human_items(records, majority)
    if control_paths:
        pairs = {
            pair["pair_id"]: pair
            for pair in build_controls(list(queries), controls, per_domain, seed)
        }
        for path in control_paths:
            records = [record for _, record in read_jsonl(path)]
            judge = records[0]["name"] if records else ""
            items += control_items(records, pairs, rules.get(judge, "raw"))
    return items


def run_arena_browser(
    out_path,
    judged: Mapping[str, str],
    query_paths: Sequence[str],
    human_paths: Sequence[str] = (),
    human_csv: str | None = None,
    control_paths: Sequence[str] = (),
    controls: Sequence[str] = (),
    per_domain: int = 0,
    seed: int = 0,
    rules: Mapping[str, str] | None = None,
    summary_paths: Sequence[str] = (),
) -> int:
    """Entry point of rule arena_browser: write the page; returns the number of items."""
    queries = [q for path in query_paths for q in read_records(path, RagQuery)]
    items = arena_items(
        judged,
        human_paths,
        human_csv,
        control_paths,
        queries,
        controls,
        per_domain,
        seed,
        rules,
        summary_paths,
    )
    return write_browser(out_path, "RAG-QA Arena: every judgment", items, NOTES, TALLY_KEYS)
