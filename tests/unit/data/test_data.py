"""Dataset converters: real-format samples, the embedded data, malformed input, atomic outputs."""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from pathlib import Path

import pytest

from isqaflow.arena.judging.agreement import read_human_labels
from isqaflow.data.convert import write_papers, write_qa_examples, write_rag
from isqaflow.data.hotpotqa import convert_hotpotqa
from isqaflow.data.infobench import convert_infobench
from isqaflow.data.lfrqa import convert_lfrqa, parse_cited_lines, read_corpus, read_lfrqa
from isqaflow.data.passages import passages_from_documents, split_into_passages
from isqaflow.data.qasper import convert_qasper
from isqaflow.data.schema import CONSTRAINT_LABELS, UNANSWERABLE, Instruction, Paper, RagQuery
from isqaflow.data.scimrc import convert_scimrc
from isqaflow.io import RecordError, atomic_open, read_records, write_jsonl

REPO = Path(__file__).resolve().parents[3]
EMBEDDED = REPO / "data" / "embedded"
LFRQA_DOMAINS = ("fiqa", "lifestyle", "recreation", "science", "technology", "writing")
EMBEDDED_CORPORA = {
    "fiqa": ("corpus/fiqa/corpus.jsonl", "beir_jsonl"),
    "science": ("corpus/science/collection.tsv", "lotte_tsv"),
    "technology": ("corpus/technology/collection.tsv", "lotte_tsv"),
}


def _answers(qa) -> list[tuple[str, str]]:
    return [(a.type, a.text) for a in qa.answers]


def _assert_names(
    err: RecordError, path: Path, record, field: str | None, line: int | None = None
) -> None:
    """The error's attributes and its message both name the file, record and field."""
    message = str(err)
    assert err.file == str(path)
    assert str(path) in message
    assert err.record == record
    if record is not None:
        assert repr(record) in message
    assert err.field == field
    if field is not None:
        assert repr(field) in message
    assert err.line == line
    if line is not None:
        assert f"line {line}" in message


# =========================================================================== real samples
def test_qasper_sample_converts_with_official_answer_conventions(shared_data):
    papers = convert_qasper([shared_data / "qasper" / "qasper_sample_small.json"])
    assert len(papers) == 1
    paper = papers[0]
    assert paper.id == "1909.00694"
    assert paper.dataset == "qasper"
    assert (
        paper.title == "Minimally Supervised Learning of Affective Events Using Discourse Relations"
    )
    assert paper.abstract == "This is the abstract of the paper"
    assert [s.name for s in paper.sections] == [
        "Introduction",
        "Related Work",
        "Proposed Method",
        "Proposed Method ::: Polarity Function",
        "Conclusion",
    ]
    # Empty paragraphs are kept in the record but never reach the body text.
    assert paper.body() == (
        "A short paragraph\n\nAnother intro paragraph\n\nShorter paragraph\n\n"
        "Method paragraph using seed lexicon\n\nConclusion paragraph"
    )
    assert [q.question for q in paper.qas] == [
        "What is the seed lexicon?",
        "Are there three?",
        "Are there four?",
        "Is this extractive?",
    ]
    assert [_answers(q) for q in paper.qas] == [
        [("abstractive", "a vocabulary"), ("extractive", "using seed lexicon")],
        [("boolean", "Yes")],
        [("none", UNANSWERABLE)],
        [("extractive", "Conclusion paragraph")],
    ]
    seed, _, unanswerable, _ = paper.qas
    assert seed.answers[0].evidence == ["Method paragraph using seed lexicon"]
    # An unanswerable annotation carries no evidence even where the raw record lists some.
    assert unanswerable.answers[0].evidence == []
    assert unanswerable.unanswerable and unanswerable.gold_answers == []
    assert seed.gold_answers == ["a vocabulary", "using seed lexicon"]
    assert all(q.level is None and q.source == "human" for q in paper.qas)


def test_qasper_sample_spans_joined_and_float_selected_dropped(shared_data, tmp_path):
    raw = json.loads((shared_data / "qasper" / "qasper_sample_small.json").read_text())
    answer = raw["1909.00694"]["qas"][3]["answers"][0]["answer"]
    answer["extractive_spans"] = ["Conclusion paragraph", "  seed lexicon "]
    answer["evidence"] = ["FLOAT SELECTED: Table 1: scores", "Conclusion paragraph", ""]
    raw["1909.00694"]["qas"][1]["answers"][0]["answer"]["yes_no"] = False
    path = tmp_path / "qasper.json"
    path.write_text(json.dumps(raw))
    (paper,) = convert_qasper([path])
    extractive = paper.qas[3].answers[0]
    assert extractive.text == "Conclusion paragraph, seed lexicon"
    assert extractive.evidence == ["Conclusion paragraph"]
    assert _answers(paper.qas[1]) == [("boolean", "No")]


