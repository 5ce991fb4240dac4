"""Where a raw file lies: a local path, a download, a member of a downloaded archive."""

from __future__ import annotations

import pytest

from isqaflow.data.raw_paths import download_filename, raw_path

DOWNLOADS = {"qs": {"url": "https://example.org/a/b/question.jsonl?x=1", "checksum": "sha256:0"}}


def test_each_kind_of_raw_file_has_its_path():
    assert raw_path(DOWNLOADS, "data/embedded/q.jsonl") == "data/embedded/q.jsonl"
    assert download_filename(DOWNLOADS, "qs") == "question.jsonl"
    assert raw_path(DOWNLOADS, {"download": "qs"}) == "resources/downloads/qs/question.jsonl"
    assert (
        raw_path(DOWNLOADS, {"download": "qs", "member": "x/y.json"})
        == "resources/extracted/qs/x/y.json"
    )
    with pytest.raises(KeyError):
        raw_path(DOWNLOADS, {"download": "missing"})
