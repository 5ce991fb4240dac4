"""Read a vLLM wheel statically and write the interface this project relies on to a JSON fixture.

    pip download --no-deps vllm==0.33.0 -d /tmp/vllm-wheel         # ~0.3 GB, no install
    python tools/vllm_interface.py /tmp/vllm-wheel/vllm-0.33.0-*.whl \
        --out tests/fixtures/vllm-0.33.0-interface.json

Nothing of vLLM is imported (it needs torch with CUDA): the wheel is opened as a zip
file and its Python sources are parsed with :mod:`ast`.  The fixture holds

* ``cli_flags``: every option ``vllm serve`` registers -- the literal flags of each
  ``add_argument`` call in ``vllm/engine/arg_utils.py`` and
  ``vllm/entrypoints/common/cli_args.py``, and the ``--field-name`` options that
  ``FrontendArgs``/``BaseFrontendArgs`` derive from their dataclass fields;
* ``boolean_fields``: frontend fields typed ``bool`` (they also take ``--no-...``);
* ``requests``: the fields of ``ChatCompletionRequest`` and ``CompletionRequest`` (the
  pydantic models behind ``/v1/chat/completions`` and ``/v1/completions``; vLLM accepts
  and ignores other fields with a log line only), and for each the request fields that
  ``to_beam_search_params`` reads -- all that survives when ``use_beam_search`` is set;
* ``beam_search_params``: the fields of ``BeamSearchParams``;
* ``defaults``: ``gpu_memory_utilization`` (``vllm/config/cache.py``), ``max_logprobs``
  (``vllm/config/model.py``), and the clamp of ``-inf`` log-probabilities;
* ``wheel``: file name, sha256, the ``torch`` requirement, and the CUDA runtime its
  extension modules link (``libcudart.so.N``).

``tests/unit/models/test_vllm_interface.py`` checks every flag the project puts on a ``vllm serve``
command line and every field it sends against this fixture.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import sys
import zipfile
from pathlib import Path

FILES = {
    "engine_args": "vllm/engine/arg_utils.py",
    "frontend_args": "vllm/entrypoints/common/cli_args.py",
    "chat": "vllm/entrypoints/openai/chat_completion/protocol.py",
    "completion": "vllm/entrypoints/openai/completion/protocol.py",
    "sampling": "vllm/sampling_params.py",
    "cache": "vllm/config/cache.py",
    "model": "vllm/config/model.py",
}
# older wheels (e.g. 0.11.0, the CUDA-12 alternative): the same definitions at other paths
FALLBACKS = {
    "frontend_args": "vllm/entrypoints/openai/cli_args.py",
    "chat": "vllm/entrypoints/openai/protocol.py",
    "completion": "vllm/entrypoints/openai/protocol.py",
}
REQUEST_CLASSES = {"ChatCompletionRequest": "chat", "CompletionRequest": "completion"}
FRONTEND_CLASSES = ("BaseFrontendArgs", "FrontendArgs")


def _classes(tree: ast.Module) -> dict[str, ast.ClassDef]:
    return {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}


def class_fields(cls: ast.ClassDef) -> dict[str, str]:
    """Annotated class-body names (pydantic, msgspec and dataclass fields) -> annotation text;
    ClassVars and private names left out."""
    out = {}
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            annotation = ast.unparse(node.annotation)
            if node.target.id.startswith("_") or annotation.startswith(
                ("ClassVar", "typing.ClassVar")
            ):
                continue
            out[node.target.id] = annotation
    return out


def field_default(cls: ast.ClassDef, name: str):
    """The literal default of a field (``= 0.9`` or ``Field(default=0.9, ...)``), else None."""
    for node in cls.body:
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == name
        ):
            value = node.value
            if isinstance(value, ast.Call):
                for keyword in value.keywords:
                    if keyword.arg == "default":
                        value = keyword.value
            try:
                return ast.literal_eval(value)
            except (ValueError, TypeError):
                return None
    return None


def literal_flags(tree: ast.Module) -> set[str]:
    flags = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
        ):
            for arg in node.args:
                if (
                    isinstance(arg, ast.Constant)
                    and isinstance(arg.value, str)
                    and arg.value.startswith("-")
                ):
                    flags.add(arg.value)
    return flags


def self_attributes(function: ast.FunctionDef) -> set[str]:
    return {
        node.attr
        for node in ast.walk(function)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    }


def method(cls: ast.ClassDef, name: str) -> ast.FunctionDef:
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise KeyError(f"{cls.name}.{name} not found")


def read_interface(wheel: Path) -> dict:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        paths = {
            key: path if path in names else FALLBACKS.get(key, path) for key, path in FILES.items()
        }
        missing = [path for path in paths.values() if path not in names]
        if missing:
            raise SystemExit(f"{wheel}: the wheel lacks {missing}; the layout moved, update FILES")
        trees = {
            key: ast.parse(archive.read(path).decode("utf-8"), filename=path)
            for key, path in paths.items()
        }
        metadata_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(metadata_name).decode("utf-8")
        cudart = set()
        for name in sorted(n for n in names if n.startswith("vllm/_C") and n.endswith(".so")):
            cudart |= set(re.findall(rb"libcudart\.so\.[0-9]+", archive.read(name)))
    digest = hashlib.sha256()
    with open(wheel, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)

    flags = literal_flags(trees["engine_args"]) | literal_flags(trees["frontend_args"])
    frontend = _classes(trees["frontend_args"])
    boolean = set()
    for class_name in (c for c in FRONTEND_CLASSES if c in frontend):  # 0.11.0: FrontendArgs only
        for field, annotation in class_fields(frontend[class_name]).items():
            flags.add("--" + field.replace("_", "-"))
            if annotation == "bool":
                boolean.add("--" + field.replace("_", "-"))
    requests = {}
    for class_name, key in REQUEST_CLASSES.items():
        cls = _classes(trees[key])[class_name]
        fields = class_fields(cls)
        beam_reads = sorted(self_attributes(method(cls, "to_beam_search_params")) & set(fields))
        requests[class_name] = {"fields": sorted(fields), "beam_search_reads": beam_reads}
    beam = class_fields(_classes(trees["sampling"])["BeamSearchParams"])
    cache_cls = _classes(trees["cache"])["CacheConfig"]
    model_cls = _classes(trees["model"])["ModelConfig"]
    chat_source = ast.unparse(trees["chat"])
    version = re.search(r"^Version: (.+)$", metadata, re.M).group(1).strip()
    torch = sorted(set(re.findall(r"^Requires-Dist: (torch==[^;\s]+)", metadata, re.M)))
    return {
        "source": f"read statically from {wheel.name} by tools/vllm_interface.py (nothing imported)",
        "wheel": {
            "file": wheel.name,
            "version": version,
            "sha256": digest.hexdigest(),
            "requires_torch": torch,
            "links_cudart": sorted(c.decode() for c in cudart),
        },
        "cli_flags": sorted(flags),
        "boolean_fields": sorted(boolean),
        "requests": requests,
        "beam_search_params": sorted(beam),
        "defaults": {
            "gpu_memory_utilization": field_default(cache_cls, "gpu_memory_utilization"),
            "max_logprobs": field_default(model_cls, "max_logprobs"),
            "logprob_floor": -9999.0 if "-9999.0" in chat_source else None,
        },
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    interface = read_interface(args.wheel)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(interface, indent=1, sort_keys=True) + "\n")
    print(
        f"{args.out}: {len(interface['cli_flags'])} flags, "
        + ", ".join(f"{k} {len(v['fields'])} fields" for k, v in interface["requests"].items()),
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
