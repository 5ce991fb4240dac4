"""Every real file in ``../shared/data`` converts in full, read as its publisher's code reads it,
and the counts are the publishers' own (issue 36).

The six LFRQA files are RAG-QA Arena's ``data/annotations_<domain>_with_citation.jsonl``
(awslabs/rag-qa-arena, the sha256s pinned in config/paper.yaml); their README gives each
domain's count ("With Citation", and "Original All Samples": the paper's test set before the
citation release).  Every change the conversion makes to these files is one of the repairs
listed here, each named by file, line, record and field; anything else fails.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from pathlib import Path

import pytest
import yaml

from isqaflow.data import convert
from isqaflow.data.lfrqa import convert_lfrqa, read_lfrqa
from isqaflow.data.schema import Instruction, Paper, QAExample
from isqaflow.io import read_records

# awslabs/rag-qa-arena README.md, "Original All Samples" and "With Citation"
LFRQA_COUNTS = {
    "technology": (2115, 2064),
    "lifestyle": (2212, 2198),
    "recreation": (2096, 2090),
    "writing": (2696, 2694),
    "science": (1426, 1404),
    "fiqa": (3669, 3570),
}

# (domain, line, record, field, what) of every repair the six files need
PAST = "point past"
LFRQA_REPAIRS = {
    ("fiqa", 173, "420197", "gold_doc_ids", "['144177'] listed twice: kept once"),
    ("fiqa", 673, "1961", "faithful_answer_w_citation", "line(s) [4] hold nothing but citations"),
    ("fiqa", 716, "2028", "faithful_answer_w_citation", PAST),
    ("fiqa", 1154, "3150", "faithful_answer_w_citation", PAST),
    ("fiqa", 1171, "3174", "faithful_answer_w_citation", "line(s) [3] hold nothing but citations"),
    ("fiqa", 1735, "7653", "faithful_answer_w_citation", PAST),
    ("lifestyle", 1475, "lifestyle-search-test-524", "faithful_answer_w_citation", PAST),
    ("recreation", 676, "recreation-search-test-477", "faithful_answer_w_citation", PAST),
    ("science", 614, "science-forum-test-356", "faithful_answer_w_citation", PAST),
    ("science", 648, "science-forum-test-404", "faithful_answer_w_citation", PAST),
    ("technology", 15, "technology-search-test-525", "faithful_answer_w_citation", PAST),
    ("technology", 792, "technology-forum-test-1451", "faithful_answer_w_citation", PAST),
    ("technology", 1343, "technology-search-test-46", "faithful_answer_w_citation", PAST),
    ("technology", 1415, "technology-search-test-153", "faithful_answer_w_citation", PAST),
    ("technology", 1995, "technology-forum-test-417", "faithful_answer_w_citation", PAST),
    ("writing", 836, "writing-forum-test-49", "faithful_answer_w_citation", PAST),
    ("writing", 1737, "writing-forum-test-1009", "faithful_answer_w_citation", PAST),
    ("writing", 1762, "writing-forum-test-1034", "faithful_answer_w_citation", "malformed"),
    ("writing", 1898, "writing-forum-test-1173", "faithful_answer_w_citation", "malformed"),
    ("writing", 2416, "writing-forum-test-1708", "faithful_answer_w_citation", PAST),
}
# what removing citations may take out of the cited text: the markers and the space before them
CITATION_CHARACTERS = set(" \t\n[](){},.*0123456789")
CITATION = re.compile(r"(?<![\w\])}$])\[\s*[1-9]\d*(?:\s*,\s*[1-9]\d*)*\s*\]")


REPO = Path(__file__).resolve().parents[3]
SHARED_LFRQA = REPO.parent / "shared" / "data" / "lfrqa"
LFRQA_FILES = {d: SHARED_LFRQA / f"annotations_{d}_with_citation.jsonl" for d in LFRQA_COUNTS}


@pytest.fixture(scope="module")
def lfrqa():
    """Each domain's raw rows and its conversion, read once for the module (about 5 s)."""
    if not all(f.is_file() for f in LFRQA_FILES.values()):
        pytest.skip(f"the six full LFRQA files are not all in {SHARED_LFRQA} (../shared/data)")
    files = LFRQA_FILES
    return {
        domain: (
            [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()],
            read_lfrqa([path], domain),
        )
        for domain, path in files.items()
    }


def test_lfrqa_every_row_converts_with_the_publishers_counts(lfrqa):
    for domain, (rows, conversion) in lfrqa.items():
        original, with_citation = LFRQA_COUNTS[domain]
        assert len(rows) == with_citation <= original, domain
        # nothing dropped: RAG-QA Arena's code drops no reference either (it keys them by query)
        assert [q.id for q in conversion.queries] == [str(r["qid"]) for r in rows], domain
        assert {q.domain for q in conversion.queries} == {domain}
    assert sum(len(c.queries) for _, c in lfrqa.values()) == 14020
    assert sum(o - w for o, w in LFRQA_COUNTS.values()) == 194  # the release's, before us


def test_the_spend_plan_counts_are_the_converted_rows(lfrqa):
    paper = yaml.safe_load((REPO / "config" / "paper.yaml").read_text(encoding="utf-8"))
    planned = {d: v["queries"] for d, v in paper["spend"]["items"]["rag"].items()}
    assert planned == {d: len(c.queries) for d, (_, c) in lfrqa.items()}


