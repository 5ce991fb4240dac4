"""Systems read from files in the arena tables: their retrieval is their own ("own"), not the
models' setting; listed once in the no-answer table (isqaflow.arena.tables)."""

from __future__ import annotations

import pandas as pd

from isqaflow.arena.tables import no_answer_table, with_retrieval


def _answers():
    rows = []
    for setting in (("bm25", 5), ("dense", 5)):
        for answerer, source in (("smollm2", "model"), ("my-rag", "file")):
            for qid, no_answer in (("1", False), ("2", answerer == "my-rag")):
                rows.append(
                    {
                        "retriever": setting[0],
                        "k": setting[1],
                        "answerer": answerer,
                        "domain": "fiqa",
                        "qid": qid,
                        "no_answer": no_answer,
                        "thinking_unclosed": False,
                        "source": source,
                    }
                )
    return pd.DataFrame(rows)


def test_the_win_rates_say_own_retrieval_for_a_file_system():
    index = pd.MultiIndex.from_tuples(
        [
            ("bm25-k5.local", "overall", "smollm2"),
            ("bm25-k5.local", "overall", "my-rag"),
            ("dense-k5.local", "overall", "smollm2"),
        ],
        names=["setting", "domain", "model"],
    )
    rates = pd.DataFrame({"win_rate": [40.0, 55.0, 45.0]}, index=index)
    table = with_retrieval(rates, _answers())
    assert table["retrieval"].tolist() == ["bm25-k5", "own", "dense-k5"]
    assert table.columns[0] == "retrieval" and table["win_rate"].tolist() == [40.0, 55.0, 45.0]


def test_the_no_answer_table_lists_a_file_system_once_under_own():
    table = no_answer_table(_answers())
    assert table.loc[("own", "-", "my-rag"), "answers"] == 2  # once, not once per setting
    assert table.loc[("own", "-", "my-rag"), "no_answer"] == 1
    assert (
        table.loc[("bm25", "5", "smollm2"), "answers"] == 2
        and table.loc[("dense", "5", "smollm2"), "answers"] == 2
    )
    assert not [key for key in table.index if key[2] == "my-rag" and key[0] != "own"]


def test_the_check_record_lists_the_items_of_a_partial_file(tmp_path):
    from isqaflow.data.outputs import Item, read_system_outputs

    items = [
        Item("fiqa:1", "1", ("a",), "fiqa"),
        Item("fiqa:2", "2", ("b",), "fiqa"),
        Item("science:3", "3", ("c",), "science"),
    ]
    path = tmp_path / "mine.jsonl"
    path.write_text(
        '{"domain": "science", "query_id": "3", "answer": "x"}\n{"domain": "fiqa", "qid": "1", "answer": "y"}\n'
    )
    assert read_system_outputs(path, "arena", items, coverage="partial").summary()["covered"] == [
        "fiqa:1",
        "science:3",
    ]
