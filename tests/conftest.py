"""Shared fixtures: tiny random-weight models (no network), paths, the shared samples."""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import os
import sys
import time
from pathlib import Path

import pytest

# No test may reach the Hugging Face Hub (a lookup takes ~47 s to fail offline).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# No dry run of a test asks a provider for its model list (a placeholder key, a network call).
os.environ.setdefault("ISQAFLOW_NO_MODEL_LISTS", "1")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"

CORPUS = (
    "The quick brown fox jumps over the lazy dog. Question: Answer: Evidence: YES NO "
    "Unanswerable 1 2 3. The model reads a paper and writes a summary of its results. "
    "Facts and non-facts help the summarizer. "
) * 40

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_tiny_causal(path: Path, seed: int = 0) -> Path:
    """A 2-layer Llama with a 512-token byte-level BPE tokenizer and a chat template."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=512,
        special_tokens=["<|pad|>", "<|bos|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(CORPUS.split(". "), trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<|bos|>", eos_token="<|im_end|>", pad_token="<|pad|>"
    )
    fast.chat_template = CHAT_TEMPLATE
    config = LlamaConfig(
        vocab_size=len(fast),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=4096,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    LlamaForCausalLM(config).save_pretrained(path)
    fast.save_pretrained(path)
    return path


def build_tiny_seq2seq(path: Path, seed: int = 0) -> Path:
    """A 2+2-layer T5 with a small Unigram tokenizer (Metaspace), no chat template."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.UnigramTrainer(
        vocab_size=400, special_tokens=["<pad>", "</s>", "<unk>"], unk_token="<unk>"
    )
    tok.train_from_iterator(CORPUS.split(". "), trainer)
    from tokenizers.processors import TemplateProcessing

    tok.post_processor = TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="</s>", pad_token="<pad>", unk_token="<unk>"
    )
    config = T5Config(
        vocab_size=len(fast),
        d_model=64,
        d_kv=16,
        d_ff=128,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        pad_token_id=fast.pad_token_id,
        eos_token_id=fast.eos_token_id,
        decoder_start_token_id=fast.pad_token_id,
    )
    torch.manual_seed(seed)
    T5ForConditionalGeneration(config).save_pretrained(path)
    fast.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_causal(tmp_path_factory) -> Path:
    return build_tiny_causal(tmp_path_factory.mktemp("tiny-causal"))


@pytest.fixture(scope="session")
def tiny_seq2seq(tmp_path_factory) -> Path:
    return build_tiny_seq2seq(tmp_path_factory.mktemp("tiny-t5"))


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real-format samples not present ({SHARED_DATA}); a fresh clone has none")
    return SHARED_DATA


def slurm_helpers():
    """tests/slurm/cluster.py (tests/ is not a package: loaded by path, once)."""
    name = "isqaflow_test_slurm_cluster"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "tests" / "slurm" / "cluster.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _slurm_unavailable(message: str, output: str = "") -> None:
    """In CI (CI=true) a cluster that cannot start is a failure, elsewhere a skip."""
    detail = f"{message}\n{output}".strip()
    if os.environ.get("CI") == "true":
        pytest.fail(f"SLURM test cluster could not start (CI=true):\n{detail}", pytrace=False)
    tail = "\n".join(output.strip().splitlines()[-5:])
    pytest.skip(f"SLURM test cluster unavailable: {message}" + (f"\n{tail}" if tail else ""))


