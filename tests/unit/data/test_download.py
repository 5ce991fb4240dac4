"""Pinned downloads: checksums, file:// and a localhost HTTP server, hf:// URLs, archive members.

No test reaches the network beyond 127.0.0.1.
"""

from __future__ import annotations

import functools
import hashlib
import io
import tarfile
import threading
import urllib.error
import zipfile
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest

from isqaflow.data.download import (
    ArchiveError,
    ChecksumError,
    _parse_hf,
    extract_member,
    fetch,
    file_digest,
    parse_checksum,
    verify,
)

PAYLOAD = b'{"id": 1, "text": "pinned raw data"}\n' * 50
SHA = hashlib.sha256(PAYLOAD).hexdigest()
MD5 = hashlib.md5(PAYLOAD).hexdigest()
WRONG_SHA = "0" * 64


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


@pytest.fixture
def source(tmp_path) -> Path:
    path = tmp_path / "src" / "raw.json"
    path.parent.mkdir()
    path.write_bytes(PAYLOAD)
    return path


@pytest.fixture
def http_server(tmp_path, request, monkeypatch):
    """A ThreadingHTTPServer on 127.0.0.1 serving ``root``; ``requests`` lists the paths asked for."""
    root = tmp_path / "www"
    root.mkdir()
    requests: list[str] = []

    class Handler(SimpleHTTPRequestHandler):
        def do_GET(self):
            requests.append(self.path)
            super().do_GET()

        def log_message(self, format, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()

    def stop():
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

    request.addfinalizer(stop)
    # A proxy configured in the user's environment must not capture localhost requests.
    for var in ("no_proxy", "NO_PROXY"):
        monkeypatch.setenv(var, "127.0.0.1,localhost")
    host, port = server.server_address[:2]
    return SimpleNamespace(root=root, url=f"http://{host}:{port}", requests=requests)


# ------------------------------------------------------------------ checksums
def test_parse_checksum():
    assert parse_checksum(f"sha256:{SHA}") == ("sha256", SHA)
    assert parse_checksum(f"SHA256:{SHA.upper()}") == ("sha256", SHA)
    assert parse_checksum(f"md5:{MD5}") == ("md5", MD5)
    assert parse_checksum(SHA) == ("sha256", SHA)  # bare hex is SHA-256
    assert parse_checksum(SHA.upper()) == ("sha256", SHA)


@pytest.mark.parametrize(
    "checksum",
    [
        "",
        "sha256:",
        f"sha256:{SHA[:-1]}",  # too short
        f"sha256:{SHA}0",  # too long
        f"sha256:{'g' * 64}",  # not hex
        f"md5:{SHA}",  # a sha256 digest under md5
        f"sha1:{'a' * 40}",  # unsupported algorithm
        MD5,  # bare hex is SHA-256, so 32 digits are malformed
        f" sha256:{SHA}",
    ],
)
def test_parse_checksum_malformed(checksum):
    with pytest.raises(ValueError):
        parse_checksum(checksum)


def test_file_digest_and_verify(source):
    assert file_digest(source) == SHA
    assert file_digest(source, "md5") == MD5
    verify(source, f"sha256:{SHA}")
    verify(source, f"md5:{MD5}")
    with pytest.raises(ChecksumError) as info:
        verify(source, f"md5:{'f' * 32}")
    assert info.value.expected == f"md5:{'f' * 32}"
    assert info.value.actual == f"md5:{MD5}"


# ------------------------------------------------------------------ fetch
def test_fetch_file_url(source, tmp_path):
    dest = tmp_path / "raw" / "sub" / "data.json"
    assert fetch(source.as_uri(), dest, f"sha256:{SHA}") == dest
    assert dest.read_bytes() == PAYLOAD
    assert _listing(dest.parent) == ["data.json"]  # no .part left behind


def test_fetch_md5_pin(source, tmp_path):
    dest = tmp_path / "raw" / "collection.tsv"
    fetch(source.as_uri(), dest, f"md5:{MD5}")
    assert dest.read_bytes() == PAYLOAD
    # and an md5 pin also accepts the file now in place
    assert fetch((tmp_path / "gone").as_uri(), dest, f"md5:{MD5}") == dest


def test_fetch_http(http_server, tmp_path):
    (http_server.root / "files").mkdir()
    (http_server.root / "files" / "raw.json").write_bytes(PAYLOAD)
    dest = tmp_path / "raw" / "data.json"
    url = f"{http_server.url}/files/raw.json"
    fetch(url, dest, f"sha256:{SHA}", timeout=10)
    assert dest.read_bytes() == PAYLOAD
    assert http_server.requests == ["/files/raw.json"]
    # In place with the right checksum: not fetched again.
    fetch(url, dest, f"sha256:{SHA}", timeout=10)
    assert http_server.requests == ["/files/raw.json"]
    assert _listing(dest.parent) == ["data.json"]


def test_fetch_http_error_leaves_nothing(http_server, tmp_path):
    dest = tmp_path / "raw" / "data.json"
    with pytest.raises(urllib.error.HTTPError) as info:
        fetch(f"{http_server.url}/missing.json", dest, f"sha256:{SHA}", timeout=10)
    assert info.value.code == 404
    assert _listing(dest.parent) == []


def test_fetch_wrong_checksum_http(http_server, tmp_path):
    (http_server.root / "raw.json").write_bytes(PAYLOAD)
    dest = tmp_path / "raw" / "data.json"
    with pytest.raises(ChecksumError) as info:
        fetch(f"{http_server.url}/raw.json", dest, f"sha256:{WRONG_SHA}", timeout=10)
    message = str(info.value)
    assert dest.name in message
    assert WRONG_SHA in message and SHA in message
    assert info.value.expected == f"sha256:{WRONG_SHA}"
    assert info.value.actual == f"sha256:{SHA}"
    assert not dest.exists()
    assert not dest.with_name(dest.name + ".part").exists()
    assert _listing(dest.parent) == []


def test_fetch_wrong_checksum_file_url(source, tmp_path):
    dest = tmp_path / "raw" / "data.json"
    with pytest.raises(ChecksumError) as info:
        fetch(source.as_uri(), dest, f"md5:{'e' * 32}")
    assert f"md5:{'e' * 32}" in str(info.value) and f"md5:{MD5}" in str(info.value)
    assert _listing(dest.parent) == []


def test_fetch_wrong_checksum_names_destination_not_deleted_part(source, tmp_path):
    dest = tmp_path / "raw" / "data.json"
    with pytest.raises(ChecksumError) as info:
        fetch(source.as_uri(), dest, f"sha256:{WRONG_SHA}")
    assert not info.value.path.endswith(".part")
    assert f"{dest}:" in str(info.value) and source.as_uri() in str(info.value)


def test_fetch_in_place_is_not_fetched_again(source, tmp_path):
    dest = tmp_path / "raw" / "data.json"
    fetch(source.as_uri(), dest, f"sha256:{SHA}")
    mtime = dest.stat().st_mtime_ns
    nowhere = (tmp_path / "does-not-exist.json").as_uri()
    assert fetch(nowhere, dest, f"sha256:{SHA}") == dest
    assert fetch(nowhere, dest, SHA) == dest
    assert dest.read_bytes() == PAYLOAD
    assert dest.stat().st_mtime_ns == mtime
    # the nowhere URL really fails when a fetch is needed
    with pytest.raises(urllib.error.URLError):
        fetch(nowhere, tmp_path / "raw" / "other.json", f"sha256:{SHA}")
    assert _listing(dest.parent) == ["data.json"]


def test_fetch_in_place_with_wrong_checksum_is_an_error(source, tmp_path):
    dest = tmp_path / "raw" / "data.json"
    dest.parent.mkdir()
    edited = PAYLOAD + b"edited\n"
    dest.write_bytes(edited)
    with pytest.raises(ChecksumError) as info:
        fetch(source.as_uri(), dest, f"sha256:{SHA}")
    edited_sha = hashlib.sha256(edited).hexdigest()
    assert info.value.path == str(dest)
    message = str(info.value)
    assert str(dest) in message and SHA in message and edited_sha in message
    assert dest.read_bytes() == edited  # not silently replaced
    assert _listing(dest.parent) == ["data.json"]


def test_fetch_malformed_checksum_before_anything(tmp_path):
    dest = tmp_path / "raw" / "data.json"
    with pytest.raises(ValueError, match="malformed"):
        fetch((tmp_path / "x").as_uri(), dest, "sha256:abc")
    assert not dest.parent.exists()


@pytest.mark.parametrize(
    "url", ["ftp://127.0.0.1/raw.json", "s3://bucket/raw.json", "raw.json", "/abs/raw.json"]
)
def test_fetch_unsupported_scheme(tmp_path, url):
    dest = tmp_path / "raw" / "data.json"
    with pytest.raises(ValueError, match="unsupported URL scheme"):
        fetch(url, dest, f"sha256:{SHA}")
    assert _listing(dest.parent) == []


# ------------------------------------------------------------------ hf:// URLs
@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "hf://datasets/kqsong/InFoBench@cef03a2830944bfb0d201107895ddd0e0e90bf0e/InfoBench.json",
            (
                "dataset",
                "kqsong/InFoBench",
                "cef03a2830944bfb0d201107895ddd0e0e90bf0e",
                "InfoBench.json",
            ),
        ),
        (
            "hf://datasets/allenai/qasper@main/data/train-00000.parquet",
            ("dataset", "allenai/qasper", "main", "data/train-00000.parquet"),
        ),
        (
            "hf://models/owner/model-x@v1.0/weights/model.safetensors",
            ("model", "owner/model-x", "v1.0", "weights/model.safetensors"),
        ),
    ],
)
def test_parse_hf(url, expected):
    assert _parse_hf(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "hf://spaces/owner/name@rev/file",  # neither datasets nor models
        "hf://datasets/owner/name/file.json",  # no revision
        "hf://datasets/owner/name@/file.json",  # empty revision
        "hf://datasets/owner/name@rev",  # no file
        "hf://datasets/owner/name@rev/",  # empty file
        "hf://datasets/owner@rev/file.json",  # no name
        "hf://datasets//name@rev/file.json",  # no owner
        "hf://datasets",
    ],
)
def test_parse_hf_malformed(url):
    with pytest.raises(ValueError, match="hf://"):
        _parse_hf(url)


