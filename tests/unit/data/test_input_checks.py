"""Inputs of any shape: malformed copies of the embedded files stop conversion, naming the
file, the line or record, and the field, and leave no output behind.

The classes (issue 23, item 8): bytes that are not UTF-8, an id twice in any input
(corpora, QA training files and human labels included, and a key twice in one JSON
object, which JSON readers resolve silently), and a record that converts but leaves
nothing to work on.  Each case starts from the embedded file a new user would copy.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from isqaflow.arena.judging.agreement import read_human_labels
from isqaflow.data import convert
from isqaflow.data.schema import Passage, RagQuery
from isqaflow.io import RecordError, read_records, write_jsonl
from isqaflow.metrics.human import read_filled_sheet

EMBEDDED = Path(__file__).resolve().parents[3] / "data" / "embedded"
QASPER = EMBEDDED / "qasper" / "qasper-embedded-v0.3.json"
SCIMRC = EMBEDDED / "scimrc" / "scimrc-embedded.jsonl"
HOTPOT = EMBEDDED / "hotpotqa" / "hotpot_train_embedded.json"
INFOBENCH = EMBEDDED / "infobench" / "InfoBench-embedded.json"
ANNOTATIONS = EMBEDDED / "lfrqa" / "annotations_science_with_citation.jsonl"
LOTTE = EMBEDDED / "lfrqa" / "corpus" / "science" / "collection.tsv"
FIQA_ANNOTATIONS = EMBEDDED / "lfrqa" / "annotations_fiqa_with_citation.jsonl"
BEIR = EMBEDDED / "lfrqa" / "corpus" / "fiqa" / "corpus.jsonl"
HUMAN = EMBEDDED / "lfrqa" / "human_pairwise.csv"


# ------------------------------------------------------------------ the conversions
def papers(path, out, fmt="qasper"):
    return convert.write_papers([path], fmt, fmt, out)


def scimrc(path, out):
    return papers(path, out, "scimrc")


def qa_train(path, out):
    return convert.write_qa_examples([path], out)


def instructions(path, out):
    return convert.write_instructions([path], out)


def rag_annotations(path, out):
    return convert.write_rag(
        "science", [path], LOTTE, "lotte_tsv", 100, out, out.with_suffix(".p.jsonl")
    )


def rag_lotte(path, out):
    return convert.write_rag(
        "science", [ANNOTATIONS], path, "lotte_tsv", 100, out.with_suffix(".q.jsonl"), out
    )


def rag_beir(path, out):
    return convert.write_rag(
        "fiqa", [FIQA_ANNOTATIONS], path, "beir_jsonl", 100, out.with_suffix(".q.jsonl"), out
    )


def fails(tmp_path, run, bad: Path, *, line=None, record=None, field=None, match=""):
    """Run a conversion on ``bad``: a RecordError naming ``bad`` and the rest, and no output."""
    out = tmp_path / "out" / "converted.jsonl"
    with pytest.raises(RecordError, match=match) as info:
        run(bad, out)
    err = info.value
    assert err.file == str(bad) and str(bad) in str(err)
    if line is not None:
        assert err.line == line and f"line {line}" in str(err)
    if record is not None:
        assert err.record == record and repr(record) in str(err)
    if field is not None:
        assert err.field == field and repr(field) in str(err)
    left = (
        sorted(p.name for p in (tmp_path / "out").glob("*")) if (tmp_path / "out").exists() else []
    )
    assert left == [], f"output left behind: {left}"
    return err


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def write_lines(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(lines))
    return path


def edit_line(path: Path, out: Path, index: int, change) -> Path:
    lines = lines_of(path)
    obj = json.loads(lines[index])
    change(obj)
    lines[index] = (json.dumps(obj) + "\n").encode()
    return write_lines(out, lines)


def edit_json(path: Path, out: Path, change) -> Path:
    data = json.loads(path.read_text())
    data = change(data) or data
    out.write_text(json.dumps(data, indent=1))
    return out


# --------------------------------------------------------------- bytes that are not UTF-8
def latin1_in_line(path: Path, out: Path, index: int) -> Path:
    """A Latin-1 "é" (byte e9) at column 5 of line ``index + 1``."""
    lines = lines_of(path)
    assert len(lines[index]) > 5
    lines[index] = lines[index][:4] + "é".encode("latin-1") + lines[index][4:]
    return write_lines(out, lines)


NOT_UTF8 = [
    ("qasper", papers, QASPER, 3),
    ("scimrc", scimrc, SCIMRC, 1),
    ("hotpotqa", qa_train, HOTPOT, 4),
    ("infobench", instructions, INFOBENCH, 2),
    ("lfrqa-annotations", rag_annotations, ANNOTATIONS, 3),
    ("lotte-corpus", rag_lotte, LOTTE, 4),
    ("beir-corpus", rag_beir, BEIR, 2),
]


@pytest.mark.parametrize("name,run,source,index", NOT_UTF8, ids=[c[0] for c in NOT_UTF8])
def test_bytes_that_are_not_utf8_are_named_by_line(tmp_path, name, run, source, index):
    bad = latin1_in_line(source, tmp_path / source.name, index)
    err = fails(tmp_path, run, bad, line=index + 1, match="not UTF-8")
    assert "e9" in str(err) and "column 5" in str(err)


def test_not_utf8_in_human_labels_and_filled_sheets(tmp_path):
    bad = latin1_in_line(HUMAN, tmp_path / "human.csv", 3)
    with pytest.raises(RecordError, match="not UTF-8") as info:
        read_human_labels(bad)
    assert info.value.file == str(bad) and info.value.line == 4
    sheet = tmp_path / "sheet.csv"
    sheet.write_bytes(b"item_id,paper_id,sentence_index,sentence,factual\ni1,p1,0,caf\xe9,yes\n")
    with pytest.raises(RecordError, match="not UTF-8") as info:
        read_filled_sheet(sheet, "a1")
    assert info.value.file == str(sheet) and info.value.line == 2


def test_a_byte_order_mark_is_not_part_of_the_first_id(tmp_path):
    """Spreadsheet programs and editors save UTF-8 with a BOM: it is dropped, not read as data."""
    lines = lines_of(LOTTE)
    first_pid = lines[0].split(b"\t")[0].decode()
    bom = write_lines(tmp_path / "collection.tsv", [b"\xef\xbb\xbf" + lines[0], *lines[1:]])
    passages = tmp_path / "p.jsonl"
    convert.write_rag(
        "science", [ANNOTATIONS], bom, "lotte_tsv", 100, tmp_path / "q.jsonl", passages
    )
    assert read_records(passages, Passage)[0].doc_id == first_pid
    annotations = write_lines(tmp_path / "a.jsonl", [b"\xef\xbb\xbf" + lines_of(ANNOTATIONS)[0]])
    convert.write_rag(
        "science",
        [annotations],
        LOTTE,
        "lotte_tsv",
        100,
        tmp_path / "q2.jsonl",
        tmp_path / "p2.jsonl",
    )


# ------------------------------------------------------------------------ ids twice
def test_a_paper_id_twice_in_one_keyed_file(tmp_path):
    """QASPER is one JSON object keyed by paper id: a repeated key would silently keep the last."""
    text = QASPER.read_text()
    first = next(iter(json.loads(text)))
    data = json.loads(text)
    twice = json.dumps(data)[:-1] + ", " + json.dumps({first: data[first]})[1:-1] + "}"
    bad = tmp_path / QASPER.name
    bad.write_text(twice)
    fails(
        tmp_path,
        papers,
        bad,
        record=first,
        field=first,
        match="occurs twice in the top-level object",
    )


def test_a_key_twice_inside_a_record(tmp_path):
    lines = lines_of(INFOBENCH)
    lines[1] = lines[1].replace(b'"category":', b'"category": "x", "category":', 1)
    bad = write_lines(tmp_path / INFOBENCH.name, lines)
    fails(tmp_path, instructions, bad, line=2, field="category", match="occurs twice in one object")


def test_a_question_twice_in_a_paper(tmp_path):
    def repeat(data):
        paper = data[next(iter(data))]
        paper["qas"].append(paper["qas"][1])

    bad = edit_json(QASPER, tmp_path / QASPER.name, repeat)
    pid = next(iter(json.loads(QASPER.read_text())))
    n = len(json.loads(QASPER.read_text())[pid]["qas"])
    fails(
        tmp_path,
        papers,
        bad,
        record=pid,
        field=f"qas[{n}].question_id",
        match=r"occurs twice in the paper \(first: qas\[1\]\)",
    )
    bad = edit_line(SCIMRC, tmp_path / SCIMRC.name, 0, lambda o: o["qas"].append(o["qas"][0]))
    first = json.loads(lines_of(SCIMRC)[0])
    fails(
        tmp_path,
        scimrc,
        bad,
        line=1,
        record=first["id"],
        field=f"qas[{len(first['qas'])}].questionId",
        match="occurs twice in the paper",
    )


def test_different_questions_sharing_an_id_are_kept_with_a_warning(tmp_path, caplog):
    """QASPER's own sample file gives several questions one id: kept, and said."""

    def share(data):
        paper = data[next(iter(data))]
        paper["qas"][1]["question_id"] = paper["qas"][0]["question_id"]

    path = edit_json(QASPER, tmp_path / QASPER.name, share)
    with caplog.at_level(logging.WARNING, logger="isqaflow.data.qasper"):
        assert papers(path, tmp_path / "out.jsonl") == 3
    assert "different questions share an id" in caplog.text