def test_hotpotqa_sample_evidence_is_stripped_supporting_sentences(shared_data):
    path = shared_data / "hotpotqa" / "hotpot_dev_distractor_v1.sample.json"
    raw = json.loads(path.read_text())
    examples = convert_hotpotqa([path])
    assert len(examples) == 20
    assert [e.id for e in examples] == [r["_id"] for r in raw]
    leading_space = 0
    for example, record in zip(examples, raw, strict=True):
        paragraphs = {title: sentences for title, sentences in record["context"]}
        expected = [paragraphs[title][i] for title, i in record["supporting_facts"]]
        leading_space += sum(s.startswith(" ") for s in expected)
        assert example.evidence == [s.strip() for s in expected]
        assert example.answer == record["answer"].strip()
        assert example.question == record["question"].strip()
        assert example.type == record["type"] and example.level == record["level"]
        assert [p.title for p in example.context] == [t for t, _ in record["context"]]
        assert not example.unanswerable
    assert leading_space > 0  # the sample has supporting sentences with the leading space
    first = examples[0]
    assert first.answer == "yes"
    assert first.evidence == [
        "Scott Derrickson (born July 16, 1966) is an American director, screenwriter and producer.",
        (
            "Edward Davis Wood Jr. (October 10, 1924 \u2013 December 10, 1978) was an American filmmaker, "
            "actor, writer, producer, and director."
        ),
    ]
    assert examples[1].evidence[2] == (
        "As an adult, she was named United States ambassador to Ghana and to Czechoslovakia and "
        "also served as Chief of Protocol of the United States."
    )


def test_infobench_full_file_counts(shared_data):
    instructions = convert_infobench([shared_data / "infobench" / "InfoBench.json"])
    assert len(instructions) == 500
    assert sum(len(i.requirements) for i in instructions) == 2250
    assert Counter(i.subset for i in instructions) == {"Easy": 252, "Hard": 248}
    assert Counter(i.subset for i in instructions for _ in i.requirements) == {
        "Easy": 690,
        "Hard": 1560,
    }
    labels = Counter(label for i in instructions for r in i.requirements for label in r.labels)
    assert labels == {
        "Content": 1395,
        "Format": 794,
        "Number": 419,
        "Style": 190,
        "Linguistic": 168,
    }
    # Multi-label questions count toward each of their labels.
    assert sum(labels.values()) > 2250
    assert sum(1 for i in instructions if not i.input) == 275
    for i in instructions:
        expected = "Easy" if i.id.startswith("user_oriented_task_") else "Hard"
        assert i.subset == expected


def test_lfrqa_samples_all_domains(shared_data):
    for domain in LFRQA_DOMAINS:
        path = shared_data / "lfrqa" / f"annotations_{domain}_with_citation.sample.jsonl"
        raw = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        queries = convert_lfrqa([path], domain)
        assert len(queries) == 50, domain
        assert [q.id for q in queries] == [str(r["qid"]) for r in raw]
        for query, record in zip(queries, raw, strict=True):
            assert query.domain == domain
            assert all(isinstance(d, str) for d in query.gold_doc_ids)
            assert query.gold_doc_ids == [str(d) for d in record["gold_doc_ids"]]
            lines = query.reference.split("\n")
            # the cited text without its citations: the release's `answer` up to the space it
            # leaves before punctuation ("entails [2]." -> "entails ."), but for the one row
            # whose `answer` keeps a malformed citation, "(1*, 2*, 3*]"
            if query.id != "science-search-test-531":
                assert _spaced(query.reference) == _spaced(record["answer"]), query.id
            else:
                assert "(1*, 2*, 3*]" in record["answer"] and "(1" not in query.reference
            # one citation list per line of the cited answer, all inside the gold documents
            assert len(query.citations) == len(lines)
            assert all(1 <= c <= len(query.gold_doc_ids) for cs in query.citations for c in cs)
    fiqa = convert_lfrqa(
        [shared_data / "lfrqa" / "annotations_fiqa_with_citation.sample.jsonl"], "fiqa"
    )
    assert fiqa[0].id == "1093"  # int qid -> str
    assert fiqa[0].citations[:4] == [[1], [1], [2], [3]]


def test_lfrqa_citations_come_from_the_text_not_citation_numbers(shared_data):
    path = shared_data / "lfrqa" / "annotations_science_with_citation.sample.jsonl"
    queries = {q.id: q for q in convert_lfrqa([path], "science")}
    query = queries["science-search-test-512"]
    # citation_numbers says [[1], [2], [2]]; the text says [1, 2] on the first line
    assert query.citations == [[1, 2], [2], [2]]
    assert query.gold_doc_ids == ["1534523", "1542657"]
    assert (
        query.reference.split("\n")[0]
        == "The magnitude of friction is always positive by definition."
    )
    assert query.reference_with_citation.split("\n")[0].endswith("by definition. [1, 2]")


def test_lfrqa_technology_dangling_citation_is_dropped(shared_data, caplog):
    path = shared_data / "lfrqa" / "annotations_technology_with_citation.sample.jsonl"
    with caplog.at_level(logging.WARNING, logger="isqaflow.data.lfrqa"):
        queries = {q.id: q for q in convert_lfrqa([path], "technology")}
    query = queries["technology-search-test-525"]
    assert query.gold_doc_ids == ["605250", "605389"]
    assert (
        query.reference_with_citation
        == "000 is a valid CVV code, but not one that banks use very often. [1, 2, 3]"
    )
    assert query.citations == [[1, 2]]  # [3] points past the two gold documents
    assert query.reference == "000 is a valid CVV code, but not one that banks use very often."
    assert (
        f"{path}, line 15, record 'technology-search-test-525', field faithful_answer_w_citation: "
        "citation(s) [3] of reference line 1 point past the 2 gold document(s): dropped"
    ) in caplog.text