@contextlib.contextmanager
def machine_lock(name: str):
    """An exclusive lock on this machine (flock on /tmp/<name>.lock): some things exist once per
    machine -- the SLURM cluster, the docs' venv -- and two test sessions (or xdist workers)
    must not build or start them at once."""
    with open(Path("/tmp") / f"{name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def embedded_model(dest: Path, dtype: str = "bfloat16") -> Path:
    """The embedded model (config/config.yaml's smollm2), converted from its GGUF package as rule
    convert_gguf_model converts it, at ``dest``.  Converted once per machine and dtype (~20 s:
    the GGUF is read three times) under a machine lock into a cache beside the docs' venv, keyed
    by the package, the converter's code and transformers' version; each caller gets its own
    copy of the small files (a test may edit them) and a hard link to the weights."""
    import importlib.metadata
    import shutil

    import yaml

    from isqaflow.codehash import code_version
    from isqaflow.models.weights.convert import convert_gguf_package

    convert = yaml.safe_load((REPO / "config/config.yaml").read_text())["models"]["smollm2"][
        "convert"
    ]
    key = "-".join(
        [
            convert["gguf_file"].removesuffix(".gguf"),
            importlib.metadata.version(convert["package"].replace("_", "-")),
            dtype,
            importlib.metadata.version("transformers"),
            code_version("isqaflow.models.weights.convert"),
        ]
    )
    cache = Path("/tmp/isqaflow-test-models") / key
    with machine_lock(f"isqaflow-test-model-{key}"):
        if not (cache / ".complete").exists():
            shutil.rmtree(cache, ignore_errors=True)
            convert_gguf_package(
                convert["package"], convert["gguf_file"], cache / "model", dtype=dtype
            )
            (cache / ".complete").touch()
    dest.mkdir(parents=True, exist_ok=True)
    for source in (cache / "model").iterdir():
        if source.suffix == ".safetensors":
            os.link(source, dest / source.name)  # never written to: shared
        else:
            shutil.copy2(source, dest / source.name)
    return dest


# The live cluster is one per machine and `make test` runs two test sessions that use it at once
# (the dress rehearsal beside the other tiers, Makefile): each holds a shared lock on this file
# while it runs; the last to let go stops the cluster if a test session started it (the marker).
CLUSTER_USERS = Path("/tmp/isqaflow-slurm-users.lock")
CLUSTER_STARTED_BY_TESTS = Path("/tmp/isqaflow-slurm-started-by-tests")


@pytest.fixture(scope="session")
def slurm_cluster():
    """A one-node SLURM cluster on localhost (tests/slurm/start_slurm.sh), started under a
    machine lock (two sessions never start it at once) and stopped by the last test session
    using it if a test session started it (ISQAFLOW_SLURM_KEEP=1 keeps it)."""
    cluster = slurm_helpers()
    ok, why = cluster.cluster_available()
    if not ok:
        _slurm_unavailable(why)
    timeout = float(os.environ.get("ISQAFLOW_SLURM_START_TIMEOUT", "300"))
    started = time.monotonic()
    users = open(CLUSTER_USERS, "w")  # noqa: SIM115 -- held for the session
    fcntl.flock(users, fcntl.LOCK_SH)
    with machine_lock("isqaflow-slurm-start"):
        was_running = cluster.cluster_running()
        try:
            info = cluster.start_cluster(timeout=timeout)
        except cluster.ClusterError as err:
            if not was_running:  # do not leave half a cluster behind
                cluster.stop_cluster()
            fcntl.flock(users, fcntl.LOCK_UN)
            users.close()
            _slurm_unavailable(str(err.args[0]), err.output)
        if not was_running:
            CLUSTER_STARTED_BY_TESTS.touch()
    print(
        f"\nSLURM cluster ready in {time.monotonic() - started:.1f}s (already running: {was_running})"
    )
    yield info
    fcntl.flock(users, fcntl.LOCK_UN)
    try:  # the last session out: nobody else holds the shared lock
        fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        users.close()
        return
    try:
        if CLUSTER_STARTED_BY_TESTS.exists() and os.environ.get("ISQAFLOW_SLURM_KEEP") != "1":
            cluster.stop_cluster()
            CLUSTER_STARTED_BY_TESTS.unlink()
    finally:
        users.close()


@pytest.fixture(scope="session")
def embedded_run(tmp_path_factory) -> Path:
    """The embedded default DAG, run once to the end on a fresh copy of the repository
    (minutes), shared by the tests that need a complete run: tests/workflow/test_workflow.py reads
    its results and checks what a change reruns; tests/cluster/test_slurm.py starts from a copy of
    it and runs the DAG's SLURM-specific jobs through the scheduler, resuming from this run's
    converted model and call caches.

    ISQAFLOW_EMBEDDED_RUN=<dir> uses a complete run made before instead (developers: to
    iterate on these tests; the tests write a few config files and a report into it)."""
    from workflow_utils import copy_repo, snakemake

    if os.environ.get("ISQAFLOW_EMBEDDED_RUN"):
        return Path(os.environ["ISQAFLOW_EMBEDDED_RUN"])
    workdir = copy_repo(tmp_path_factory.mktemp("embedded"))
    started = time.monotonic()
    result = snakemake(workdir, "--profile", "profiles/local", timeout=2400)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    print(f"\nembedded DAG: {time.monotonic() - started:.0f}s")
    return workdir