@pytest.mark.parametrize("across_files", [False, True])
def test_a_qa_training_example_twice(tmp_path, across_files):
    data = json.loads(HOTPOT.read_text())
    first = data[0]["_id"]
    if across_files:
        (tmp_path / "a.json").write_text(json.dumps(data))
        bad = tmp_path / "b.json"
        bad.write_text(json.dumps(data[:1]))
        run = lambda path, out: convert.write_qa_examples([tmp_path / "a.json", path], out)
        err = fails(
            tmp_path, run, bad, record=first, field="_id", match="example id .* occurs twice"
        )
        assert "a.json" in str(err)
    else:
        bad = tmp_path / HOTPOT.name
        bad.write_text(json.dumps(data + data[:1]))
        fails(tmp_path, qa_train, bad, record=first, field="_id", match="occurs twice")


@pytest.mark.parametrize("name,run,source", [("lotte", rag_lotte, LOTTE), ("beir", rag_beir, BEIR)])
def test_a_document_twice_in_a_corpus(tmp_path, name, run, source):
    lines = lines_of(source)
    doc_id = lines[0].split(b"\t")[0].decode() if name == "lotte" else json.loads(lines[0])["_id"]
    bad = write_lines(tmp_path / source.name, [*lines, lines[0]])
    fails(
        tmp_path,
        run,
        bad,
        line=len(lines) + 1,
        record=doc_id,
        field="id",
        match=r"document id occurs twice \(first on line 1\)",
    )