def _spaced(text: str) -> str:
    return re.sub(r"\s+([.,;:!?])", r"\1", " ".join(text.split()))


# =========================================================================== embedded data
def test_embedded_qasper_minimums():
    papers = convert_qasper([EMBEDDED / "qasper" / "qasper-embedded-v0.3.json"])
    assert len(papers) >= 3
    assert all(len(p.qas) >= 6 for p in papers)
    types = Counter(a.type for p in papers for q in p.qas for a in q.answers)
    assert set(types) == {"extractive", "abstractive", "boolean", "none"}
    assert any(q.unanswerable for p in papers for q in p.qas)
    assert all(p.body() and p.abstract and p.title for p in papers)
    answers = {q.id: q for p in papers for q in p.qas}
    by_prefix = {qid[:10]: q for qid, q in answers.items()}
    assert _answers(by_prefix["5e9c7bfa3b"]) == [("extractive", "Corvel-QA, Natural Questions")]
    assert _answers(by_prefix["bd20a0d6de"]) == [("boolean", "No")]
    assert _answers(by_prefix["6af98e56ff"]) == [("boolean", "Yes")]
    float_q = by_prefix["3f03eb4b62"]
    assert float_q.answers[0].text == "From 61.2% to 68.9% (7.7 points)"
    assert not any(ev.startswith("FLOAT SELECTED") for ev in float_q.evidence)
    assert len(float_q.answers[0].evidence) == 1


def test_embedded_scimrc_levels():
    papers = convert_scimrc([EMBEDDED / "scimrc" / "scimrc-embedded.jsonl"])
    assert len(papers) >= 1
    assert all(p.dataset == "scimrc" and p.qas for p in papers)
    assert {q.level for p in papers for q in p.qas} == {"beginner", "student", "expert"}
    assert {a.type for p in papers for q in p.qas for a in q.answers} <= {"abstractive", "none"}


def test_embedded_hotpotqa_minimums():
    train = convert_hotpotqa([EMBEDDED / "hotpotqa" / "hotpot_train_embedded.json"])
    dev = convert_hotpotqa([EMBEDDED / "hotpotqa" / "hotpot_dev_embedded.json"])
    assert len(train) >= 20
    assert len(dev) >= 1
    assert not {e.id for e in train} & {e.id for e in dev}
    assert {e.type for e in train} == {"bridge", "comparison"}
    for example in train + dev:
        assert example.evidence and all(ev == ev.strip() for ev in example.evidence)
        sentences = {s.strip() for p in example.context for s in p.sentences}
        assert set(example.evidence) <= sentences


def test_embedded_infobench_minimums():
    instructions = convert_infobench([EMBEDDED / "infobench" / "InfoBench-embedded.json"])
    assert len(instructions) >= 10
    assert {i.subset for i in instructions} == {"Easy", "Hard"}
    assert {label for i in instructions for r in i.requirements for label in r.labels} == set(
        CONSTRAINT_LABELS
    )


def test_embedded_lfrqa_queries_corpora_and_gold_documents():
    queries = []
    n_passages = 0
    for annotation_file in sorted((EMBEDDED / "lfrqa").glob("annotations_*_with_citation.jsonl")):
        domain = annotation_file.name.removeprefix("annotations_").removesuffix(
            "_with_citation.jsonl"
        )
        domain_queries = convert_lfrqa([annotation_file], domain)
        queries += domain_queries
        corpus, fmt = EMBEDDED_CORPORA[domain]
        documents = list(read_corpus(EMBEDDED / "lfrqa" / corpus, fmt))
        doc_ids = {doc_id for doc_id, _ in documents}
        assert len(doc_ids) == len(documents), domain
        for query in domain_queries:
            missing = set(query.gold_doc_ids) - doc_ids
            assert not missing, (domain, query.id, missing)
        passages = list(passages_from_documents(documents, domain, 100))
        assert all(1 <= len(p.text.split()) <= 100 for p in passages)
        assert all(p.domain == domain and p.doc_id in doc_ids for p in passages)
        assert {p.doc_id for p in passages} == {d for d, text in documents if text.split()}
        n_passages += len(passages)
    assert len(queries) >= 12
    assert len({q.domain for q in queries}) >= 3
    assert n_passages >= 60


def test_embedded_human_pairwise_has_three_annotators_per_pair():
    labels = read_human_labels(EMBEDDED / "lfrqa" / "human_pairwise.csv")
    assert len(labels) > 0
    per_pair = labels.groupby("pair_id")["annotator"]
    assert (per_pair.nunique() == 3).all()
    assert (per_pair.size() == 3).all()


def test_embedded_write_papers_round_trips(tmp_path):
    out = tmp_path / "papers.jsonl"
    n = write_papers([EMBEDDED / "qasper" / "qasper-embedded-v0.3.json"], "qasper", "qasper", out)
    papers = read_records(out, Paper)
    assert (
        n == len(papers) == len(convert_qasper([EMBEDDED / "qasper" / "qasper-embedded-v0.3.json"]))
    )
    assert [p.id for p in papers] == sorted(p.id for p in papers)
    assert (
        write_papers(
            [EMBEDDED / "qasper" / "qasper-embedded-v0.3.json"],
            "qasper",
            "qasper",
            tmp_path / "two.jsonl",
            max_papers=2,
        )
        == 2
    )


