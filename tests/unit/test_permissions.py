"""Outputs get the permissions of the process umask (0644 by default), written atomically as before.

Collaborators on a shared cluster filesystem must be able to read the results; temporary-file
helpers (``tempfile.mkstemp``) and safetensors create files 0600.  Every writer is checked
under two umasks, so the test shows the mode follows the umask rather than a fixed 0644.
"""

from __future__ import annotations

import os
import stat
import tarfile

import pytest

from isqaflow.io import apply_umask, atomic_open, write_json, write_jsonl, write_text


@pytest.fixture(params=[0o022, 0o027], ids=["umask-022", "umask-027"])
def umask(request):
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_atomic_writers_follow_the_umask(tmp_path, umask):
    write_text(tmp_path / "a.txt", "text\n")
    write_json(tmp_path / "b.json", {"a": 1})
    write_jsonl(tmp_path / "c.jsonl", [{"a": 1}])
    with atomic_open(tmp_path / "d.npy", "wb") as handle:
        handle.write(b"\x00")
    for name in ("a.txt", "b.json", "c.jsonl", "d.npy"):
        assert mode(tmp_path / name) == 0o666 & ~umask, name
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "a.txt",
        "b.json",
        "c.jsonl",
        "d.npy",
    ]  # no temporaries


def test_a_replaced_file_gets_the_umask_mode_too(tmp_path, umask):
    path = tmp_path / "table.csv"
    path.write_text("old\n")
    os.chmod(path, 0o600)  # as written by an earlier version
    write_text(path, "new\n")
    assert path.read_text() == "new\n" and mode(path) == 0o666 & ~umask


def test_figures_follow_the_umask(tmp_path, umask):
    from isqaflow.report.figures import new_figure, save_figure

    fig, axes = new_figure()
    axes[0].plot([0, 1], [1, 0])
    save_figure(fig, [tmp_path / "f.png", tmp_path / "f.svg"])
    assert mode(tmp_path / "f.png") == mode(tmp_path / "f.svg") == 0o666 & ~umask


def test_downloads_and_archive_members_follow_the_umask(tmp_path, umask):
    from isqaflow.data.download import extract_member, fetch, file_digest

    source = tmp_path / "source.txt"
    source.write_text("raw data\n")
    dest = fetch(
        source.as_uri(), tmp_path / "downloads/source.txt", f"sha256:{file_digest(source)}"
    )
    assert mode(dest) == 0o666 & ~umask
    archive = tmp_path / "archive.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(source, arcname="data/member.txt")
    os.chmod(source, 0o600)
    member = extract_member(archive, "data/member.txt", tmp_path / "extracted/member.txt")
    assert mode(member) == 0o666 & ~umask


def test_a_saved_checkpoint_gets_the_umask_mode(tiny_causal, tmp_path, umask):
    """save_pretrained writes model.safetensors 0600; apply_umask (model conversion, adapters) fixes it."""
    from transformers import AutoModelForCausalLM

    AutoModelForCausalLM.from_pretrained(tiny_causal).save_pretrained(tmp_path / "model")
    assert mode(tmp_path / "model/model.safetensors") == 0o600  # what the library does
    os.chmod(tmp_path / "model", 0o700)
    apply_umask(tmp_path / "model")
    assert mode(tmp_path / "model") == 0o777 & ~umask
    for path in (tmp_path / "model").iterdir():
        assert mode(path) == 0o666 & ~umask, path.name


def test_a_trained_adapter_is_readable_by_the_group(tiny_causal, tmp_path, umask):
    """The fine-tuning job's adapter folder, written by peft/safetensors, follows the umask."""
    from isqaflow.data.schema import ContextParagraph, QAExample
    from isqaflow.finetune.lora import LoraSettings, train

    example = QAExample(
        id="e1",
        question="Who jumps?",
        answer="the fox",
        context=[ContextParagraph(title="F", sentences=["The quick brown fox jumps."])],
        evidence=["The quick brown fox jumps."],
    )
    write_jsonl(tmp_path / "train.jsonl", [example])
    train(
        {"backend": "hf", "model": str(tiny_causal)},
        tmp_path / "train.jsonl",
        tmp_path / "adapter",
        tmp_path / "log.csv",
        LoraSettings(epochs=1, max_steps=1, batch_size=1),
        tmp_path / "ckpt",
        threads=1,
    )
    files = [tmp_path / "log.csv", *(tmp_path / "adapter").iterdir()]
    assert any(p.name == "adapter_model.safetensors" for p in files)
    for path in files:
        assert mode(path) == 0o666 & ~umask, path.name


def test_apply_umask_keeps_executables_executable(tmp_path, umask):
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n")
    os.chmod(script, 0o700)
    apply_umask(script)
    assert mode(script) == 0o777 & ~umask
