"""RAG-QA Arena's prediction files read as its own code reads them: one file per domain
(generate_responses.py), the answer after process_response (code/utils.py) unless the system
says process_response: false (isqaflow.data.ragqa_files, isqaflow.data.outputs)."""

from __future__ import annotations

import json

import pytest
import yaml
from workflow_utils import REPO, copy_repo, snakemake

from isqaflow.configcheck.systems import system_files
from isqaflow.data.outputs import Item, OutputFileError, read_system_outputs
from isqaflow.data.ragqa_files import NO_ANSWER, domain_of_file, process_response


@pytest.mark.parametrize(
    ("pred", "judged"),
    [
        ("<thinking>The passages say 5%.</thinking>\nPay it off.", "Pay it off."),
        ("Thinking: compare rates. Answer: Pay it off.", "Pay it off."),
        ("Thoughts: compare rates.\nAnswer: Pay it off.", "Pay it off."),
        ("Thought: rates. Answer: Pay it off.", "Pay it off."),
        ("Answer: Pay it off.", "Pay it off."),
        ("Answer:\nPay it off.", "Pay it off."),
        ("<answer>Pay it off.</answer>", "Pay it off."),
        ("FAIL TO GENERATE ANS.", NO_ANSWER),
        ("  FAIL TO GENERATE ANS.\n", NO_ANSWER),  # stripped first
        (
            "</thinking> before <thinking>: kept",
            "</thinking> before <thinking>: kept",
        ),  # end before start
        ("Pay it off early if the rate is above 5%.", "Pay it off early if the rate is above 5%."),
    ],
)
def test_process_response(pred, judged):
    assert process_response(pred) == judged


def test_the_domain_of_a_prediction_file():
    domains = ["fiqa", "science", "lifestyle", "life"]
    assert domain_of_file("out/llama/fiqa_from_colbert_5_psgs.json", domains) == "fiqa"
    assert (
        domain_of_file("lifestyle_from_colbert_5_psgs.json", domains) == "lifestyle"
    )  # the longest
    assert domain_of_file("science.json", domains) == "science"
    assert domain_of_file("all_domains.json", domains) is None


# two domains share a query text: a per-domain file says which
ITEMS = [
    Item("fiqa:1", "1", ("what is an index fund?",), "fiqa"),
    Item("fiqa:2", "2", ("is it safe?",), "fiqa"),
    Item("technology:7", "7", ("is it safe?",), "technology"),
]


def _anchor_layout(tmp_path):
    """<eval_dir>/<model>/<domain>_from_colbert_5_psgs.json, as generate_responses.py writes them."""
    folder = tmp_path / "eval" / "my-rag"
    folder.mkdir(parents=True)
    (folder / "fiqa_from_colbert_5_psgs.json").write_text(
        json.dumps(
            [
                {
                    "query": "what is an index fund?",
                    "pred": "<thinking>passage 2</thinking>\nAnswer: A basket of stocks.",
                    "passages": ["..."],
                },
                {"query": "is it safe?", "pred": "FAIL TO GENERATE ANS.", "passages": []},
            ],
            indent=2,
        )
    )
    (folder / "technology_from_colbert_5_psgs.json").write_text(
        json.dumps(
            [{"query": "is it safe?", "pred": "Answer: Use HTTPS.", "passages": []}], indent=2
        )
    )
    return folder


def test_a_folder_of_per_domain_files(tmp_path):
    folder = _anchor_layout(tmp_path)
    files = system_files(str(folder))
    assert [f.rsplit("/", 1)[1] for f in files] == [
        "fiqa_from_colbert_5_psgs.json",
        "technology_from_colbert_5_psgs.json",
    ]
    assert system_files(str(folder / "*_psgs.json")) == files
    out = read_system_outputs(files, "arena", ITEMS, name=str(folder))
    assert out.format == "ragqa_arena" and out.processed
    assert out.outputs == {
        "fiqa:1": "A basket of stocks.",
        "fiqa:2": NO_ANSWER,
        "technology:7": "Use HTTPS.",
    }
    assert out.raw["fiqa:2"] == "FAIL TO GENERATE ANS."
    assert out.files["technology:7"].endswith("technology_from_colbert_5_psgs.json")
    assert out.summary()["file"] == str(folder) and len(out.summary()["files"]) == 2
    raw = read_system_outputs(files, "arena", ITEMS, process=False)
    assert raw.outputs["fiqa:1"] == "<thinking>passage 2</thinking>\nAnswer: A basket of stocks."
    assert not raw.processed and raw.sha256 == out.sha256