# =========================================================================== bad input
def _qasper_paper(**overrides) -> dict:
    paper = {
        "title": "A paper",
        "abstract": "An abstract.",
        "full_text": [{"section_name": "Intro", "paragraphs": ["Some text."]}],
        "qas": [
            {
                "question": "What?",
                "question_id": "q1",
                "answers": [
                    {
                        "answer": {
                            "unanswerable": False,
                            "extractive_spans": ["text"],
                            "yes_no": None,
                            "free_form_answer": "",
                            "evidence": [],
                        }
                    }
                ],
            }
        ],
    }
    paper.update(overrides)
    return paper


def _write_json(path: Path, obj) -> Path:
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def _write_jsonl(path: Path, rows) -> Path:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8"
    )
    return path


def test_qasper_annotation_without_any_answer(tmp_path):
    paper = _qasper_paper()
    paper["qas"].append(
        {
            "question": "Why?",
            "question_id": "q2",
            "answers": [
                {
                    "answer": {
                        "unanswerable": False,
                        "extractive_spans": [],
                        "yes_no": None,
                        "free_form_answer": "  ",
                        "evidence": [],
                    }
                }
            ],
        }
    )
    path = _write_json(tmp_path / "qasper.json", {"P1": _qasper_paper(), "P2": paper})
    with pytest.raises(RecordError) as info:
        convert_qasper([path])
    _assert_names(info.value, path, "P2", "qas[1].answers[0].answer")


def test_qasper_question_missing(tmp_path):
    paper = _qasper_paper()
    del paper["qas"][0]["question"]
    path = _write_json(tmp_path / "qasper.json", {"P1": paper})
    with pytest.raises(RecordError) as info:
        convert_qasper([path])
    _assert_names(info.value, path, "P1", "qas[0].question")
    assert "missing field" in str(info.value)


def test_qasper_wrong_type_of_spans(tmp_path):
    paper = _qasper_paper()
    paper["qas"][0]["answers"][0]["answer"]["extractive_spans"] = ["ok", 3]
    path = _write_json(tmp_path / "qasper.json", {"P1": paper})
    with pytest.raises(RecordError) as info:
        convert_qasper([path])
    _assert_names(info.value, path, "P1", "qas[0].answers[0].answer.extractive_spans[1]")


def test_qasper_blank_question_names_record(tmp_path):
    paper = _qasper_paper()
    paper["qas"][0]["question"] = "   "
    path = _write_json(tmp_path / "qasper.json", {"P1": paper})
    with pytest.raises(RecordError) as info:
        convert_qasper([path])
    _assert_names(info.value, path, "P1", "qas[0].question")


def test_scimrc_bad_annotate_type(tmp_path):
    paper = {
        "id": "S1",
        "title": "T",
        "abstract": "A",
        "full_text": [],
        "qas": [
            {
                "question": "Q?",
                "questionId": "s1q1",
                "annotateType": "4",
                "answers": [{"answer": {"unanswerable": True}}],
            }
        ],
    }
    path = _write_jsonl(tmp_path / "scimrc.jsonl", [paper, {**paper, "id": "S2"}])
    with pytest.raises(RecordError) as info:
        convert_scimrc([path])
    _assert_names(info.value, path, "S1", "qas[0].annotateType", line=1)


def _hotpot(rid: str = "H1", **overrides) -> dict:
    record = {
        "_id": rid,
        "question": "Who?",
        "answer": "Ann",
        "type": "bridge",
        "level": "easy",
        "supporting_facts": [["Ann", 0], ["Bob", 1]],
        "context": [["Ann", ["Ann is a writer."]], ["Bob", ["Bob is a cook.", " He met Ann."]]],
    }
    record.update(overrides)
    return record


def test_hotpotqa_small_record_converts(tmp_path):
    path = _write_json(tmp_path / "hotpot.json", [_hotpot()])
    (example,) = convert_hotpotqa([path])
    assert example.evidence == ["Ann is a writer.", "He met Ann."]
    assert example.context_text() == "Ann is a writer.\nBob is a cook. He met Ann."


def test_hotpotqa_supporting_fact_title_not_in_context(tmp_path):
    bad = _hotpot("H2", supporting_facts=[["Ann", 0], ["Carol", 0]])
    path = _write_json(tmp_path / "hotpot.json", [_hotpot(), bad])
    with pytest.raises(RecordError) as info:
        convert_hotpotqa([path])
    _assert_names(info.value, path, "H2", "supporting_facts[1]")
    assert "'Carol'" in str(info.value)


def test_hotpotqa_fact_past_paragraph_end_is_an_error_naming_record_and_field(tmp_path):
    record = _hotpot("H2", supporting_facts=[["Ann", 0], ["Bob", 7]])
    path = _write_json(tmp_path / "hotpot.json", [_hotpot(), record])
    with pytest.raises(RecordError) as info:
        convert_hotpotqa([path])
    _assert_names(info.value, path, "H2", "supporting_facts[1]")
    assert "sentence 7 of paragraph 'Bob', which has 2 sentence(s)" in str(info.value)


