"""Files whose shape is wrong are refused when the workflow is built (issue 39 item 5): a
folder only in a format that reads one, an empty human-labels file; and Unicode normalisation
decided once (NFC on both sides), so a text typed in NFD matches the dataset's."""

from __future__ import annotations

import copy
import unicodedata

import pytest
import yaml
from workflow_utils import REPO

from isqaflow.configcheck import check_config
from isqaflow.data import human_labels, outputs
from isqaflow.data.schema import RagQuery
from isqaflow.io import RecordError
from isqaflow.text.matching import match_key

EMBEDDED = yaml.safe_load((REPO / "config/config.yaml").read_text())
LABELS = REPO / "data/embedded/lfrqa/human_pairwise.csv"


def problems_of(change):
    config = copy.deepcopy(EMBEDDED)
    change(config)
    return {p.path: p.message for p in check_config(config, REPO, {})}


def _answerer(folder, fmt):
    return lambda c: c["arena"]["answerers"]["handwritten"].update(file=str(folder), format=fmt)


@pytest.fixture
def predictions(tmp_path):
    folder = tmp_path / "preds"
    folder.mkdir()
    (folder / "fiqa_from_colbert_test_top5_psgs.json").write_text("[]\n")
    return folder


@pytest.mark.parametrize("fmt", ["jsonl", "alpaca_eval", "arena_hard"])
def test_a_folder_is_refused_in_a_format_that_reads_one_file(predictions, fmt):
    problems = problems_of(_answerer(predictions, fmt))
    message = problems["arena.answerers.handwritten.format"]
    assert "is a folder" in message and f"format {fmt!r} reads one file" in message
    assert "ragqa_arena" in message


@pytest.mark.parametrize("fmt", ["ragqa_arena", "auto"])
def test_a_folder_passes_in_the_formats_that_read_one(predictions, fmt):
    assert "arena.answerers.handwritten.format" not in problems_of(_answerer(predictions, fmt))


def test_an_empty_human_labels_file_is_refused_before_any_job(tmp_path):
    empty = tmp_path / "labels.csv"
    empty.write_text(LABELS.read_text().splitlines()[0] + "\n")  # the header only
    problems = problems_of(lambda c: c["datasets"]["rag"].update(human_labels=str(empty)))
    assert "holds no rows after its header" in problems["datasets.rag.human_labels"]
    # and by the job's own check, should the file change after the workflow was built
    with pytest.raises(RecordError, match="no rows after its header"):
        human_labels.check_against_queries(empty, [])


def test_a_folder_as_the_human_labels_is_refused(tmp_path):
    problems = problems_of(lambda c: c["datasets"]["rag"].update(human_labels=str(tmp_path)))
    assert "is not one file" in problems["datasets.rag.human_labels"]


NFC = "Is café-going a good habit?"
NFD = unicodedata.normalize("NFD", NFC)


def test_one_normalisation_for_every_reader_nfc_on_both_sides():
    assert NFD != NFC and match_key(NFD) == match_key(NFC) == NFC
    assert outputs.normalize_text(NFD) == outputs.normalize_text(NFC)
    assert human_labels.normalize_text(NFD) == human_labels.normalize_text(NFC)


def test_a_human_label_typed_in_nfd_matches_the_datasets_query(tmp_path):
    header = LABELS.read_text().splitlines()[0]
    labels = tmp_path / "labels.csv"
    labels.write_text(f'{header}\np1,fiqa,q1,"{NFD}",lfrqa,"A.",model_x,"B.",a1,Better\n')
    query = RagQuery(
        id="q1",
        domain="fiqa",
        question=NFC,
        reference="A.",
        reference_with_citation="A.",
        citations=[[1]],
        gold_doc_ids=["d1"],
    )
    assert human_labels.check_against_queries(labels, [query])["pairs"] == 1