def test_a_gold_document_twice_in_a_query_is_kept_once_and_named(tmp_path, caplog):
    # RAG-QA Arena's release has one (fiqa line 173); their code never reads the gold list, so
    # the query stays, the document once, and the log names the record (no silent change)
    bad = edit_line(
        ANNOTATIONS,
        tmp_path / ANNOTATIONS.name,
        2,
        lambda o: o["gold_doc_ids"].append(o["gold_doc_ids"][0]),
    )
    record = json.loads(lines_of(ANNOTATIONS)[2])
    out = tmp_path / "out" / "queries.jsonl"
    with caplog.at_level(logging.WARNING, logger="isqaflow.data.lfrqa"):
        rag_annotations(bad, out)
    converted = {q.id: q for q in read_records(out, RagQuery)}
    assert converted[record["qid"]].gold_doc_ids == [str(d) for d in record["gold_doc_ids"]]
    assert f"{bad}, line 3, record {record['qid']!r}, field gold_doc_ids" in caplog.text
    assert "listed twice: kept once" in caplog.text


def test_human_labels_rated_twice_or_disagreeing(tmp_path):
    lines = lines_of(HUMAN)
    twice = write_lines(tmp_path / "twice.csv", [*lines, lines[1]])
    pair = lines[1].split(b",")[0].decode()
    with pytest.raises(RecordError, match="rated the pair twice") as info:
        read_human_labels(twice)
    assert (info.value.file, info.value.line, info.value.record, info.value.field) == (
        str(twice),
        len(lines) + 1,
        pair,
        "annotator",
    )
    # a second annotator's row of the same pair, with another answer: which one was rated?
    import csv
    import io

    rows = list(csv.reader(io.StringIO(HUMAN.read_text())))
    header, first = rows[0], rows[1]
    other = dict(zip(header, first, strict=True)) | {
        "annotator": "someone-else",
        "answer_2": "a different answer",
    }
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([header, first, [other[c] for c in header]])
    disagree = tmp_path / "disagree.csv"
    disagree.write_text(out.getvalue())
    with pytest.raises(RecordError, match="disagree on answer_2") as info:
        read_human_labels(disagree)
    assert (info.value.line, info.value.record, info.value.field) == (3, pair, "answer_2")