def test_hotpotqa_lenient_skips_a_fact_past_paragraph_end_with_a_warning_naming_it(
    tmp_path, caplog
):
    record = _hotpot("H2", supporting_facts=[["Ann", 0], ["Bob", 7]])
    path = _write_json(tmp_path / "hotpot.json", [record])
    with caplog.at_level(logging.WARNING, logger="isqaflow.data.hotpotqa"):
        (example,) = convert_hotpotqa([path], lenient=True)
    assert example.evidence == ["Ann is a writer."]
    assert (
        f"{path}, record 'H2', field 'supporting_facts[1]': supporting fact points at sentence 7"
        in caplog.text
    )
    assert "skipped 1 supporting fact(s)" in caplog.text
    # a record left without any evidence is an error even so
    only_bad = _write_json(
        tmp_path / "only_bad.json", [_hotpot("H3", supporting_facts=[["Bob", 9]])]
    )
    with pytest.raises(RecordError) as info:
        convert_hotpotqa([only_bad], lenient=True)
    _assert_names(info.value, only_bad, "H3", "supporting_facts")


def test_write_qa_examples_passes_lenient_through(tmp_path):
    path = _write_json(
        tmp_path / "hotpot.json", [_hotpot(supporting_facts=[["Ann", 0], ["Bob", 7]])]
    )
    with pytest.raises(RecordError):
        write_qa_examples([path], tmp_path / "strict.jsonl")
    assert not (tmp_path / "strict.jsonl").exists()
    assert write_qa_examples([path], tmp_path / "lenient.jsonl", lenient=True) == 1


def test_hotpotqa_empty_question(tmp_path):
    path = _write_json(tmp_path / "hotpot.json", [_hotpot(question="  ")])
    with pytest.raises(RecordError) as info:
        convert_hotpotqa([path])
    _assert_names(info.value, path, "H1", "question")


# --------------------------------------------------------------------------- input without records
def _paper_line(**overrides) -> dict:
    return {
        "id": "S1",
        "title": "T",
        "abstract": "A",
        "full_text": [{"section_name": "S", "paragraphs": ["P."]}],
        "qas": [
            {
                "question": "Q?",
                "questionId": "s1q1",
                "answers": [{"answer": {"free_form_answer": "An answer."}}],
            }
        ],
        **overrides,
    }


# per converter: the files of its shape that hold no record
EMPTY_FILES = [
    (lambda p: convert_qasper([p]), "qasper.json", ["", "\n  \n", "{}"]),
    (lambda p: convert_scimrc([p]), "scimrc.json", ["", "\n  \n", "[]", "{}"]),
    (lambda p: convert_hotpotqa([p]), "hotpot.json", ["", "\n  \n", "[]"]),
    (lambda p: convert_infobench([p]), "InfoBench.json", ["", "\n  \n"]),
    (lambda p: convert_lfrqa([p], "science"), "annotations.jsonl", ["", "\n  \n"]),
]


@pytest.mark.parametrize(
    "convert, name, content",
    [(convert, name, content) for convert, name, contents in EMPTY_FILES for content in contents],
    ids=[f"{name}-{content!r}" for _, name, contents in EMPTY_FILES for content in contents],
)
def test_a_file_without_records_is_an_error_naming_the_file(tmp_path, convert, name, content):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(RecordError, match="holds no records") as info:
        convert(path)
    assert info.value.file == str(path) and str(info.value).startswith(f"{path}: ")


def test_an_empty_file_among_good_ones_is_named(tmp_path):
    good = _write_json(tmp_path / "train.json", {"P1": _qasper_paper()})
    empty = tmp_path / "dev.json"
    empty.write_text("")
    with pytest.raises(RecordError, match="the file is empty") as info:
        convert_qasper([good, empty])
    assert info.value.file == str(empty)


@pytest.mark.parametrize("qas", [[], None, "missing"])
def test_a_paper_without_questions_is_an_error(tmp_path, qas):
    paper = _qasper_paper()
    if qas == "missing":
        del paper["qas"]
    else:
        paper["qas"] = qas
    path = _write_json(tmp_path / "qasper.json", {"P1": _qasper_paper(), "P2": paper})
    with pytest.raises(RecordError) as info:
        convert_qasper([path])
    _assert_names(info.value, path, "P2", "qas")
    assert "has no questions" in str(info.value)
    scimrc = _write_jsonl(tmp_path / "scimrc.jsonl", [_paper_line(), _paper_line(id="S2", qas=[])])
    with pytest.raises(RecordError) as info:
        convert_scimrc([scimrc])
    _assert_names(info.value, scimrc, "S2", "qas", line=2)


def test_a_domain_with_an_empty_corpus_is_an_error_and_writes_nothing(tmp_path):
    annotations = _write_jsonl(tmp_path / "ann.jsonl", [_lfrqa()])
    for corpus_format, name in (("lotte_tsv", "collection.tsv"), ("beir_jsonl", "corpus.jsonl")):
        corpus = tmp_path / name
        corpus.write_text("\n")
        out = tmp_path / corpus_format
        with pytest.raises(
            RecordError, match="the corpus of domain 'science' holds no documents"
        ) as info:
            write_rag(
                "science",
                [annotations],
                corpus,
                corpus_format,
                100,
                out / "queries.jsonl",
                out / "passages.jsonl",
            )
        assert info.value.file == str(corpus)
        assert not out.exists()


