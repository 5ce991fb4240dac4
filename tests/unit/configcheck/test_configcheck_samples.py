"""Config values of different sections that contradict each other (isqaflow.configcheck.samples)."""

from __future__ import annotations

import pytest
from test_configcheck import EMBEDDED, KEY, PAPER, problems_of


def paths(problems):
    return [p.path for p in problems]


def test_shared_papers_must_fit_in_the_human_evaluation_sample():
    problems = problems_of(lambda c: c["human_eval"].update(papers=4, shared=5))
    assert paths(problems) == ["human_eval.shared"]
    assert "5 papers judged by every annotator" in str(problems[0]) and "samples only 4" in str(
        problems[0]
    )


def test_sample_sizes_within_the_datasets_max_papers():
    def cap(config):
        config["datasets"]["papers"]["qasper"]["max_papers"] = 3
        config["human_eval"].update(papers=20, shared=5)
        config["validity"]["metrics"]["papers"] = 10

    problems = problems_of(cap)
    assert paths(problems) == ["human_eval.papers", "human_eval.shared", "validity.metrics.papers"]
    assert all("datasets.papers.qasper.max_papers keeps 3" in str(p) for p in problems)
    # within the cap: nothing to say
    assert (
        problems_of(
            lambda c: (
                cap(c),
                c["human_eval"].update(papers=3, shared=2),
                c["validity"]["metrics"].update(papers=3),
            )
        )
        == []
    )


def test_no_human_evaluation_no_sample_size_problem():
    def off(config):
        config["human_eval"].update(systems=[], papers=1, shared=5)
        config["datasets"]["papers"]["qasper"]["max_papers"] = 1

    assert problems_of(off) == []


@pytest.mark.parametrize(
    "retriever,option,value",
    [
        ("bm25", "model", "all-MiniLM-L6-v2"),
        ("dense", "k1", 1.2),
        ("colbert", "k1", 1.2),
    ],
)
def test_a_retriever_option_its_backend_does_not_read(retriever, option, value):
    def change(config):
        config["arena"]["retrievers"].setdefault(retriever, {"backend": retriever})[option] = value

    problems = problems_of(change, base=PAPER, environ=KEY)
    assert paths(problems) == [f"arena.retrievers.{retriever}.{option}"]
    assert f"backend {retriever!r} does not read {option!r}" in str(problems[0])


def test_colbert_options_are_read():
    def change(config):
        config["arena"]["retrievers"]["colbert"].update(
            nbits=4, kmeans_niters=8, document_length=300, query_length=32, batch_size=16
        )

    assert problems_of(change, base=PAPER, environ=KEY) == []
    assert problems_of(lambda c: None, base=EMBEDDED) == []


def test_a_key_written_twice_in_a_config_file(tmp_path, capsys):
    from test_configcheck import REPO

    from isqaflow.configcheck import exit_on_problems
    from isqaflow.configcheck.files import duplicate_keys

    assert duplicate_keys([REPO / "config/config.yaml", REPO / "config/paper.yaml"]) == []
    text = (REPO / "config/config.yaml").read_text()
    anchor = "    bm25: {backend: bm25}\n"
    assert anchor in text
    twice = tmp_path / "twice.yaml"
    twice.write_text(text.replace(anchor, anchor + "    bm25: {backend: bm25, k1: 0.9}\n", 1))
    line = text[: text.index(anchor)].count("\n") + 1
    (problem,) = duplicate_keys([twice])
    assert problem.path == "arena.retrievers.bm25"
    assert (
        f"twice.yaml (lines {line} and {line + 1})" in problem.message
        and "keeps only the last" in problem.message
    )
    with pytest.raises(SystemExit):
        exit_on_problems(EMBEDDED, [str(twice)], workdir=REPO)
    assert "arena.retrievers.bm25: written twice" in capsys.readouterr().err