def test_one_merged_file_still_needs_the_domain_of_a_shared_query(tmp_path):
    path = tmp_path / "merged.json"
    path.write_text(json.dumps([{"query": "is it safe?", "pred": "Yes."}]))
    with pytest.raises(
        OutputFileError,
        match=r"query 'is it safe\?': ambiguous, matches \['fiqa:2', 'technology:7'\]",
    ):
        read_system_outputs(path, "arena", ITEMS, coverage="partial")


def test_a_query_twice_across_the_files_names_both_files(tmp_path):
    folder = _anchor_layout(tmp_path)
    (folder / "fiqa_again_5_psgs.json").write_text(
        json.dumps([{"query": "what is an index fund?", "pred": "A fund."}])
    )
    with pytest.raises(
        OutputFileError,
        match=r"my-rag: 1 problem.*\n  .*fiqa_from_colbert_5_psgs.json, line 2, query "
        r"'what is an index fund\?': duplicate, 'fiqa:1' first on "
        r".*fiqa_again_5_psgs.json, line 1",
    ):
        read_system_outputs(system_files(str(folder)), "arena", ITEMS, name=str(folder))


def test_the_import_job_reads_the_anchor_layout(tmp_path):
    """The embedded run's import job on a folder of per-domain files: processed answers judged,
    the raw text kept; process_response: false judges the raw text."""
    repo = copy_repo(tmp_path / "repo")
    answers = [
        json.loads(line)
        for line in (repo / "data/embedded/systems/answers-handwritten.jsonl").open()
    ]
    questions = {}
    for domain in ("fiqa", "science", "technology"):
        for line in (repo / f"data/embedded/lfrqa/annotations_{domain}_with_citation.jsonl").open():
            record = json.loads(line)
            questions[(domain, str(record["qid"]))] = record["question"]
    folder = repo / "eval/my-rag"
    folder.mkdir(parents=True)
    by_domain = {}
    for a in answers:
        pred = f"<thinking>from passage 1</thinking>\nAnswer: {a['answer']}"
        by_domain.setdefault(a["domain"], []).append(
            {"query": questions[(a["domain"], a["query_id"])], "pred": pred, "passages": []}
        )
    for domain, records in by_domain.items():
        (folder / f"{domain}_from_colbert_5_psgs.json").write_text(json.dumps(records, indent=2))
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    config["arena"]["answerers"]["handwritten"] = {"file": "eval/my-rag", "coverage": "partial"}
    (repo / "config/anchor.yaml").write_text(yaml.safe_dump(config))
    target = "results/arena/answers/bm25-k5/handwritten.jsonl"
    result = snakemake(
        repo,
        "--profile",
        "profiles/local",
        target,
        "--configfile",
        "config/anchor.yaml",
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rows = [json.loads(line) for line in (repo / target).open()]
    assert sorted(r["answer"] for r in rows) == sorted(a["answer"] for a in answers)
    assert all(r["raw"].startswith("<thinking>from passage 1</thinking>") for r in rows)
    check = json.loads((repo / "results/systems/arena/bm25-k5/handwritten.json").read_text())
    assert (
        check["format"] == "ragqa_arena"
        and check["processed"]
        and len(check["files"]) == len(by_domain)
    )
    config["arena"]["answerers"]["handwritten"]["process_response"] = False
    (repo / "config/anchor.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(
        repo,
        "--profile",
        "profiles/local",
        target,
        "--configfile",
        "config/anchor.yaml",
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rows = [json.loads(line) for line in (repo / target).open()]
    assert all(r["answer"].startswith("<thinking>from passage 1</thinking>") for r in rows)


def test_the_failed_generation_marker_counts_as_no_answer():
    from isqaflow.arena.no_answer import is_no_answer

    assert is_no_answer(process_response("FAIL TO GENERATE ANS."))
