"""The CUDA version of the GPU nodes, one setting (``cuda`` in the config) for every GPU environment.

Three environments carry CUDA libraries: the model stages' (``envs/torch.yaml``, conda-forge's
pytorch), ColBERT's (``envs/colbert.yaml``, torch's wheel from the package index) and the vLLM
server's (``envs/serving.yaml``).  Each has a CUDA-13 file and a CUDA-12 variant beside it
(``<name>-cuda12.yaml``); :func:`env_file` picks the one the setting names, for the rules'
``conda:`` directives, the docs and the dry run's plan alike.  On a login node without a GPU
conda must be told the CUDA it builds for (``CONDA_OVERRIDE_CUDA``): :func:`conda_override` is
the same setting, exported by the workflow before conda creates an environment, and
:func:`override_problems` stops a run whose environment says another major version.

On the ground floor: the rules, the config check and the docs' test read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# config ``cuda`` -> the suffix of its environment files (config/schema.yaml's enum is these keys)
VARIANTS = {"13.0": "", "12.8": "-cuda12"}
DEFAULT = "13.0"
# the environments that carry CUDA libraries; the others (data, tracking) have one file
GPU_ENVS = ("torch", "colbert", "serving")


def setting(config: Mapping[str, Any]) -> str:
    """The config's CUDA version as its variants' key ("12.8"; ``--config cuda=12.8`` gives a number)."""
    value = config.get("cuda", DEFAULT)
    return value if isinstance(value, str) else f"{float(value):.1f}"


def env_file(name: str, cuda: str) -> str:
    """``envs/<name>.yaml`` or its variant for ``cuda`` (a GPU environment), relative to the repository."""
    if cuda not in VARIANTS:
        raise ValueError(f"cuda: {cuda!r} is none of {', '.join(VARIANTS)}")
    return f"envs/{name}{VARIANTS[cuda] if name in GPU_ENVS else ''}.yaml"


def conda_override(cuda: str) -> str:
    """The value of ``CONDA_OVERRIDE_CUDA`` for ``cuda``: conda's virtual ``__cuda`` package."""
    return cuda


def override_problems(
    config: Mapping[str, Any], environ: Mapping[str, str]
) -> list[tuple[str, str]]:
    """(path, message) when ``CONDA_OVERRIDE_CUDA`` is set to another major version than ``cuda``:
    conda would build the environments for the one while the rules pick the other's files."""
    cuda = setting(config)
    override = environ.get("CONDA_OVERRIDE_CUDA", "")
    if override and override.split(".")[0] != cuda.split(".")[0]:
        return [
            (
                "cuda",
                f"{cuda!r}, but the environment sets CONDA_OVERRIDE_CUDA={override}: conda would "
                f"build the GPU environments for CUDA {override} while the rules use the "
                f"CUDA-{cuda.split('.')[0]} files; unset it (the workflow sets it from cuda:) or "
                "set cuda: to match",
            )
        ]
    return []


def main(argv: list[str] | None = None) -> None:
    """``python src/isqaflow/cuda.py CONFIG NAME``: the environment file NAME's variant for the
    config's ``cuda`` (docs/paper-scale.md, step 4: the serving environment conda creates by
    hand); stdlib and PyYAML only, so the submit host's venv runs it without the project."""
    import argparse

    import yaml

    parser = argparse.ArgumentParser(description=main.__doc__.split(":", 1)[0])
    parser.add_argument("config", help="a config file (its cuda:, else the default)")
    parser.add_argument("name", choices=GPU_ENVS)
    args = parser.parse_args(argv)
    with open(args.config, encoding="utf-8") as handle:
        config = yaml.safe_load(handle) or {}
    print(env_file(args.name, setting(config)))


if __name__ == "__main__":
    main()