def test_fetch_malformed_hf_url_leaves_nothing(tmp_path):
    pytest.importorskip("huggingface_hub")
    dest = tmp_path / "raw" / "data.json"
    with pytest.raises(ValueError, match="hf://"):
        fetch("hf://datasets/owner/name/file.json", dest, f"sha256:{SHA}")
    assert _listing(dest.parent) == []


# ------------------------------------------------------------------ archive members
MEMBERS = {"pkg/data/collection.tsv": b"1\tfirst\n2\tsecond\n", "pkg/README": b"readme\n"}


def _tar_gz(path: Path) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        directory = tarfile.TarInfo("pkg/data")
        directory.type = tarfile.DIRTYPE
        tf.addfile(directory)
        for name, data in MEMBERS.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def _zip(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in MEMBERS.items():
            zf.writestr(name, data)
    return path


@pytest.mark.parametrize("build", [_tar_gz, _zip], ids=["tar.gz", "zip"])
def test_extract_member(tmp_path, build):
    archive = build(tmp_path / ("a.tar.gz" if build is _tar_gz else "a.zip"))
    out = tmp_path / "out" / "collection.tsv"
    assert extract_member(archive, "pkg/data/collection.tsv", out) == out
    assert out.read_bytes() == MEMBERS["pkg/data/collection.tsv"]
    assert _listing(out.parent) == ["collection.tsv"]


@pytest.mark.parametrize("build", [_tar_gz, _zip], ids=["tar.gz", "zip"])
def test_extract_missing_member(tmp_path, build):
    archive = build(tmp_path / ("a.tar.gz" if build is _tar_gz else "a.zip"))
    out_dir = tmp_path / "out"
    with pytest.raises(
        ArchiveError,
        match=r"a\.(tar\.gz|zip), member 'pkg/data/absent.tsv': no such file in the "
        r"archive; did you mean 'pkg/data/collection.tsv'\?",
    ):
        extract_member(archive, "pkg/data/absent.tsv", out_dir / "absent.tsv")
    assert _listing(out_dir) == []
    # An existing destination is left as it was.
    kept = out_dir / "kept.tsv"
    kept.write_bytes(b"old\n")
    with pytest.raises(ArchiveError, match="no such file"):
        extract_member(archive, "nope", kept)
    assert kept.read_bytes() == b"old\n"
    assert _listing(out_dir) == ["kept.tsv"]


def test_extract_directory_member_of_tar_is_missing(tmp_path):
    archive = _tar_gz(tmp_path / "a.tar.gz")
    with pytest.raises(ArchiveError, match="member 'pkg/data': no such file"):
        extract_member(archive, "pkg/data", tmp_path / "out" / "x")
    assert _listing(tmp_path / "out") == []


def test_extract_from_non_archive(tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_text("not an archive\n")
    with pytest.raises(ValueError, match="not a tar or zip"):
        extract_member(plain, "x", tmp_path / "out" / "x")
    assert _listing(tmp_path / "out") == []


def _damage(path: Path, at: float) -> Path:
    """Flip a byte ``at`` of the way into the file."""
    data = bytearray(path.read_bytes())
    data[int(len(data) * at)] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


def _truncate(path: Path, keep: float) -> Path:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    return path


@pytest.mark.parametrize(
    ("build", "spoil"),
    [
        (_zip, lambda p: _damage(p, 0.1)),  # a member's bytes: zipfile's "Bad CRC-32"
        (_tar_gz, lambda p: _truncate(p, 0.6)),  # gzip stream cut short: EOFError / ReadError
        (_tar_gz, lambda p: _damage(p, 0.5)),  # corrupt deflate data: zlib.error / BadGzipFile
    ],
    ids=["zip-crc", "tar.gz-truncated", "tar.gz-corrupt"],
)
def test_a_damaged_archive_names_the_archive_and_the_member(tmp_path, build, spoil):
    """The library's error (BadZipFile "Bad CRC-32 for file ...", EOFError "Compressed file ended
    before the end-of-stream marker was reached", zlib.error) reached the user without the
    archive or the member."""
    archive = spoil(build(tmp_path / ("a.tar.gz" if build is _tar_gz else "a.zip")))
    out = tmp_path / "out" / "collection.tsv"
    with pytest.raises(ArchiveError) as info:
        extract_member(archive, "pkg/data/collection.tsv", out)
    message = str(info.value)
    assert (
        message.startswith(f"{archive}, member 'pkg/data/collection.tsv': ")
        and "damaged" in message
    )
    assert info.value.archive == str(archive) and info.value.member == "pkg/data/collection.tsv"
    assert _listing(tmp_path / "out") == []
