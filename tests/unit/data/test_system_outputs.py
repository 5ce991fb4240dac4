"""Outputs of one's own system read from files: the four formats, and every bad input
stopped with the file, the line and the id (isqaflow.data.outputs)."""

import json

import pytest

from isqaflow.data.outputs import (
    Item,
    OutputFileError,
    detect_format,
    instruction_items,
    read_system_outputs,
)
from isqaflow.data.schema import Instruction

RAG = [
    Item("fiqa:1", "1", ("should i pay off my loan?",), "fiqa"),
    Item("fiqa:2", "2", ("what is an index fund?",), "fiqa"),
    Item("science:1", "1", ("why does ice float?",), "science"),
]
PAPERS = [Item("p1", "p1", ("Paper One",)), Item("p2", "p2", ("Paper Two",))]


def _jsonl(tmp_path, rows, name="out.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_jsonl_keyed_by_id_and_domain(tmp_path):
    path = _jsonl(
        tmp_path,
        [
            {"domain": "fiqa", "query_id": "1", "answer": "Pay it off."},
            {"domain": "fiqa", "qid": "2", "answer": "A basket of stocks."},
            {"id": "science:1", "answer": "It is less dense."},
        ],
    )
    out = read_system_outputs(path, "arena", RAG)
    assert out.format == "jsonl"
    assert out.outputs == {
        "fiqa:1": "Pay it off.",
        "fiqa:2": "A basket of stocks.",
        "science:1": "It is less dense.",
    }
    assert out.lines == {"fiqa:1": 1, "fiqa:2": 2, "science:1": 3}
    assert len(out.sha256) == 64 and out.missing == []


def test_an_id_of_two_domains_needs_its_domain(tmp_path):
    path = _jsonl(tmp_path, [{"qid": "1", "answer": "x"}])
    with pytest.raises(OutputFileError, match=r"line 1, id '1': ambiguous.*'fiqa:1', 'science:1'"):
        read_system_outputs(path, "arena", RAG, coverage="partial")


@pytest.mark.parametrize(
    "rows, message",
    [
        (
            [{"paper_id": "p1", "summary": "S."}, {"paper_id": "p9", "summary": "S."}],
            r"out.jsonl, line 2, id 'p9': not in the dataset",
        ),
        (
            [
                {"paper_id": "p1", "summary": "S."},
                {"paper_id": "p2", "summary": "T."},
                {"paper_id": "p1", "summary": "U."},
            ],
            r"out.jsonl, line 3, id 'p1': duplicate, 'p1' first on line 1",
        ),
        (
            [{"paper_id": "p1", "summary": "S."}, {"paper_id": "p2", "summary": "  \n"}],
            r"out.jsonl, line 2, id 'p2': empty output",
        ),
        (
            [{"paper_id": "p1", "summary": "S."}, {"paper_id": "p2"}],
            r"out.jsonl, line 2, id 'p2': no text field",
        ),
        (
            [{"paper_id": "p1", "summary": "S."}, {"summary": "T."}],
            r"out.jsonl, line 2: no id field",
        ),
        (
            [{"paper_id": "p1", "summary": "S."}, {"paper_id": "p2", "summary": 3}],
            r"line 2, id 'p2', field 'summary': the output is int 3, not text",
        ),
        (
            [{"paper_id": "p1", "summary": "S."}, ["p2", "T."]],
            r"line 2: expected a JSON object, got list",
        ),
    ],
)
def test_bad_records_name_file_line_and_id(tmp_path, rows, message):
    with pytest.raises(OutputFileError, match=message):
        read_system_outputs(_jsonl(tmp_path, rows), "isqa", PAPERS)


def test_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_bytes(
        b'{"paper_id": "p1", "summary": "ok"}\n{"paper_id": "p2", "summary": "caf\xe9"}\n'
    )
    with pytest.raises(
        OutputFileError,
        match=r"out.jsonl, line 2, record 'p2': not UTF-8: byte\(s\) e9 at column 35",
    ):
        read_system_outputs(path, "isqa", PAPERS)


def test_read_as_every_input_is_a_bom_is_dropped(tmp_path):
    """Editors and spreadsheet programs save UTF-8 with a byte-order mark: every other input
    accepts it (isqaflow.io); the system-outputs reader rejected it as invalid JSON."""
    jsonl = tmp_path / "out.jsonl"
    jsonl.write_bytes(
        b"\xef\xbb\xbf"
        + b'{"paper_id": "p1", "summary": "S."}\n{"paper_id": "p2", "summary": "T."}\n'
    )
    out = read_system_outputs(jsonl, "isqa", PAPERS)
    assert (
        out.format == "jsonl"
        and out.outputs == {"p1": "S.", "p2": "T."}
        and out.lines == {"p1": 1, "p2": 2}
    )
    listed = tmp_path / "model_outputs.json"
    listed.write_bytes(b"\xef\xbb\xbf" + json.dumps([{"instruction": "a", "output": "b"}]).encode())
    out = read_system_outputs(listed, "drfr", [Item("i1", "i1", ("a",))])
    assert out.format == "alpaca_eval" and out.outputs == {"i1": "b"}


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085"])
def test_lines_split_at_newline_only(tmp_path, separator):
    """Valid JSON may hold U+2028/U+2029/U+0085 unescaped inside a string;
    str.splitlines split the record there, so it was "not valid JSON" and every later line
    number was off by one."""
    path = tmp_path / "out.jsonl"
    rows = [
        {"paper_id": "p1", "summary": f"First{separator}part."},
        {"paper_id": "p2", "summary": "T."},
        {"paper_id": "p9", "summary": "U."},
    ]
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    with pytest.raises(OutputFileError) as err:
        read_system_outputs(path, "isqa", PAPERS)
    assert (
        len(err.value.problems) == 1
        and "line 3, id 'p9': not in the dataset" in err.value.problems[0]
    )
    out = read_system_outputs(path, "isqa", [*PAPERS, Item("p9", "p9", ("Nine",))])
    assert out.outputs["p1"] == f"First{separator}part." and out.lines == {
        "p1": 1,
        "p2": 2,
        "p9": 3,
    }


def test_a_key_twice_in_a_record_is_refused(tmp_path):
    """The one reader's strictness applies here too: JSON keeps the last of two equal keys."""
    path = tmp_path / "out.jsonl"
    path.write_text('{"paper_id": "p1", "summary": "S.", "summary": "T."}\n', encoding="utf-8")
    with pytest.raises(
        OutputFileError,
        match=r"out.jsonl, line 1, field 'summary': key 'summary' "
        r"occurs twice",
    ):
        read_system_outputs(path, "isqa", PAPERS, coverage="partial")


def test_not_json_names_the_line(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_text(
        '{"paper_id": "p1", "summary": "ok"}\n{"paper_id": "p2", "summary": \n', encoding="utf-8"
    )
    with pytest.raises(OutputFileError, match=r"out.jsonl, line 2: not valid JSON"):
        read_system_outputs(path, "isqa", PAPERS)


def test_json_list_not_json_names_the_line(tmp_path):
    path = tmp_path / "model_outputs.json"
    path.write_text(
        '[\n  {"instruction": "a", "output": "b"},\n  {"instruction": "c" "output": "d"}\n]\n'
    )
    with pytest.raises(OutputFileError, match=r"model_outputs.json, line 3: not valid JSON"):
        read_system_outputs(path, "drfr", [Item("i1", "i1", ("a",))], fmt="alpaca_eval")


def test_missing_ids_need_coverage_partial(tmp_path):
    path = _jsonl(tmp_path, [{"paper_id": "p2", "summary": "S."}])
    with pytest.raises(
        OutputFileError, match=r"1 of 2 dataset ids missing, first \['p1'\].*coverage: partial"
    ):
        read_system_outputs(path, "isqa", PAPERS)
    out = read_system_outputs(path, "isqa", PAPERS, coverage="partial")
    assert out.outputs == {"p2": "S."} and out.missing == ["p1"]
    assert out.summary()["n"] == 1 and out.summary()["n_dataset"] == 2


def test_every_problem_at_once(tmp_path):
    path = _jsonl(
        tmp_path, [{"paper_id": "p7", "summary": "S."}, {"paper_id": "p8", "summary": ""}]
    )
    with pytest.raises(OutputFileError) as err:
        read_system_outputs(path, "isqa", PAPERS)
    assert len(err.value.problems) == 2
    assert "'p7'" in str(err.value) and "'p8'" in str(err.value)


def test_alpaca_eval_keyed_by_instruction_text(tmp_path):
    instructions = [
        Instruction(
            id="t1",
            subset="Easy",
            category="c",
            instruction="Reply to the email.",
            input="Hi team",
            requirements=[{"question": "Is it polite?", "labels": ["Style"]}],
        ),
        Instruction(
            id="t2",
            subset="Hard",
            category="c",
            instruction="Write a poem.",
            requirements=[{"question": "Is it a poem?", "labels": ["Format"]}],
        ),
    ]
    path = tmp_path / "model_outputs.json"
    path.write_text(
        json.dumps(
            [
                {
                    "instruction": "Reply to the email.\n\nHi team",
                    "output": "Dear team, I will attend.",
                    "generator": "mine",
                },
                {
                    "instruction": "Write  a poem.",
                    "output": "Rain on the roof.",
                    "generator": "mine",
                },
            ],
            indent=2,
        )
    )
    out = read_system_outputs(path, "drfr", instruction_items(instructions))
    assert out.format == "alpaca_eval" and out.generator == "mine"
    assert out.outputs == {"t1": "Dear team, I will attend.", "t2": "Rain on the roof."}
    assert out.lines == {"t1": 2, "t2": 7}


def test_alpaca_eval_one_generator_per_file(tmp_path):
    path = tmp_path / "model_outputs.json"
    path.write_text(
        json.dumps(
            [
                {"instruction": "Paper One", "output": "a", "generator": "x"},
                {"instruction": "Paper Two", "output": "b", "generator": "y"},
            ]
        )
    )
    with pytest.raises(OutputFileError, match=r"several generators \['x', 'y'\]"):
        read_system_outputs(path, "isqa", PAPERS)


def test_arena_hard_v2_and_v01(tmp_path):
    v2 = _jsonl(
        tmp_path,
        [
            {
                "uid": "p1",
                "ans_id": "a",
                "model": "mine",
                "messages": [
                    {"role": "user", "content": "Summarize."},
                    {"role": "assistant", "content": {"answer": "One."}},
                ],
            },
            {
                "uid": "p2",
                "ans_id": "b",
                "model": "mine",
                "messages": [
                    {"role": "user", "content": "Summarize."},
                    {"role": "assistant", "content": "Two."},
                ],
            },
        ],
        "v2.jsonl",
    )
    out = read_system_outputs(v2, "isqa", PAPERS)
    assert out.format == "arena_hard" and out.outputs == {"p1": "One.", "p2": "Two."}
    v01 = _jsonl(
        tmp_path,
        [
            {
                "question_id": "p1",
                "answer_id": "a",
                "model_id": "mine",
                "choices": [{"index": 0, "turns": [{"content": "Uno.", "token_len": 2}]}],
            }
        ],
        "v01.jsonl",
    )
    out = read_system_outputs(v01, "isqa", PAPERS, coverage="partial")
    assert out.format == "arena_hard" and out.outputs == {"p1": "Uno."}


def test_ragqa_arena_prediction_file(tmp_path):
    path = tmp_path / "fiqa_mine.json"
    path.write_text(
        json.dumps(
            [
                {"query": "should i pay off my loan?", "pred": "Yes.", "passages": []},
                {"query": "what is an index fund?", "pred": "A fund."},
                {"query": "why does ice float?", "pred": "Density.", "domain": "science"},
            ]
        )
    )
    out = read_system_outputs(path, "arena", RAG)
    assert out.format == "ragqa_arena"
    assert out.outputs == {"fiqa:1": "Yes.", "fiqa:2": "A fund.", "science:1": "Density."}
    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps([{"query": "why is the sky blue?", "pred": "Rayleigh."}]))
    with pytest.raises(
        OutputFileError, match=r"unknown.json, line 1, query 'why is the sky blue\?': not in"
    ):
        read_system_outputs(unknown, "arena", RAG, coverage="partial")


def test_detection_is_refused_when_unclear(tmp_path):
    assert detect_format("f", '{"id": "p1", "summary": "s"}\n') == "jsonl"
    assert detect_format("f", '[{"instruction": "a", "output": "b"}]') == "alpaca_eval"
    assert detect_format("f", '[{"query": "a", "pred": "b"}]') == "ragqa_arena"
    with pytest.raises(OutputFileError, match="set format:"):
        detect_format("f", '[{"id": "p1", "summary": "s"}]')


@pytest.mark.parametrize(
    ("record", "message"),
    [
        # v0.1: choices a mapping, turns a mapping (main: a bare KeyError 0)
        (
            {"question_id": "p1", "choices": {"turns": [{"content": "x"}]}},
            r"line 1, id 'p1', field 'choices': expected a list of choices, got dict",
        ),
        (
            {"question_id": "p1", "choices": [{"turns": {"content": "x"}}]},
            r"line 1, id 'p1', field 'choices\[0\].turns': expected a list of turns, got dict",
        ),
        (
            {"question_id": "p1", "choices": [{"turns": [{"text": "x"}]}]},
            r"line 1, id 'p1', field 'choices\[0\].turns\[0\].content': the output is nothing, not text",
        ),
        # v2: messages not a list, no assistant message, content without answer (main: "the output
        # is NoneType, not text", no field)
        (
            {"uid": "p1", "messages": {"role": "assistant", "content": "x"}},
            r"line 1, id 'p1', field 'messages': expected a list of messages, got dict",
        ),
        (
            {"uid": "p1", "messages": [{"role": "user", "content": "q"}]},
            r"line 1, id 'p1', field 'messages': no message with role 'assistant'",
        ),
        (
            {
                "uid": "p1",
                "messages": [
                    {"role": "user", "content": "q"},
                    {"role": "assistant", "content": {"text": "x"}},
                ],
            },
            r"line 1, id 'p1', field 'messages\[1\].content.answer': an object without 'answer'",
        ),
        (
            {"uid": ["p1"], "messages": [{"role": "assistant", "content": "x"}]},
            r"line 1, field 'uid': an id is a string or an integer, got list",
        ),
    ],
)
def test_arena_hard_structure_is_checked_naming_the_field(tmp_path, record, message):
    path = _jsonl(tmp_path, [record], name="model.jsonl")
    with pytest.raises(OutputFileError, match=message):
        read_system_outputs(path, "isqa", PAPERS, fmt="arena_hard", coverage="partial")


@pytest.mark.parametrize(
    ("fmt", "rows", "message"),
    [
        (
            "jsonl",
            [{"paper_id": {"a": 1}, "summary": "x"}],
            r"line 1, field 'paper_id': an id is a string or an integer",
        ),
        (
            "jsonl",
            [{"paper_id": "p1", "summary": None}],
            r"line 1, id 'p1', field 'summary': the output is nothing",
        ),
        (
            "alpaca_eval",
            [{"instruction": "Paper One", "output": ["x"]}],
            r"line 1, instruction 'Paper One', field 'output': the output is list",
        ),
    ],
)
def test_a_wrong_shape_names_the_field(tmp_path, fmt, rows, message):
    if fmt == "jsonl":
        path = _jsonl(tmp_path, rows)
    else:
        path = tmp_path / "model_outputs.json"
        path.write_text(json.dumps(rows), encoding="utf-8")
    with pytest.raises(OutputFileError, match=message):
        read_system_outputs(path, "isqa", PAPERS, fmt=fmt, coverage="partial")


def test_an_id_paired_with_another_records_text_is_refused(tmp_path):
    """A record keyed by id that also carries the query: when the query is another item's, the
    id and the text disagree (a shifted column, a merge gone wrong): main accepted it."""
    path = _jsonl(
        tmp_path,
        [
            {"domain": "fiqa", "query_id": "1", "query": "what is an index fund?", "answer": "x"},
            {"domain": "fiqa", "query_id": "2", "query": "What is an  index fund?", "answer": "y"},
        ],
    )
    with pytest.raises(OutputFileError) as err:
        read_system_outputs(path, "arena", RAG, coverage="partial")
    assert err.value.problems == [
        (
            f"{path}, line 1, id '1', field 'query': this is the text of 'fiqa:2', not of "
            "'fiqa:1': the id and the text disagree (a shifted column?)"
        )
    ]
    # its own text (spaces collapsed), or a text of no item, is no contradiction
    ok = _jsonl(
        tmp_path,
        [
            {
                "domain": "fiqa",
                "query_id": "1",
                "query": "Should I pay off my loan?",
                "answer": "x",
            },
            {"domain": "fiqa", "qid": "2", "question": "what is an  index fund?", "answer": "y"},
        ],
        name="ok.jsonl",
    )
    assert read_system_outputs(ok, "arena", RAG, coverage="partial").outputs == {
        "fiqa:1": "x",
        "fiqa:2": "y",
    }
