"""Rule fetch_weights' library (isqaflow.models.weights.hub) against a local stand-in for the
Hugging Face Hub (tests/hub_double.py): nothing leaves the machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from hub_double import HubDouble

pytest.importorskip("huggingface_hub")

WEIGHTS = {
    "config.json": b'{"model_type": "llama"}\n',
    "model.safetensors": b"\0" * 4096,
    "tokenizer/tokenizer.json": b"{}\n",
}
TOKEN = "hf_placeholder_secret_token_1234"


def fetch_in_subprocess(tmp_path, hub, repo, revision=None, token=None, offline=False):
    """isqaflow.models.weights.hub.fetch in a fresh interpreter (huggingface_hub reads HF_ENDPOINT,
    HF_HUB_OFFLINE and HF_TOKEN at import), as the fetch job runs it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(
        HF_ENDPOINT=hub.url,
        HF_HOME=str(tmp_path / "hf-home"),
        HF_HUB_DISABLE_XET="1",
        HF_HUB_OFFLINE="1" if offline else "0",
        HF_HUB_DISABLE_TELEMETRY="1",
    )
    if token:
        env["HF_TOKEN"] = token
    record = tmp_path / "weights" / f"{repo.replace('/', '--')}.json"
    code = textwrap.dedent(f"""
        import logging, sys
        logging.basicConfig(level=logging.INFO, stream=sys.stderr)
        from isqaflow.models.weights.hub import fetch, WeightsError
        try:
            fetch({repo!r}, {revision!r}, {str(record)!r}, cache_dir={str(tmp_path / "cache")!r}, name="m")
        except WeightsError as e:
            print("WeightsError:", e, file=sys.stderr)
            sys.exit(3)
    """)
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    return result, record


def test_fetch_records_commit_and_fingerprint(tmp_path):
    with HubDouble() as hub:
        commit = hub.add("owner/tiny-model", WEIGHTS)
        result, record = fetch_in_subprocess(tmp_path, hub, "owner/tiny-model")
    assert result.returncode == 0, result.stderr
    data = json.loads(record.read_text())
    assert (
        data["commit"] == commit and data["repo"] == "owner/tiny-model" and data["revision"] is None
    )
    assert sorted(f["path"] for f in data["files"]) == sorted(WEIGHTS)
    assert data["bytes"] == sum(len(v) for v in WEIGHTS.values())
    assert data["fingerprint"].startswith("sha256:")
    snapshot = tmp_path / "cache" / "models--owner--tiny-model" / "snapshots" / commit
    assert (snapshot / "model.safetensors").read_bytes() == WEIGHTS["model.safetensors"]


def test_fetch_at_a_pinned_commit_then_offline_from_the_cache(tmp_path):
    with HubDouble() as hub:
        commit = hub.add("owner/tiny-model", WEIGHTS)
        first, record = fetch_in_subprocess(tmp_path, hub, "owner/tiny-model", revision=commit)
        assert first.returncode == 0, first.stderr
        fingerprint = json.loads(record.read_text())["fingerprint"]
        hub.requests.clear()
        again, record = fetch_in_subprocess(
            tmp_path, hub, "owner/tiny-model", revision=commit, offline=True
        )
        assert again.returncode == 0, again.stderr
        assert hub.requests == []  # offline: the cache only
    assert json.loads(record.read_text())["fingerprint"] == fingerprint


# a repository holding its weights three times over (Llama-3's original/*.pth, Mistral's consolidated
# file, .bin beside .safetensors), an adapter folder with .bin only, and sentence-transformers' modules
MIXED = {
    "config.json": b'{"model_type": "llama"}\n',
    "generation_config.json": b"{}\n",
    "tokenizer.json": b"{}\n",
    "tokenizer_config.json": b"{}\n",
    "tokenizer.model": b"sp",
    "special_tokens_map.json": b"{}\n",
    "chat_template.jinja": b"{{ messages }}",
    "model-00001-of-00002.safetensors": b"\1" * 2048,
    "model-00002-of-00002.safetensors": b"\2" * 2048,
    "model.safetensors.index.json": b"{}\n",
    "pytorch_model-00001-of-00002.bin": b"\3" * 2048,
    "pytorch_model-00002-of-00002.bin": b"\4" * 2048,
    "pytorch_model.bin.index.json": b"{}\n",
    "consolidated.safetensors": b"\5" * 4096,
    "consolidated.00.pth": b"\6" * 4096,
    "original/consolidated.00.pth": b"\7" * 4096,
    "original/params.json": b"{}\n",
    "original/tokenizer.model": b"sp",
    "tf_model.h5": b"\x08" * 1024,
    "flax_model.msgpack": b"\x09" * 1024,
    "model.onnx": b"o" * 1024,
    "adapter/adapter_config.json": b"{}\n",
    "adapter/adapter_model.bin": b"a" * 512,
    "1_Pooling/config.json": b"{}\n",
    "README.md": b"# card\n",
}
MIXED = {
    path: data + path.encode() for path, data in MIXED.items()
}  # distinct blobs: each file is fetched
LOADED = {
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "tokenizer.model",
    "special_tokens_map.json",
    "chat_template.jinja",
    "model-00001-of-00002.safetensors",
    "model-00002-of-00002.safetensors",
    "model.safetensors.index.json",
    "adapter/adapter_config.json",
    "adapter/adapter_model.bin",
    "1_Pooling/config.json",
    "README.md",
}


