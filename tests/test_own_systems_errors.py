"""What a user sees when a system's file is wrong: one clear message per failure, no
traceback (isqaflow.runtime.NamedError); an unmatched item explained (isqaflow.data.outputs)."""

from __future__ import annotations

import types

import pytest
from workflow_utils import copy_repo, snakemake

from isqaflow import runtime
from isqaflow.data.outputs import OutputFileError
from isqaflow.io import RecordError


def fake_job(tmp_path, log=True):
    return types.SimpleNamespace(log=[str(tmp_path / "logs/x.log")] if log else [], threads=1, rule="file_answers",
                                 wildcards={}, output=[str(tmp_path / "out.jsonl")])


@pytest.mark.parametrize("error", [OutputFileError("mine.jsonl", ["mine.jsonl, line 2, id '9': not in the dataset"]),
                                   RecordError("data.jsonl", "empty question", record="q1", field="question")])
def test_a_named_error_is_logged_once_without_a_traceback(tmp_path, capsys, error):
    hooks = []
    with pytest.raises(SystemExit) as exit_info:
        with runtime.job(fake_job(tmp_path)):
            runtime.at_job_exit(lambda: hooks.append("ran"))
            raise error
    assert exit_info.value.code == 1 and hooks == ["ran"]
    log = (tmp_path / "logs/x.log").read_text()
    assert log.count(str(error).splitlines()[0]) == 1 and "Traceback" not in log
    assert str(error).splitlines()[0] not in capsys.readouterr().err  # Snakemake prints the log file


def test_without_a_log_file_the_message_goes_to_stderr(tmp_path, capsys):
    with pytest.raises(SystemExit):
        with runtime.job(fake_job(tmp_path, log=False)):
            raise OutputFileError("mine.jsonl", ["mine.jsonl, line 2: no id field"])
    err = capsys.readouterr().err
    assert err.count("mine.jsonl, line 2: no id field") == 1 and "Traceback" not in err


def test_an_unexpected_error_keeps_its_traceback(tmp_path):
    with pytest.raises(KeyError):
        with runtime.job(fake_job(tmp_path)):
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
    result = snakemake(repo, "--profile", "profiles/local", "results/systems/arena/bm25-k5/handwritten.json",
                       timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    message = "data/embedded/systems/answers-handwritten.jsonl, line 2, id '9999': not in the dataset (domain 'fiqa')"
    assert output.count(message) == 1, output[-4000:]
    assert "Traceback" not in output and "OutputFileError" not in output