def test_normalized_records_keyed_by_id_must_not_repeat_it(tmp_path):
    """A stage maps passages, queries, papers, examples and instructions by id."""
    passage = {"id": "d1-0", "doc_id": "d1", "domain": "x", "text": "some words"}
    path = tmp_path / "passages.jsonl"
    write_jsonl(path, [passage, {**passage, "text": "other words"}])
    with pytest.raises(RecordError, match=r"id 'd1-0' occurs twice \(first on line 1\)") as info:
        read_records(path, Passage)
    assert (info.value.line, info.value.record, info.value.field) == (2, "d1-0", "id")


# ------------------------------------------------------- records that leave nothing to do
def _first_paper(data):
    return data[next(iter(data))]


NOTHING_TO_WORK_ON = [
    (
        "qasper-empty-abstract",
        papers,
        QASPER,
        lambda d: _first_paper(d).update(abstract="  "),
        "abstract",
        "empty abstract",
    ),
    (
        "qasper-no-body",
        papers,
        QASPER,
        lambda d: _first_paper(d).update(
            full_text=[{"section_name": "Intro", "paragraphs": ["", " "]}]
        ),
        "full_text",
        "no body text",
    ),
    (
        "qasper-blank-span",
        papers,
        QASPER,
        lambda d: _first_paper(d)["qas"][0]["answers"][0]["answer"].update(
            extractive_spans=[" "], free_form_answer="", yes_no=None, unanswerable=False
        ),
        "qas[0].answers[0].answer",
        "has no answer",
    ),
    (
        "qasper-empty-question-id",
        papers,
        QASPER,
        lambda d: _first_paper(d)["qas"][0].update(question_id=" "),
        "qas[0].question_id",
        "empty id",
    ),
]


@pytest.mark.parametrize(
    "name,run,source,change,field,match", NOTHING_TO_WORK_ON, ids=[c[0] for c in NOTHING_TO_WORK_ON]
)
def test_a_paper_that_converts_into_nothing_to_work_on(
    tmp_path, name, run, source, change, field, match
):
    bad = edit_json(source, tmp_path / source.name, change)
    fails(
        tmp_path,
        run,
        bad,
        record=next(iter(json.loads(source.read_text()))),
        field=field,
        match=match,
    )


LINE_CASES = [
    (
        "scimrc-empty-abstract",
        scimrc,
        SCIMRC,
        0,
        lambda o: o.update(abstract=""),
        "abstract",
        "empty abstract",
    ),
    (
        "infobench-empty-instruction",
        instructions,
        INFOBENCH,
        1,
        lambda o: o.update(instruction=" \n"),
        "instruction",
        "must not be empty",
    ),
    (
        "lfrqa-empty-qid",
        rag_annotations,
        ANNOTATIONS,
        1,
        lambda o: o.update(qid=" "),
        "qid",
        "empty id",
    ),
    (
        "beir-document-without-text",
        rag_beir,
        BEIR,
        2,
        lambda o: o.update(title="", text="  "),
        "text",
        "has no text",
    ),
    ("beir-empty-id", rag_beir, BEIR, 2, lambda o: o.update(_id=""), "_id", "empty id"),
]


@pytest.mark.parametrize(
    "name,run,source,index,change,field,match", LINE_CASES, ids=[c[0] for c in LINE_CASES]
)
def test_a_record_that_converts_into_nothing_to_work_on(
    tmp_path, name, run, source, index, change, field, match
):
    bad = edit_line(source, tmp_path / source.name, index, change)
    fails(tmp_path, run, bad, line=index + 1, field=field, match=match)


def test_a_lotte_document_without_text(tmp_path):
    lines = lines_of(LOTTE)
    pid = lines[3].split(b"\t")[0]
    bad = write_lines(tmp_path / LOTTE.name, [*lines[:3], pid + b"\t   \n", *lines[4:]])
    fails(
        tmp_path,
        rag_lotte,
        bad,
        line=4,
        record=pid.decode(),
        field="text",
        match="would give no passage",
    )