def test_fetch_takes_only_the_files_the_backend_loads(tmp_path):
    """Issue 28, item 7: safetensors where a folder has them, .bin only where it has none, never
    original/*.pth, consolidated*, TF/Flax/ONNX weights; configs, tokenizer and adapter files kept."""
    with HubDouble() as hub:
        commit = hub.add("owner/mixed-model", MIXED)
        result, record = fetch_in_subprocess(tmp_path, hub, "owner/mixed-model")
        downloaded = {
            path.split(f"/resolve/{commit}/", 1)[1]
            for method, path, _ in hub.requests
            if method == "GET" and "/resolve/" in path
        }
    assert result.returncode == 0, result.stderr
    assert downloaded == LOADED
    snapshot = tmp_path / "cache" / "models--owner--mixed-model" / "snapshots" / commit
    assert {
        p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*") if p.is_file()
    } == LOADED
    data = json.loads(record.read_text())
    assert {f["path"] for f in data["files"]} == LOADED
    assert data["bytes"] == sum(len(MIXED[f]) for f in LOADED)


def test_fingerprint_follows_the_contents(tmp_path):
    changed = dict(WEIGHTS, **{"model.safetensors": b"\1" * 4096})
    prints = []
    for n, files in enumerate((WEIGHTS, changed)):
        with HubDouble() as hub:
            hub.add("owner/tiny-model", files)
            result, record = fetch_in_subprocess(tmp_path / str(n), hub, "owner/tiny-model")
        assert result.returncode == 0, result.stderr
        prints.append(json.loads(record.read_text())["fingerprint"])
    assert prints[0] != prints[1]


def test_gated_repo_without_token_names_repo_and_what_to_do(tmp_path):
    with HubDouble() as hub:
        hub.token = TOKEN
        hub.add("meta-llama/Gated-7b", WEIGHTS, gated=True)
        result, record = fetch_in_subprocess(tmp_path, hub, "meta-llama/Gated-7b")
    assert result.returncode == 3, result.stderr
    assert "meta-llama/Gated-7b is a gated repository" in result.stderr
    assert "accept its licence at https://huggingface.co/meta-llama/Gated-7b" in result.stderr
    assert "HF_TOKEN" in result.stderr
    assert not record.exists()


def test_gated_repo_with_token_is_fetched_and_the_token_never_logged(tmp_path):
    with HubDouble() as hub:
        hub.token = TOKEN
        hub.add("meta-llama/Gated-7b", WEIGHTS, gated=True)
        result, record = fetch_in_subprocess(tmp_path, hub, "meta-llama/Gated-7b", token=TOKEN)
        assert {auth for _, _, auth in hub.requests} == {f"Bearer {TOKEN}"}
    assert result.returncode == 0, result.stderr
    assert TOKEN not in result.stderr + result.stdout
    assert TOKEN not in record.read_text()


def test_gated_repo_with_a_token_lacking_access(tmp_path):
    with HubDouble() as hub:
        hub.token = TOKEN
        hub.add("meta-llama/Gated-7b", WEIGHTS, gated=True)
        result, _ = fetch_in_subprocess(
            tmp_path, hub, "meta-llama/Gated-7b", token="hf_other_account"
        )
    assert result.returncode == 3
    assert "the account of $HF_TOKEN has no access" in result.stderr
    assert "hf_other_account" not in result.stderr


def test_missing_repo_names_it(tmp_path):
    with HubDouble() as hub:
        result, record = fetch_in_subprocess(tmp_path, hub, "owner/no-such-model")
    assert result.returncode == 3
    assert "owner/no-such-model was not found on the Hub" in result.stderr
    assert "model 'm'" in result.stderr
    assert not record.exists()


