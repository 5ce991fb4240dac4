"""A wrong-shaped outputs file is diagnosed once, then a few lines (isqaflow.data.shape via
isqaflow.data.outputs): before, each of its lines was a problem of its own (issue 41 item 6)."""

from __future__ import annotations

import json

import pytest

from isqaflow.data.outputs import Item, OutputFileError, read_system_outputs
from isqaflow.data.shape import EXAMPLES, wrong_shape

RAG = [
    Item("fiqa:1", "1", ("should i pay off my loan?",), "fiqa"),
    Item("fiqa:2", "2", ("what is an index fund?",), "fiqa"),
    Item("science:1", "1", ("why does ice float?",), "science"),
]
INSTRUCTIONS = [Item(f"i{n}", f"i{n}", (f"Write a poem about the number {n}.",)) for n in range(6)]


def problems(path, suite, items, **kwargs) -> list[str]:
    with pytest.raises(OutputFileError) as err:
        read_system_outputs(path, suite, items, **kwargs)
    return err.value.problems


def test_a_csv_is_said_to_look_like_csv_with_a_few_lines(tmp_path):
    path = tmp_path / "answers.csv"
    path.write_text("domain,query_id,answer\n" + "fiqa,1,Pay it off.\n" * 28)
    found = problems(path, "arena", RAG)
    assert found[0] == (
        f"{path}: looks like CSV (first line 'domain,query_id,answer'), not JSON: write one JSON "
        'object per line ({"id": ..., "answer": ...}) or set format: to the file\'s own'
    )
    assert len(found) == 1 + EXAMPLES + 1 and "not valid JSON" in found[1]
    assert found[-1] == f"{path}: ... and {29 - EXAMPLES} more lines like these"


def test_an_alpaca_eval_list_under_arena_hard_is_a_json_list_not_json_lines(tmp_path):
    path = tmp_path / "model_outputs.json"
    rows = [
        {"instruction": i.texts[0], "output": "A poem.", "generator": "me"} for i in INSTRUCTIONS
    ]
    path.write_text(json.dumps(rows, indent=2))
    found = problems(path, "drfr", INSTRUCTIONS, fmt="arena_hard")
    assert found[0] == (
        f"{path}: a JSON list, not JSON Lines (format: arena_hard reads one JSON object per "
        "line); it reads as AlpacaEval's file: set format: alpaca_eval (or auto)"
    )
    assert len(found) <= 2 + EXAMPLES


def test_json_lines_under_a_list_format(tmp_path):
    path = tmp_path / "preds.jsonl"
    path.write_text("".join(json.dumps({"query": "q", "pred": "a"}) + "\n" for _ in range(5)))
    found = problems(path, "arena", RAG, fmt="ragqa_arena")
    assert found[0].startswith(f"{path}: JSON Lines (one object per line), not a JSON list")


def test_the_answers_of_a_domain_the_run_has_not_are_one_sentence(tmp_path):
    folder = tmp_path / "my-rag"
    folder.mkdir()
    (folder / "fiqa_from_colbert_5_psgs.json").write_text(
        json.dumps([{"query": i.texts[0], "pred": "An answer."} for i in RAG[:2]])
    )
    lifestyle = [{"query": f"how do i fold shirt number {n}?", "pred": "Flat."} for n in range(150)]
    (folder / "lifestyle_from_colbert_5_psgs.json").write_text(json.dumps(lifestyle))
    files = sorted(folder.iterdir())
    found = problems(files, "arena", RAG, coverage="partial", name=str(folder))
    assert found == [
        f"{folder}: 150 record(s) of domain 'lifestyle', which is not in arena.domains "
        "(fiqa, science): add it there (and to datasets.rag.domains), or leave its answers out"
    ]


def test_a_file_of_another_benchmark_matches_none_of_the_dataset(tmp_path):
    path = tmp_path / "model_outputs.json"
    rows = [{"instruction": f"Other benchmark task {n}.", "output": "x"} for n in range(805)]
    path.write_text(json.dumps(rows))
    found = problems(path, "drfr", INSTRUCTIONS)
    assert found[0] == f"{path}: 0 of 805 records match this dataset (is it another benchmark's?)"
    assert len(found) == 1 + EXAMPLES + 1 and found[-1] == f"{path}: ... and {805 - EXAMPLES} more"


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ('{"id": "1", "answer": "a"}\n', "jsonl"),
        ('[{"instruction": "a", "output": "b"}]', "alpaca_eval"),
        ("", "jsonl"),
    ],
)
def test_a_right_shaped_file_has_no_diagnosis(text, fmt):
    assert wrong_shape(text, fmt) is None


def test_an_empty_output_is_not_also_reported_missing(tmp_path):
    """Before: the empty record's problem and "1 of 3 dataset ids missing ... set coverage:
    partial" for the same item."""
    path = tmp_path / "answers.jsonl"
    rows = [
        {"id": "fiqa:1", "answer": "Pay it off."},
        {"id": "fiqa:2", "answer": "  "},
        {"id": "science:1", "answer": "Less dense."},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert problems(path, "arena", RAG) == [f"{path}, line 2, id 'fiqa:2': empty output"]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:2]))  # science:1 is absent
    assert problems(path, "arena", RAG)[-1].startswith(f"{path}: 1 of 3 dataset ids missing")