@pytest.mark.parametrize(
    "change,field,match",
    [
        (lambda d: d[0].update(answer=" "), "answer", "must not be empty"),
        (lambda d: d[0].update(_id=""), "_id", "empty id"),
        (
            lambda d: d[0]["context"].append(
                d[0]["context"][
                    [t for t, _ in d[0]["context"]].index(d[0]["supporting_facts"][0][0])
                ]
            ),
            "supporting_facts[0]",
            "which the context holds twice",
        ),
    ],
)
def test_a_qa_training_example_with_nothing_to_learn(tmp_path, change, field, match):
    bad = edit_json(HOTPOT, tmp_path / HOTPOT.name, change)
    record = json.loads(HOTPOT.read_text())[0]["_id"] if field != "_id" else ""
    fails(tmp_path, qa_train, bad, record=record, field=field, match=match)


def test_a_dev_example_that_is_also_a_training_example(tmp_path):
    """The feedback model is evaluated on the dev split: an example it was trained on is named."""
    train = tmp_path / "hotpotqa.train.jsonl"
    convert.write_qa_examples([HOTPOT], train)
    dev_raw = EMBEDDED / "hotpotqa" / "hotpot_dev_embedded.json"
    assert convert.write_qa_examples([dev_raw], tmp_path / "dev.jsonl", held_out_from=[train]) == 8
    leaked = json.loads(HOTPOT.read_text())[5]
    bad = tmp_path / "hotpot_dev.json"
    bad.write_text(json.dumps([*json.loads(dev_raw.read_text()), leaked]))
    run = lambda path, out: convert.write_qa_examples([path], out, held_out_from=[train])
    err = fails(tmp_path, run, bad, record=leaked["_id"], field="_id", match="occurs twice")
    assert f"{train}, line 6" in str(err)


# --------------------------------------------------------------- CSV through the one reader
def _human_rows():
    import csv
    import io

    rows = list(csv.reader(io.StringIO(HUMAN.read_text(encoding="utf-8"))))
    return rows[0], rows[1:]


def _write_csv(path, rows):
    import csv
    import io

    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")
    return path


def test_human_labels_a_row_with_an_extra_cell_names_file_and_line(tmp_path):
    """A CSV parser error (pandas: "Error tokenizing data. C error: Expected 10 fields in line
    3, saw 11", no file) is a RecordError naming the file and the line."""
    header, rows = _human_rows()
    bad = _write_csv(tmp_path / "human.csv", [header, rows[0], [*rows[1], "extra"]])
    with pytest.raises(RecordError, match="11 cells in a row under a header of 10 columns") as info:
        read_human_labels(bad)
    assert (info.value.file, info.value.line) == (str(bad), 3)


def test_human_labels_a_stray_quote_names_file_and_line(tmp_path):
    header, rows = _human_rows()
    bad = _write_csv(tmp_path / "human.csv", [header, rows[0]])
    with bad.open("a", encoding="utf-8") as handle:
        handle.write('p99,fiqa,1,"q"x,a,b,c,d,a1,Better\n')
    with pytest.raises(RecordError, match="not valid CSV") as info:
        read_human_labels(bad)
    assert (info.value.file, info.value.line) == (str(bad), 3)


def test_human_labels_lines_counted_through_multiline_cells(tmp_path):
    """A quoted answer over two lines: the next record's line is its line in the file
    (main counted one line per record)."""
    header, rows = _human_rows()
    first = list(rows[0])
    first[header.index("answer_1")] = "Line one.\nLine two."
    second = [c if i != header.index("rating") else "great" for i, c in enumerate(rows[1])]
    second[header.index("answer_1")] = first[header.index("answer_1")]
    bad = _write_csv(tmp_path / "human.csv", [header, first, second])
    with pytest.raises(RecordError, match="unknown human rating 'great'") as info:
        read_human_labels(bad)
    assert info.value.line == 4 and info.value.field == "rating"


def test_human_labels_a_bom_and_u2028_in_a_cell(tmp_path):
    header, rows = _human_rows()
    first = list(rows[0])
    first[header.index("answer_2")] += "\u2028More."
    path = _write_csv(tmp_path / "human.csv", [header, first])
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    labels = read_human_labels(path)
    assert list(labels.columns[:10]) == header and labels["answer_2"].iloc[0].endswith(
        "\u2028More."
    )


def test_the_same_human_comparison_under_two_pair_ids(tmp_path):
    """Its ratings would count twice in the agreement: refused, naming both pairs and lines."""
    header, rows = _human_rows()
    first_pair = [r for r in rows if r[0] == rows[0][0]]
    again = [["p-again", *r[1:]] for r in first_pair]
    bad = _write_csv(tmp_path / "human.csv", [header, *first_pair, *again])
    with pytest.raises(
        RecordError, match=f"the same comparison as pair '{rows[0][0]}' \\(line 2"
    ) as info:
        read_human_labels(bad)
    assert (info.value.record, info.value.field, info.value.line) == (
        "p-again",
        "pair_id",
        len(first_pair) + 2,
    )


