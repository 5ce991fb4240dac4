"""Fetch raw dataset files from pinned locations and verify their checksums.

A location is a URL (``https://``, ``http://``, ``file://``) or a Hugging Face Hub
file pinned to a revision, written ``hf://datasets/<owner>/<name>@<revision>/<file>``
(fetched with :func:`huggingface_hub.hf_hub_download`).  A checksum is
``sha256:<hex>`` (or ``md5:<hex>`` where the publisher gives only MD5, as for
LoTTE and BEIR's FiQA).

* A file already in place with the right checksum is never fetched again.
* A file in place with a wrong checksum is an error naming the file and both hashes
  (it is not silently replaced: it may be someone's edited copy).
* A download streams into ``<dest>.part`` and is renamed only after its checksum
  matched, so an interrupted or corrupted download never looks finished.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import logging
import lzma
import os
import shutil
import tarfile
import time
import urllib.parse
import urllib.request
import zipfile
import zlib
from pathlib import Path

from isqaflow.runtime import NamedError

log = logging.getLogger(__name__)

CHUNK = 1 << 20


class ChecksumError(RuntimeError):
    def __init__(
        self, path: str | os.PathLike, expected: str, actual: str, source: str | None = None
    ) -> None:
        self.path, self.expected, self.actual, self.source = str(path), expected, actual, source
        origin = f" (downloaded from {source})" if source else ""
        super().__init__(f"{path}: checksum mismatch: expected {expected}, got {actual}{origin}")


def parse_checksum(checksum: str) -> tuple[str, str]:
    """``"sha256:ab12.."`` -> ``("sha256", "ab12..")``; a bare hex string is SHA-256."""
    algo, _, digest = checksum.partition(":") if ":" in checksum else ("sha256", "", checksum)
    algo = algo.lower()
    if algo not in ("sha256", "md5"):
        raise ValueError(f"unsupported checksum algorithm {algo!r} in {checksum!r}")
    expected_len = {"sha256": 64, "md5": 32}[algo]
    digest = digest.lower()
    if len(digest) != expected_len or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError(f"malformed {algo} checksum {checksum!r}")
    return algo, digest


def file_digest(path: str | os.PathLike, algo: str = "sha256") -> str:
    h = hashlib.new(algo)
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def verify(path: str | os.PathLike, checksum: str) -> None:
    algo, expected = parse_checksum(checksum)
    actual = file_digest(path, algo)
    if actual != expected:
        raise ChecksumError(path, f"{algo}:{expected}", f"{algo}:{actual}")


def _parse_hf(url: str) -> tuple[str, str, str, str]:
    """``hf://datasets/owner/name@rev/path/in/repo`` -> (repo_type, repo_id, revision, filename)."""
    rest = url.removeprefix("hf://")
    kind, _, rest = rest.partition("/")
    if kind not in ("datasets", "models"):
        raise ValueError(f"{url}: expected hf://datasets/... or hf://models/...")
    owner, _, rest = rest.partition("/")
    name_rev, _, filename = rest.partition("/")
    name, _, revision = name_rev.partition("@")
    if not (owner and name and revision and filename):
        raise ValueError(f"{url}: expected hf://{kind}/<owner>/<name>@<revision>/<file>")
    return kind.removesuffix("s"), f"{owner}/{name}", revision, filename


def _stream(url: str, part: Path, timeout: float) -> None:
    request = urllib.request.Request(url, headers={"User-Agent": "isqaflow"})
    with urllib.request.urlopen(request, timeout=timeout) as response, open(part, "wb") as out:
        total = int(response.headers.get("Content-Length") or 0)
        done, last = 0, time.monotonic()
        while chunk := response.read(CHUNK):
            out.write(chunk)
            done += len(chunk)
            if time.monotonic() - last > 10:
                pct = f" ({100 * done / total:.0f}%)" if total else ""
                log.info("downloading %s: %.1f MB%s", url, done / 1e6, pct)
                last = time.monotonic()