def test_lfrqa_every_repair_is_a_known_quirk_named_by_file_line_record_field(lfrqa):
    named = set()
    for domain, (_, conversion) in lfrqa.items():
        for repair in conversion.repairs:
            assert repair.file.endswith(f"annotations_{domain}_with_citation.jsonl")
            (what,) = [
                w
                for d, line, record, field, w in LFRQA_REPAIRS
                if (d, line, record, field) == (domain, repair.line, repair.record, repair.field)
                and w in repair.what
            ]
            named.add((domain, repair.line, repair.record, repair.field, what))
    assert named == LFRQA_REPAIRS


def test_lfrqa_repeated_gold_document_is_kept_once(lfrqa):
    rows, conversion = lfrqa["fiqa"]
    (query,) = [q for q in conversion.queries if q.id == "420197"]
    assert rows[172]["gold_doc_ids"] == [144177, 144177]
    assert query.gold_doc_ids == ["144177"]
    assert query.citations == [[1]]  # "[1, 2]": both listings of the one document


def test_lfrqa_reference_is_the_cited_text_without_its_citations(lfrqa):
    for domain, (rows, conversion) in lfrqa.items():
        left_over = {r.record for r in conversion.repairs if "malformed" in r.what}
        for row, query in zip(rows, conversion.queries, strict=True):
            cited = row["faithful_answer_w_citation"]
            assert query.reference_with_citation == cited.strip()
            assert _is_subsequence(query.reference, cited), query.id
            removed = Counter(cited) - Counter(query.reference)
            assert set(removed) <= CITATION_CHARACTERS, (domain, query.id, removed)
            if query.id not in left_over:
                assert not CITATION.search(query.reference), (domain, query.id)
            assert len(query.citations) == len(query.reference.split("\n"))
            assert all(1 <= c <= len(query.gold_doc_ids) for cs in query.citations for c in cs)


def test_lfrqa_the_release_answer_field_is_not_the_reference(lfrqa, caplog):
    rows, conversion = lfrqa["lifestyle"]
    # the four rows of issue 36: `answer` empty, the cited text has the answer
    empty = [(i + 1, r["qid"]) for i, r in enumerate(rows) if not r["answer"].strip()]
    assert empty == [
        (2195, "lifestyle-forum-test-279"),
        (2196, "lifestyle-forum-test-267"),
        (2197, "lifestyle-forum-test-266"),
        (2198, "lifestyle-forum-test-349"),
    ]
    by_id = {q.id: q for q in conversion.queries}
    assert by_id["lifestyle-forum-test-279"].reference.startswith(
        "You will need an endorsement of your New Zealand citizenship"
    )
    assert {qid for _, qid in empty} <= set(conversion.answer_differs)
    differs = {d: len(c.answer_differs) for d, (_, c) in lfrqa.items()}
    assert sum(differs.values()) == 333
    with caplog.at_level(logging.INFO, logger="isqaflow.data.lfrqa"):
        convert_lfrqa([LFRQA_FILES["lifestyle"]], "lifestyle")
    assert f"in {differs['lifestyle']} of 2198 rows the release's `answer` field" in caplog.text


def test_lfrqa_rag_qa_arena_code_reads_the_same_references(lfrqa):
    """Their code (code/data_processors.py) keys references by question text and passes each
    through utils.process_response; on these files neither changes anything."""
    for domain, (_, conversion) in lfrqa.items():
        questions = [q.question for q in conversion.queries]
        assert len(set(questions)) == len(questions), domain
        for query in conversion.queries:
            text = query.reference
            # process_response removes "<thinking>..." / "Thinking: ...Answer: " prefixes, the
            # strings "Answer: ", "Answer:\n", "<answer>", "</answer>", maps the failure text
            assert not any(s in text for s in ("Answer: ", "Answer:\n", "<answer>", "</answer>"))
            assert "</thinking>" not in text and text != "FAIL TO GENERATE ANS."
            assert text == text.strip()


def test_infobench_whole_file_through_the_conversion_job(shared_data, tmp_path):
    path = shared_data / "infobench" / "InfoBench.json"
    raw = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    out = tmp_path / "instructions.jsonl"
    assert convert.write_instructions([path], out) == 500 == len(raw)
    instructions = list(read_records(out, Instruction))
    # InFoBench (Qin et al. 2024): 500 instructions, 2,250 decomposed questions
    assert sum(len(i.requirements) for i in instructions) == 2250
    assert [i.id for i in instructions] == [r["id"] for r in raw]


def test_qasper_sample_every_paper_and_question(shared_data, tmp_path):
    path = shared_data / "qasper" / "qasper_sample_small.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    out = tmp_path / "papers.jsonl"
    assert convert.write_papers([path], "qasper", "qasper", out) == len(raw)
    papers = {p.id: p for p in read_records(out, Paper)}
    assert set(papers) == set(raw)
    for pid, paper in raw.items():
        assert [q.id for q in papers[pid].qas] == [q["question_id"] for q in paper["qas"]]


def test_hotpotqa_sample_every_example(shared_data, tmp_path):
    path = shared_data / "hotpotqa" / "hotpot_dev_distractor_v1.sample.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    out = tmp_path / "examples.jsonl"
    assert convert.write_qa_examples([path], out) == len(raw) == 20
    assert [e.id for e in read_records(out, QAExample)] == [r["_id"] for r in raw]


def _is_subsequence(short: str, long: str) -> bool:
    chars = iter(long)
    return all(c in chars for c in short)