# ------------------------------------- human labels checked at conversion, against the queries
def _embedded_queries():
    from isqaflow.data.lfrqa import convert_lfrqa

    return [
        q
        for f in sorted((EMBEDDED / "lfrqa").glob("annotations_*_with_citation.jsonl"))
        for q in convert_lfrqa(
            [f], f.name.removeprefix("annotations_").removesuffix("_with_citation.jsonl")
        )
    ]


def test_the_embedded_human_labels_pass_the_conversion_check(tmp_path):
    from isqaflow.data.human_labels import check_human_labels

    queries = tmp_path / "queries.jsonl"
    write_jsonl(queries, _embedded_queries())
    record = check_human_labels(HUMAN, [queries], tmp_path / "checked.json")
    assert record["pairs"] == 12 and record["rows"] == 36 and record["annotators"] == 3
    assert json.loads((tmp_path / "checked.json").read_text())["pairs"] == 12


@pytest.mark.parametrize(
    ("column", "value", "field", "message"),
    [
        ("qid", "4999", "qid", r"query id '4999' is not a query of domain 'fiqa'"),
        ("domain", "cooking", "domain", r"domain 'cooking' is not one of the RAG domains"),
    ],
)
def test_human_labels_an_unknown_query_or_domain(tmp_path, column, value, field, message):
    from isqaflow.data.human_labels import check_against_queries

    header, rows = _human_rows()
    first = [r for r in rows if r[0] == rows[0][0]]
    bad = _write_csv(
        tmp_path / "human.csv",
        [
            header,
            *[[value if h == column else c for h, c in zip(header, r, strict=True)] for r in first],
        ],
    )
    with pytest.raises(RecordError, match=message) as info:
        check_against_queries(bad, _embedded_queries())
    assert (info.value.line, info.value.field, info.value.record) == (2, field, rows[0][0])


def test_human_labels_an_id_paired_with_another_querys_text(tmp_path):
    """Accepted on main: the pair's qid says one query, its text is another's."""
    from isqaflow.data.human_labels import check_against_queries

    header, rows = _human_rows()
    queries = _embedded_queries()
    fiqa = [q for q in queries if q.domain == "fiqa"]
    first = [r for r in rows if r[0] == rows[0][0]]
    qid = first[0][header.index("qid")]
    other = next(q for q in fiqa if q.id != qid)
    swapped = [
        [other.question if h == "query" else c for h, c in zip(header, r, strict=True)]
        for r in first
    ]
    bad = _write_csv(tmp_path / "human.csv", [header, *swapped])
    with pytest.raises(
        RecordError, match=f"query id '{qid}' is paired with the text of query '{other.id}'"
    ) as info:
        check_against_queries(bad, queries)
    assert (info.value.line, info.value.field) == (2, "query")


def test_human_labels_one_query_id_with_two_texts_in_the_file(tmp_path):
    header, rows = _human_rows()
    pairs = list(dict.fromkeys(r[0] for r in rows))
    first, second = ([r for r in rows if r[0] == p] for p in pairs[:2])
    q = header.index("qid")
    moved = [[first[0][q] if i == q else c for i, c in enumerate(r)] for r in second]
    if first[0][header.index("domain")] != second[0][header.index("domain")]:
        pytest.skip("the first two pairs are of different domains")
    bad = _write_csv(tmp_path / "human.csv", [header, *first, *moved])
    with pytest.raises(
        RecordError, match=f"query id '{first[0][q]}' has another query text on line 2"
    ) as info:
        read_human_labels(bad)
    assert (info.value.line, info.value.field) == (len(first) + 2, "query")


def test_every_judge_waits_for_the_human_labels_check(tmp_path):
    """The file was first read inside the judge's job, after the expensive stages; now a data-stage
    job checks it right after the conversion, and the judges wait for it."""
    from workflow_utils import copy_repo, dry_run_jobs

    repo = copy_repo(tmp_path / "repo")
    jobs = dry_run_jobs(repo, "results/validity/arena/local.jsonl")
    assert jobs.get("check_human_labels") == 1, jobs