@contextlib.contextmanager
def _partial(dest: Path):
    """A ``<dest>.part`` file to write; renamed onto ``dest`` on success, removed on any failure."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    try:
        yield part
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            part.unlink()
        raise
    os.replace(part, dest)


def fetch(url: str, dest: str | os.PathLike, checksum: str, timeout: float = 60.0) -> Path:
    """Make ``dest`` hold the verified file from ``url``; see the module docstring."""
    dest = Path(dest)
    parse_checksum(checksum)  # fail on a malformed pin before any network traffic
    if dest.exists():
        verify(dest, checksum)
        log.info("%s: already in place with the right checksum; not fetched", dest)
        return dest
    with _partial(dest) as part:
        if url.startswith("hf://"):
            from huggingface_hub import hf_hub_download

            repo_type, repo_id, revision, filename = _parse_hf(url)
            cached = hf_hub_download(repo_id, filename, revision=revision, repo_type=repo_type)
            shutil.copyfile(cached, part)
        else:
            scheme = urllib.parse.urlparse(url).scheme
            if scheme not in ("http", "https", "file"):
                raise ValueError(f"{url}: unsupported URL scheme {scheme!r}")
            log.info("fetching %s -> %s", url, dest)
            _stream(url, part, timeout)
        try:
            verify(part, checksum)
        except ChecksumError as err:  # name the destination and the source, not the temporary file
            raise ChecksumError(dest, err.expected, err.actual, source=url) from None
    return dest


class ArchiveError(NamedError, ValueError):
    """An archive that cannot be read, or lacks a member: names the archive and the member."""

    def __init__(self, archive: str | os.PathLike, member: str, message: str) -> None:
        self.archive, self.member = str(archive), member
        super().__init__(f"{archive}, member {member!r}: {message}")


# What reading a damaged archive raises: zipfile's BadZipFile (a bad CRC, a truncated
# member), tarfile's errors, gzip's BadGzipFile (an OSError), zlib's error, EOFError (a
# compressed stream cut short), lzma's and bz2's errors (OSError / ValueError).
_DAMAGED = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    tarfile.TarError,
    EOFError,
    zlib.error,
    OSError,
    ValueError,
    lzma.LZMAError,
)


# The magic bytes of gzip, bzip2 and xz: a .tar.gz whose compressed stream is broken is not
# recognised as a tar archive at all.
_COMPRESSED = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00")


def _compressed(archive: Path) -> bool:
    with archive.open("rb") as handle:
        return handle.read(6).startswith(_COMPRESSED)


def _missing(archive: Path, member: str, names: list[str]) -> ArchiveError:
    close = difflib.get_close_matches(member, names, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    shown = ", ".join(repr(n) for n in names[:5]) + (
        f" ... ({len(names)} in all)" if len(names) > 5 else ""
    )
    return ArchiveError(
        archive, member, f"no such file in the archive{hint} (its files: {shown or 'none'})"
    )


def extract_member(archive: str | os.PathLike, member: str, dest: str | os.PathLike) -> Path:
    """Copy one member of a ``.tar*`` or ``.zip`` archive to ``dest`` (atomically).

    A member the archive lacks (the closest name offered) and a damaged archive (a bad
    CRC, a truncated or corrupt compressed stream) are an :class:`ArchiveError` naming the
    archive and the member, never the library's bare ``KeyError`` or ``EOFError``.
    """
    archive, dest = Path(archive), Path(dest)
    with _partial(dest) as part:
        try:
            if zipfile.is_zipfile(archive):
                with zipfile.ZipFile(archive) as zf:
                    names = [i.filename for i in zf.infolist() if not i.is_dir()]
                    if member not in names:
                        raise _missing(archive, member, names)
                    with zf.open(member) as src, open(part, "wb") as out:
                        shutil.copyfileobj(src, out, CHUNK)
            elif tarfile.is_tarfile(archive):
                with tarfile.open(archive) as tf:
                    try:
                        info = tf.getmember(member)
                    except KeyError:
                        info = None
                    if info is None or not info.isfile():
                        raise _missing(
                            archive, member, [m.name for m in tf.getmembers() if m.isfile()]
                        )
                    src = tf.extractfile(info)
                    with src, open(part, "wb") as out:
                        shutil.copyfileobj(src, out, CHUNK)
            elif _compressed(archive):
                raise ArchiveError(
                    archive,
                    member,
                    "a compressed file that does not decompress into a tar "
                    "archive: damaged or truncated; delete it to download it again",
                )
            else:
                raise ArchiveError(archive, member, "not a tar or zip archive")
        except ArchiveError:
            raise
        except _DAMAGED as err:
            detail = str(err) if len(str(err)) <= 120 else str(err)[:117] + "..."
            raise ArchiveError(
                archive,
                member,
                f"the archive is damaged or truncated ({type(err).__name__}: "
                f"{detail}); delete it to download it again",
            ) from err
    return dest
