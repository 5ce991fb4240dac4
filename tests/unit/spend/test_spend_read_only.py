"""The spend plan reads the call caches of a finished run without changing a file beside them
(issue 39: SQLite's -wal and -shm files were left in results/ by a dry run)."""

from __future__ import annotations

from isqaflow.models.cache import CallCache
from isqaflow.spend import _cached_calls


def _listing(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_counting_a_finished_cache_leaves_the_folder_byte_identical(tmp_path):
    path = tmp_path / "judged.jsonl.calls.sqlite"
    cache = CallCache(path)
    cache.conn.execute(
        "INSERT INTO calls VALUES (?,?,?,?,?,?,?)", ("k", "generate", "m", "{}", "{}", "{}", 0.0)
    )
    cache.conn.close()
    before = _listing(tmp_path)
    assert list(before) == [path.name]  # a cleanly closed WAL database: no -wal, no -shm
    assert _cached_calls(path) == 1
    assert _listing(tmp_path) == before


def test_a_cache_a_job_is_writing_now_is_counted_with_its_uncommitted_log(tmp_path):
    path = tmp_path / "judged.jsonl.calls.sqlite"
    cache = CallCache(path)  # open: its -wal and -shm are there
    cache.conn.execute(
        "INSERT INTO calls VALUES (?,?,?,?,?,?,?)", ("k", "generate", "m", "{}", "{}", "{}", 0.0)
    )
    assert (tmp_path / (path.name + "-wal")).exists()
    assert _cached_calls(path) == 1
    cache.conn.close()
