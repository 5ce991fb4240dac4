"""What a user sees when a system's file is wrong: one clear message per failure, no
traceback (isqaflow.runtime.NamedError); an unmatched item explained (isqaflow.data.outputs)."""

from __future__ import annotations

import types

import pytest
from workflow_utils import copy_repo, snakemake

from isqaflow import runtime
from isqaflow.data.outputs import OutputFileError


def fake_job(tmp_path, log=True):
    return types.SimpleNamespace(
        log=[str(tmp_path / "logs/x.log")] if log else [],
        threads=1,
        rule="file_answers",
        wildcards={},
        output=[str(tmp_path / "out.jsonl")],
    )


def test_a_named_error_is_logged_once_without_a_traceback(tmp_path, capsys):
    error = OutputFileError("mine.jsonl", ["mine.jsonl, line 2, id '9': not in the dataset"])
    hooks = []
    with pytest.raises(SystemExit) as exit_info, runtime.job(fake_job(tmp_path)):
        runtime.at_job_exit(lambda: hooks.append("ran"))
        raise error
    assert exit_info.value.code == 1 and hooks == ["ran"]
    log = (tmp_path / "logs/x.log").read_text()
    assert log.count(str(error).splitlines()[0]) == 1 and "Traceback" not in log
    assert (
        str(error).splitlines()[0] not in capsys.readouterr().err
    )  # Snakemake prints the log file


def test_without_a_log_file_the_message_goes_to_stderr(tmp_path, capsys):
    with pytest.raises(SystemExit), runtime.job(fake_job(tmp_path, log=False)):
        raise OutputFileError("mine.jsonl", ["mine.jsonl, line 2: no id field"])
    err = capsys.readouterr().err
    assert err.count("mine.jsonl, line 2: no id field") == 1 and "Traceback" not in err


def test_an_unexpected_error_keeps_its_traceback(tmp_path):
    with pytest.raises(KeyError), runtime.job(fake_job(tmp_path)):
        raise KeyError("model")
    assert "Traceback" in (tmp_path / "logs/x.log").read_text()


def test_a_malformed_file_is_reported_once_by_the_run(tmp_path):
    """The import job of a file with an unknown id: the problem is on screen once (the
    printed log), with no Python traceback."""
    repo = copy_repo(tmp_path / "repo")
    path = repo / "data/embedded/systems/answers-handwritten.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines[1] = '{"domain": "fiqa", "query_id": "9999", "answer": "No such query."}\n'
    path.write_text("".join(lines))
    result = snakemake(
        repo,
        "--profile",
        "profiles/local",
        "results/systems/arena/bm25-k5/handwritten.json",
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0
    message = "data/embedded/systems/answers-handwritten.jsonl, line 2, id '9999': not in the dataset (domain 'fiqa')"
    assert output.count(message) == 1, output[-4000:]
    assert "Traceback" not in output and "OutputFileError" not in output


# ----------------------------------------------------------------------------- unmatched items
def _instructions():
    from isqaflow.data.outputs import instruction_items
    from isqaflow.data.schema import Instruction

    long = (
        "Write a reply to the following email from a colleague who asks whether you can cover "
        "her shift on Friday evening."
    )
    return instruction_items(
        [
            Instruction(
                id="user_oriented_task_3",
                subset="Easy",
                category="c",
                instruction=long,
                input="Hi, could you take my Friday shift?",
                requirements=[{"question": "Polite?", "labels": ["Style"]}],
            ),
            Instruction(
                id="user_oriented_task_4",
                subset="Hard",
                category="c",
                instruction="Write a poem about rain.",
                requirements=[{"question": "A poem?", "labels": ["Style"]}],
            ),
        ]
    ), long


def test_an_unmatched_instruction_names_the_closest_item_and_where_the_texts_differ(tmp_path):
    """AlpacaEval record whose instruction has its input appended as "\\nInput: ...": the first
    60 characters are the dataset's; the message says where the texts part."""
    import json

    from isqaflow.data.outputs import read_system_outputs

    items, long = _instructions()
    path = tmp_path / "model_outputs.json"
    path.write_text(
        json.dumps(
            [
                {
                    "instruction": f"{long}\nInput: Hi, could you take my Friday shift?",
                    "output": "Sure.",
                    "generator": "mine",
                }
            ]
        )
    )
    with pytest.raises(OutputFileError) as err:
        read_system_outputs(path, "drfr", items, coverage="partial")
    [problem] = err.value.problems
    assert problem.startswith(
        f"{path}, line 1, instruction {long[:60]!r}: not in the dataset; "
        "closest: item 'user_oriented_task_3' ("
    )
    # after the instruction and the one space its newline collapses to
    assert (
        f"the texts first differ at character {len(long) + 2}: the file has 'Input: Hi, could you take my "
        "Friday shif'..., the dataset has 'Hi, could you take my Friday shift?'"
    ) in problem


def test_an_unmatched_query_text_with_a_trailing_difference(tmp_path):
    import json

    from isqaflow.data.outputs import Item, read_system_outputs

    items = [
        Item(
            "science:science-search-test-140",
            "science-search-test-140",
            ("why does ice float on water?",),
            "science",
        ),
        Item("fiqa:1", "1", ("what is an index fund?",), "fiqa"),
    ]
    path = tmp_path / "science_from_colbert_5_psgs.json"
    path.write_text(json.dumps([{"query": "why does ice float on water", "pred": "Density."}]))
    with pytest.raises(OutputFileError) as err:
        read_system_outputs(path, "arena", items, coverage="partial")
    assert err.value.problems == [
        (
            f"{path}, line 1, query 'why does ice float on water': not in the dataset; closest: item "
            "'science-search-test-140' ('science') (98% alike), the texts first differ at character 28: the file has "
            "nothing more (its end), the dataset has '?'"
        )
    ]


def test_an_unmatched_id_names_the_closest_id(tmp_path):
    from isqaflow.data.outputs import Item, read_system_outputs

    items = [Item("science:science-search-test-140", "science-search-test-140", ("q",), "science")]
    path = tmp_path / "mine.jsonl"
    path.write_text('{"domain": "science", "query_id": "science-search-test-14O", "answer": "x"}\n')
    with pytest.raises(
        OutputFileError,
        match=r"line 1, id 'science-search-test-14O': not in the dataset "
        r"\(domain 'science'\); closest id: 'science-search-test-140'$",
    ):
        read_system_outputs(path, "arena", items, coverage="partial")


def test_coverage_errors_name_the_items_in_the_files_own_keys(tmp_path):
    """A file keyed by query text lists the queries it lacks by their text, not by internal ids."""
    import json

    from isqaflow.data.outputs import Item, read_system_outputs

    items = [
        Item("fiqa:1", "1", ("what is an index fund?",), "fiqa"),
        Item(
            "science:science-search-test-140",
            "science-search-test-140",
            ("why does ice float?",),
            "science",
        ),
    ]
    path = tmp_path / "fiqa_from_colbert_5_psgs.json"
    path.write_text(json.dumps([{"query": "what is an index fund?", "pred": "A fund."}]))
    with pytest.raises(OutputFileError) as err:
        read_system_outputs(path, "arena", items)
    assert err.value.problems == [
        (
            f"{path}: 1 of 2 dataset queries missing, first ['why does ice float?' (science)]; "
            "add them, or set coverage: partial"
        )
    ]
    assert "science-search-test-140" not in str(err.value)