def test_lfrqa_empty_question(tmp_path):
    path = _write_jsonl(tmp_path / "ann.jsonl", [_lfrqa(question=" ")])
    with pytest.raises(RecordError) as info:
        convert_lfrqa([path], "science")
    _assert_names(info.value, path, "science-1", "question", line=1)


def _infobench(rid: str = "user_oriented_task_1", **overrides) -> dict:
    record = {
        "id": rid,
        "input": "",
        "category": "Writing",
        "instruction": "Write a haiku.",
        "decomposed_questions": ["Is it a haiku?", "Is it about autumn?"],
        "subset": "Easy_set",
        "question_label": [["Format"], ["Content", "Style"]],
    }
    record.update(overrides)
    return record


def test_infobench_label_count_mismatch(tmp_path):
    bad = _infobench("domain_oriented_task_7", subset="Hard_set", question_label=[["Format"]])
    path = _write_jsonl(tmp_path / "infobench.json", [_infobench(), bad])
    with pytest.raises(RecordError) as info:
        convert_infobench([path])
    _assert_names(info.value, path, "domain_oriented_task_7", "question_label", line=2)


def test_infobench_unknown_constraint_label(tmp_path):
    bad = _infobench(question_label=[["Format"], ["Content", "Colour"]])
    path = _write_jsonl(tmp_path / "infobench.json", [bad])
    with pytest.raises(RecordError) as info:
        convert_infobench([path])
    _assert_names(info.value, path, "user_oriented_task_1", "question_label[1]", line=1)
    assert "'Colour'" in str(info.value)


def test_infobench_invalid_json_line_names_the_line(tmp_path):
    path = _write_jsonl(
        tmp_path / "infobench.json", [_infobench(), '{"id": "user_oriented_task_2", ']
    )
    with pytest.raises(RecordError) as info:
        convert_infobench([path])
    _assert_names(info.value, path, None, None, line=2)
    assert "not valid JSON" in str(info.value)


def test_infobench_blank_question_names_record(tmp_path):
    path = _write_jsonl(
        tmp_path / "infobench.json", [_infobench(decomposed_questions=["  ", "Ok?"])]
    )
    with pytest.raises(RecordError) as info:
        convert_infobench([path])
    _assert_names(info.value, path, "user_oriented_task_1", "decomposed_questions[0]", line=1)


def test_infobench_no_questions_names_record(tmp_path):
    path = _write_jsonl(
        tmp_path / "infobench.json", [_infobench(decomposed_questions=[], question_label=[])]
    )
    with pytest.raises(RecordError) as info:
        convert_infobench([path])
    _assert_names(info.value, path, "user_oriented_task_1", "decomposed_questions", line=1)


def test_infobench_subset_disagreeing_with_id_is_rejected(tmp_path):
    path = _write_jsonl(tmp_path / "infobench.json", [_infobench(subset="Hard_set")])
    with pytest.raises(RecordError) as info:
        convert_infobench([path])
    _assert_names(info.value, path, "user_oriented_task_1", "subset", line=1)


def _lfrqa(qid="science-1", **overrides) -> dict:
    record = {
        "qid": qid,
        "question": "Why is ice lighter?",
        "answer": "Ice is less dense. \nHydrogen bonds hold it open.",
        "citation_numbers": [[1], [1]],
        "faithful_answer_w_citation": "Ice is less dense. [1]\nHydrogen bonds hold it open. [1, 2]",
        "gold_doc_ids": [310045, 310078],
    }
    record.update(overrides)
    return record


def test_lfrqa_small_record_converts(tmp_path):
    path = _write_jsonl(tmp_path / "ann.jsonl", [_lfrqa()])
    (query,) = convert_lfrqa([path], "science")
    assert query.reference == "Ice is less dense.\nHydrogen bonds hold it open."
    assert query.citations == [[1], [1, 2]]
    assert query.gold_doc_ids == ["310045", "310078"]


def test_lfrqa_missing_cited_answer(tmp_path):
    bad = _lfrqa("science-2")
    del bad["faithful_answer_w_citation"]
    path = _write_jsonl(tmp_path / "ann.jsonl", [_lfrqa(), bad])
    with pytest.raises(RecordError) as info:
        convert_lfrqa([path], "science")
    _assert_names(info.value, path, "science-2", "faithful_answer_w_citation", line=2)


def test_lfrqa_reference_is_the_cited_text_not_the_answer_field(tmp_path):
    # the release's `answer` is empty in 4 rows (lifestyle line 2195 on) and keeps inline
    # citations in others; RAG-QA Arena judges against the faithful answer
    empty = _lfrqa("science-2", answer="")
    missing = _lfrqa("science-3")
    del missing["answer"]
    path = _write_jsonl(tmp_path / "ann.jsonl", [empty, missing])
    queries = convert_lfrqa([path], "science")
    assert [q.reference for q in queries] == [
        "Ice is less dense.\nHydrogen bonds hold it open."
    ] * 2
    assert read_lfrqa([path], "science").answer_differs == ["science-2"]


