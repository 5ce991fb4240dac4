"""Where a dataset's raw file lies in the work tree: a local path, a download, or a member of a
downloaded archive (the schema's ``raw_file``).  Read by ``rules/common.smk`` (``raw_path``:
the rules' inputs) and by the spend plan (:mod:`isqaflow.spend.arena_hard`), so both name the
same file."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlparse

__all__ = ["download_filename", "raw_path"]


def download_filename(downloads: Mapping[str, Any], name: str) -> str:
    """The file name a download is saved under: its URL's last path segment."""
    return PurePosixPath(urlparse(downloads[name]["url"]).path).name


def raw_path(downloads: Mapping[str, Any], spec: str | Mapping[str, str]) -> str:
    """A raw file of a dataset: ``spec`` a local path, ``{download}`` (rule download) or
    ``{download, member}`` (rule extract); ``downloads`` is the config's section."""
    if isinstance(spec, str):
        return spec
    name = spec["download"]
    if "member" in spec:
        return f"resources/extracted/{name}/{spec['member']}"
    return f"resources/downloads/{name}/{download_filename(downloads, name)}"