def test_unknown_revision_names_it(tmp_path):
    with HubDouble() as hub:
        hub.add("owner/tiny-model", WEIGHTS)
        result, _ = fetch_in_subprocess(tmp_path, hub, "owner/tiny-model", revision="v9")
    assert result.returncode == 3
    assert "owner/tiny-model has no revision" in result.stderr


def test_offline_and_not_cached_says_so(tmp_path):
    with HubDouble() as hub:
        hub.add("owner/tiny-model", WEIGHTS)
        result, _ = fetch_in_subprocess(tmp_path, hub, "owner/tiny-model", offline=True)
    assert result.returncode == 3
    assert "not in the cache" in result.stderr


def test_hub_models_of_the_paper_config():
    import yaml
    from isqaflow.models.weights.hub import hub_models
    from workflow_utils import REPO

    models = yaml.safe_load((REPO / "config/paper.yaml").read_text())["models"]
    hub = hub_models(models)
    assert "meta-llama/Llama-2-7b-chat-hf" in {m["repo"] for m in hub.values()}
    assert not any(models[name].get("backend") == "openai" for name in hub)
    retrievers = yaml.safe_load((REPO / "config/paper.yaml").read_text())["arena"]["retrievers"]
    with_retrievers = hub_models(models, retrievers)
    assert with_retrievers["retriever-colbert"] == {
        "repo": "colbert-ir/colbertv2.0",
        "revision": None,
    }
    assert "retriever-dense" not in with_retrievers  # all-MiniLM-L6-v2: the packaged model
    embedded = yaml.safe_load((REPO / "config/config.yaml").read_text())
    # the embedded default converts its model from a package
    assert hub_models(embedded["models"], embedded["arena"]["retrievers"]) == {}


# ------------------------------------------------------------------ offline jobs, online fetches
RUNTIME_CHECK = """
import json, os, sys
from isqaflow.runtime import allow_hub, export_workflow_environment
export_workflow_environment("src", ["snakemake"])
job_env = os.environ["HF_HUB_OFFLINE"]
online = allow_hub()
print(json.dumps({"job": job_env, "fetch": os.environ["HF_HUB_OFFLINE"], "online": online}))
"""


@pytest.mark.parametrize(("started_offline", "fetch"), [(False, "0"), (True, "1")])
def test_jobs_run_offline_and_fetches_online_unless_the_run_was_started_offline(
    started_offline, fetch
):
    env = {
        k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "ISQAFLOW_HUB_ONLINE")
    }
    if started_offline:
        env["HF_HUB_OFFLINE"] = "1"
    out = subprocess.run(
        [sys.executable, "-c", RUNTIME_CHECK], env=env, capture_output=True, text=True, check=True
    )
    result = json.loads(out.stdout)
    assert result == {"job": "1", "fetch": fetch, "online": not started_offline}


def test_the_manifest_records_the_fetched_commit_and_fingerprint(tmp_path):
    from isqaflow.report.manifest import model_record

    record = tmp_path / "vicuna.json"
    record.write_text(
        json.dumps(
            {
                "repo": "lmsys/vicuna-7b-v1.5",
                "revision": None,
                "commit": "c" * 40,
                "fingerprint": "sha256:" + "f" * 64,
                "bytes": 10,
                "files": [],
            }
        )
    )
    entry = {"backend": "hf", "model": "lmsys/vicuna-7b-v1.5"}
    assert model_record("vicuna-7b", entry, record)["hub"] == {
        "repo": "lmsys/vicuna-7b-v1.5",
        "revision": None,
        "commit": "c" * 40,
        "fingerprint": "sha256:" + "f" * 64,
        "bytes": 10,
    }
    assert "hub" not in model_record("vicuna-7b", entry, tmp_path / "not-fetched.json")


@pytest.mark.parametrize(
    ("model", "hub"),
    [
        ("meta-llama/Llama-2-7b-chat-hf", True),
        ("lmsys/vicuna-7b-v1.5", True),
        ("resources/models/smollm2-135m-instruct", False),
        ("resources/x", False),  # local folders
        ("/abs/path", False),
        ("./model", False),
        ("gpt2", True),
        ("a/b/c", False),
    ],
)
def test_is_hub_id(model, hub, tmp_path):
    from isqaflow.models.weights.hub import is_hub_id

    (tmp_path / "resources").mkdir()
    assert is_hub_id(model, tmp_path) is hub
