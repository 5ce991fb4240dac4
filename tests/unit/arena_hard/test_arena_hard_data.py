"""Arena-Hard's data: the embedded set in arena-hard's formats, the answers written in its answer
format, the paper's pinned downloads against the released files, the controls' records."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from isqaflow.arena_hard.answers import answer_record, question_request, read_questions, run_answers
from isqaflow.arena_hard.controls import control_items, control_records
from isqaflow.data.peers import read_arena_hard_answers
from isqaflow.io import read_jsonl
from isqaflow.report.validity import read_control_records, validity_summary

REPO = Path(__file__).resolve().parents[3]
EMBEDDED = REPO / "data/embedded/arena_hard"
RELEASED = REPO.parent / "shared/data/peers/arena-hard/data/arena-hard-v0.1"


def test_the_embedded_set_reads_in_arena_hards_formats():
    questions = read_questions(EMBEDDED / "question.jsonl")
    baseline = read_arena_hard_answers(EMBEDDED / "model_answer/handwritten-baseline.jsonl").table
    assert len(questions) == 4 and set(baseline["question_id"]) == set(questions["question_id"])
    assert read_questions(EMBEDDED / "question.jsonl", limit=2)["question_id"].tolist() == list(
        questions["question_id"][:2]
    )
    with pytest.raises(ValueError, match="at least 1"):
        read_questions(EMBEDDED / "question.jsonl", limit=0)


def test_an_answer_is_written_as_gen_answer_writes_it(tmp_path, monkeypatch):
    class Echo:
        def generate(self, requests, params):
            from isqaflow.models.base import Generation

            assert params.max_new_tokens == 8 and not params.do_sample
            return [Generation(text=f"re: {r[-1]['content'][:5]}") for r in requests]

    import isqaflow.models.registry as registry

    monkeypatch.setattr(registry, "load_model", lambda *a, **k: Echo())
    out = tmp_path / "m.jsonl"
    n = run_answers(
        EMBEDDED / "question.jsonl",
        out,
        {"backend": "x"},
        "m",
        {"max_new_tokens": 8},
        tmp_path / "c.sqlite",
        limit=3,
    )
    table = read_arena_hard_answers(out).table
    assert n == 3 and set(table["model"]) == {"m"} and table["answer"].str.startswith("re: ").all()
    first = next(read_jsonl(out))[1]
    assert set(first) == {"uid", "ans_id", "model", "messages"}  # no tstamp: reruns write the same
    assert question_request("P") == [{"role": "user", "content": "P"}]
    assert answer_record("q", "P", "m", "A")["messages"][-1] == {
        "role": "assistant",
        "content": {"answer": "A"},
    }
    with pytest.raises(ValueError, match="greedily"):
        run_answers(EMBEDDED / "question.jsonl", out, {}, "m", {"do_sample": True}, tmp_path / "c")


@pytest.mark.skipif(not RELEASED.is_dir(), reason="../shared/data/peers/arena-hard is absent")
def test_the_paper_configs_pinned_downloads_are_the_released_files():
    downloads = yaml.safe_load((REPO / "config/paper.yaml").read_text())["downloads"]
    for name, local in (
        ("arena_hard_questions", RELEASED / "question.jsonl"),
        ("arena_hard_baseline", RELEASED / "model_answer/gpt-4-0314.jsonl"),
    ):
        entry = downloads[name]
        assert "/196f6b826783b3da7310e361a805fa36f0be83f3/" in entry["url"]
        assert entry["url"].endswith(str(local.relative_to(RELEASED.parents[1])))
        assert entry["checksum"] == "sha256:" + hashlib.sha256(local.read_bytes()).hexdigest()
    assert len(read_questions(RELEASED / "question.jsonl")) == 500


def _line(control, qid, labels):
    return {
        "question_id": qid,
        "model": control,
        "judge": "j",
        "games": [{"score": label} for label in labels],
    }


def test_the_controls_records_follow_the_contract_and_score_what_they_claim(tmp_path):
    items = control_items([{"question_id": "q", "prompt": "P"}], {"q": "base"})
    assert [(i["model"], i["answer"]) for i in items] == [("self", "base"), ("empty", "")]
    judged = [
        _line("self", "q1", ["A>B", "A>B"]),  # the same label twice: the battles cancel
        _line("self", "q2", ["A>B", "B>A"]),  # a net preference for one copy
        _line("empty", "q1", ["A>>B", "B>A"]),  # the baseline wins both games
        _line("empty", "q2", ["A>B", "A>B"]),  # a fixed label splits the games
        _line("empty", "q3", ["A>B", None]),  # no label: invalid, never a tie
    ]
    records = control_records(judged, "j", "arena-hard")
    assert [(r["outcome"], r["correct"]) for r in records] == [
        ("tie", True),
        ("baseline", False),
        ("baseline", True),
        ("split", False),
        ("invalid", None),
    ]
    path = tmp_path / "controls.jsonl"
    from isqaflow.io import write_jsonl

    write_jsonl(path, records)
    groups = {g["control"]: g for g in validity_summary(read_control_records([path]))["groups"]}
    assert groups["self"]["verdict"] == "consistency check"
    assert groups["empty"]["n_invalid"] == 1 and groups["empty"]["chance"] == pytest.approx(0.16)
    with pytest.raises(ValueError, match="not a control item"):
        control_records([_line("m", "q", ["A>B", "A>B"])], "j", "s")


def test_the_family_audit_pairs_arena_hards_judges_with_its_answerers_only():
    from isqaflow.configcheck.families import judge_system_pairs

    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    pairs = [p for p in judge_system_pairs(config) if p.suite == "arena_hard"]
    assert [(p.judge, p.system, p.self_family) for p in pairs] == [("local", "smollm2", True)]
    # the DRFR judges still see the ISQA summaries
    assert any(
        p.system.startswith("summaries:") for p in judge_system_pairs(config) if p.suite == "drfr"
    )