def test_lfrqa_empty_cited_answer(tmp_path):
    path = _write_jsonl(tmp_path / "ann.jsonl", [_lfrqa(faithful_answer_w_citation=" [1]\n[2] \n")])
    with pytest.raises(RecordError) as info:
        convert_lfrqa([path], "science")
    _assert_names(info.value, path, "science-1", "faithful_answer_w_citation", line=1)


def test_lfrqa_citation_only_line_and_left_over_are_named(tmp_path):
    text = 'Ice is less dense.\n[2]\nIt floats. [1, 10"]'
    path = _write_jsonl(tmp_path / "ann.jsonl", [_lfrqa(faithful_answer_w_citation=text)])
    conversion = read_lfrqa([path], "science")
    (query,) = conversion.queries
    assert query.reference == 'Ice is less dense.\nIt floats. [1, 10"]'
    assert query.citations == [[2], []]
    assert [(r.line, r.record, r.field) for r in conversion.repairs] == [
        (1, "science-1", "faithful_answer_w_citation")
    ] * 2
    assert "line(s) [2] hold nothing but citations" in conversion.repairs[0].what
    assert "reference line 2 keeps what looks like a malformed citation" in (
        conversion.repairs[1].what
    )


def test_lfrqa_repeated_gold_document_renumbers_citations(tmp_path):
    record = _lfrqa(
        gold_doc_ids=[7, 8, 7],
        faithful_answer_w_citation="Ice is less dense. [1, 3]\nHydrogen bonds. [3] [2]",
    )
    path = _write_jsonl(tmp_path / "ann.jsonl", [record])
    conversion = read_lfrqa([path], "science")
    (query,) = conversion.queries
    assert query.gold_doc_ids == ["7", "8"]
    assert query.citations == [[1], [1, 2]]
    ((repair),) = conversion.repairs
    assert (repair.line, repair.field) == (1, "gold_doc_ids")
    assert "['7'] listed twice: kept once" in repair.what


def test_parse_cited_lines():
    lines, citations = parse_cited_lines(
        "First claim. [1]\n\n  Second [a] claim [2, 3]  \nNo citation here.\n"
    )
    assert lines == ["First claim.", "Second [a] claim", "No citation here."]
    assert citations == [[1], [2, 3], []]


@pytest.mark.parametrize(
    "text,line,cited",
    [  # each form occurs in the released files
        ("Mid-line. [1] Then more. [2]", "Mid-line. Then more.", [1, 2]),
        ("[1] At the start.", "At the start.", [1]),
        ("Before the stop [2].", "Before the stop.", [2]),
        ("No space.[1]", "No space.", [1]),
        ("Run of groups. [1][4]", "Run of groups.", [1, 4]),
        ("Odd forms. [1. 2] [*3] [4,5 6] [7, 8,]", "Odd forms.", [1, 2, 3, 4, 5, 6, 7, 8]),
        ("Opened by a parenthesis (1, 2, 3]", "Opened by a parenthesis", [1, 2, 3]),
        ('A quote." {9]', 'A quote."', [9]),
        ("Left unclosed. [3", "Left unclosed.", [3]),
        ("Repeated [1] twice [1]", "Repeated twice", [1]),
        # not citations: an index, an interval, LaTeX, a character class, a decimal
        ("$S[0] = 1$ and $F[6]", "$S[0] = 1$ and $F[6]", []),
        ("in $[0,1]$ and (0,1]", "in $[0,1]$ and (0,1]", []),
        ("\\frac{11}{8} and tr '[0-9]' and [3.5]", "\\frac{11}{8} and tr '[0-9]' and [3.5]", []),
    ],
)
def test_parse_cited_lines_real_forms(text, line, cited):
    assert parse_cited_lines(text) == ([line], [cited])


def test_lotte_line_without_tab(tmp_path):
    path = tmp_path / "collection.tsv"
    path.write_text("1\tFirst document text.\n2 no tab on this line\n", encoding="utf-8")
    reader = read_corpus(path, "lotte_tsv")
    assert next(reader) == ("1", "First document text.")
    with pytest.raises(RecordError) as info:
        next(reader)
    _assert_names(info.value, path, None, "pid", line=2)


def test_lotte_csv_error_names_file_and_line(tmp_path):
    """A passage over the csv module's field limit raised csv.Error without the file or line."""
    path = tmp_path / "collection.tsv"
    path.write_text("1\tFirst document text.\n2\t" + "x" * 200_000 + "\n", encoding="utf-8")
    reader = read_corpus(path, "lotte_tsv")
    assert next(reader) == ("1", "First document text.")
    with pytest.raises(RecordError, match="field larger than field limit") as info:
        next(reader)
    _assert_names(info.value, path, None, "text", line=2)


def test_read_corpus_formats(tmp_path):
    beir = _write_jsonl(
        tmp_path / "corpus.jsonl",
        [
            {"_id": "a", "title": "Title", "text": "Body text."},
            {"_id": 7, "title": "", "text": " Plain. "},
        ],
    )
    assert list(read_corpus(beir, "beir_jsonl")) == [("a", "Title. Body text."), ("7", "Plain.")]
    bad = _write_jsonl(tmp_path / "bad.jsonl", [{"_id": "b", "title": "T"}])
    with pytest.raises(RecordError) as info:
        list(read_corpus(bad, "beir_jsonl"))
    _assert_names(info.value, bad, "b", "text", line=1)
    with pytest.raises(ValueError, match="unknown corpus format"):
        read_corpus(beir, "parquet")


