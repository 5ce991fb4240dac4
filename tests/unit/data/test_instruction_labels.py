"""People's DRFR labels (InFoBench's evaluation format): the embedded file, and bad files named
by file, line and field before any expensive job (rule check_drfr_human_labels)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from isqaflow.data.infobench import convert_infobench
from isqaflow.data.instruction_labels import check_instruction_labels, read_instruction_labels
from isqaflow.io import RecordError, write_jsonl

ROOT = Path(__file__).resolve().parents[3]
EMBEDDED = ROOT / "data/embedded/infobench"
LABELS = EMBEDDED / "human-labels-handwritten.jsonl"


@pytest.fixture(scope="module")
def instructions():
    return {i.id: i for i in convert_infobench([EMBEDDED / "InfoBench-embedded.json"])}


def test_the_embedded_labels_are_8_of_the_handwritten_responses_16_questions(instructions):
    labels = read_instruction_labels(LABELS, instructions)
    assert len(labels) == 8 and labels["instruction_id"].nunique() == 3
    # each labels the text the handwritten responder gives (its AlpacaEval file)
    outputs = json.loads((ROOT / "data/embedded/systems/model_outputs.json").read_text())
    texts = {" ".join(o["output"].split()) for o in outputs}
    assert set(labels["output"]) <= texts


def test_the_check_writes_counts_per_responder(tmp_path, instructions):
    converted = tmp_path / "infobench.jsonl"
    write_jsonl(converted, [i.model_dump() for i in instructions.values()])
    record = check_instruction_labels({"handwritten": LABELS}, converted, tmp_path / "checked.json")
    assert record["responders"]["handwritten"]["questions"] == 8
    assert json.loads((tmp_path / "checked.json").read_text()) == record


def _first(**changes) -> list[dict]:
    rows = [json.loads(line) for line in LABELS.read_text().splitlines()]
    rows[1].update(changes)  # the second instruction: line 2
    return rows


@pytest.mark.parametrize(
    ("rows", "field", "message"),
    [
        (_first(eval=[True]), "eval", "1 values for 2 decomposed questions"),
        (_first(eval=[True, "yes"]), "eval[1]", "expected true, false or null, got str"),
        (_first(output=None), "output", "expected a string"),
        (_first(id="user_oriented_task_1"), "id", r"labelled twice \(first on line 1\)"),
        (_first(id="no_such_task"), "id", "not an instruction of the converted dataset"),
        (
            _first(decomposed_questions=["Does it rhyme?", "Is it short?"]),
            "decomposed_questions[0]",
            "the label would be of another question",
        ),
    ],
)
def test_a_bad_label_file_names_file_line_and_field(tmp_path, instructions, rows, field, message):
    path = tmp_path / "labels.jsonl"
    write_jsonl(path, rows)
    with pytest.raises(RecordError, match=message) as caught:
        read_instruction_labels(path, instructions)
    err = caught.value
    assert str(path) in str(err) and err.field == field and err.line == 2


def test_unparseable_json_and_a_file_without_any_label_are_named(tmp_path, instructions):
    broken = tmp_path / "broken.jsonl"
    broken.write_text(LABELS.read_text().splitlines()[0] + "\n{not json\n")
    with pytest.raises(RecordError, match="line 2"):
        read_instruction_labels(broken, instructions)
    unlabelled = tmp_path / "none.jsonl"
    write_jsonl(unlabelled, [{**row, "eval": [None] * len(row["eval"])} for row in _first()])
    with pytest.raises(RecordError, match="every eval value is null"):
        read_instruction_labels(unlabelled, instructions)