@pytest.mark.parametrize(
    ("model", "id_field", "record", "field"),
    [
        (
            RagQuery,
            "id",
            {
                "id": "q9",
                "domain": "science",
                "question": "Q?",
                "reference": "R",
                "reference_with_citation": "R [1]",
                "citations": [[1]],
                "gold_doc_ids": "123",
            },
            "gold_doc_ids",
        ),
        (
            Instruction,
            "id",
            {
                "id": "user_oriented_task_9",
                "subset": "Easy",
                "category": "c",
                "instruction": "Do.",
                "requirements": [{"question": "Done?", "labels": [5]}],
            },
            "requirements.0.labels.0",
        ),
    ],
)
def test_read_records_wrong_field_type(tmp_path, model, id_field, record, field):
    good = dict(record)
    if model is RagQuery:
        good.update(id="q1", gold_doc_ids=["1"])
    else:
        good.update(
            id="user_oriented_task_1", requirements=[{"question": "Done?", "labels": ["Format"]}]
        )
    path = _write_jsonl(tmp_path / "records.jsonl", [good, "", record])
    with pytest.raises(RecordError) as info:
        read_records(path, model, id_field)
    _assert_names(info.value, path, record["id"], field, line=3)
    assert len(read_records(_write_jsonl(tmp_path / "ok.jsonl", [good]), model)) == 1


# =========================================================================== atomic outputs
def test_write_papers_on_malformed_file_leaves_nothing(tmp_path):
    paper = _qasper_paper()
    del paper["qas"][0]["question"]
    src = _write_json(tmp_path / "qasper.json", {"P1": paper})
    out_dir = tmp_path / "out"
    out = out_dir / "papers.jsonl"
    with pytest.raises(RecordError):
        write_papers([src], "qasper", "qasper", out)
    assert not out.exists()
    assert not out_dir.exists() or list(out_dir.iterdir()) == []
    # An earlier, complete output is left as it was.
    out_dir.mkdir(exist_ok=True)
    out.write_text("old\n")
    with pytest.raises(RecordError):
        write_papers([src], "qasper", "qasper", out)
    assert out.read_text() == "old\n"
    assert list(out_dir.iterdir()) == [out]
    with pytest.raises(ValueError, match="unknown paper format"):
        write_papers([src], "pdf", "qasper", out)


def test_write_jsonl_failing_midway_leaves_no_file(tmp_path):
    def records():
        yield {"id": 1}
        raise RuntimeError("boom")

    out = tmp_path / "out.jsonl"
    with pytest.raises(RuntimeError, match="boom"):
        write_jsonl(out, records())
    assert list(tmp_path.iterdir()) == []


def test_atomic_open_keeps_old_content_on_error(tmp_path):
    path = tmp_path / "file.txt"
    path.write_text("old content\n")
    with pytest.raises(KeyError), atomic_open(path) as handle:
        handle.write("new, half-written")
        raise KeyError("interrupted")
    assert path.read_text() == "old content\n"
    assert list(tmp_path.iterdir()) == [path]
    with atomic_open(path) as handle:
        handle.write("new content\n")
    assert path.read_text() == "new content\n"
    assert list(tmp_path.iterdir()) == [path]


# =========================================================================== passages
def test_split_into_passages_covers_all_words_in_order():
    words = [f"w{i}" for i in range(250)]
    text = "  " + "\n".join(" \t".join(words[i : i + 7]) for i in range(0, 250, 7)) + " "
    passages = list(split_into_passages("doc1", text, "science", max_words=100))
    assert [p.id for p in passages] == ["doc1-0", "doc1-1", "doc1-2"]
    assert [len(p.text.split()) for p in passages] == [100, 100, 50]
    assert [w for p in passages for w in p.text.split()] == words
    assert all(p.doc_id == "doc1" and p.domain == "science" for p in passages)
    assert passages[1].text == " ".join(words[100:200])


def test_split_into_passages_edges():
    assert [p.text for p in split_into_passages("d", "a b c d", "x", max_words=2)] == ["a b", "c d"]
    assert list(split_into_passages("d", "   \n ", "x")) == []
    assert [p.id for p in split_into_passages("d", "one", "x")] == ["d-0"]
    with pytest.raises(ValueError):
        list(split_into_passages("d", "a b", "x", max_words=0))
    docs = [("a", "one two three"), ("b", "four")]
    assert [(p.id, p.text) for p in passages_from_documents(docs, "x", 2)] == [
        ("a-0", "one two"),
        ("a-1", "three"),
        ("b-0", "four"),
    ]


def test_embedded_qasper_ids_look_like_the_real_ones():
    # The tests above find questions by id prefix; the ids are 40-hex like QASPER's.
    raw = json.loads((EMBEDDED / "qasper" / "qasper-embedded-v0.3.json").read_text())
    ids = [q["question_id"] for p in raw.values() for q in p["qas"]]
    assert all(re.fullmatch(r"[0-9a-f]{40}", i) for i in ids)
