"""The conda environments pin the same versions as pyproject.toml (conda itself is unreachable here)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

from isqaflow import cuda

REPO = Path(__file__).resolve().parents[2]
# Environments that cannot share the main pins: checked for full pins on their own below.
OWN_PINS = {
    "colbert.yaml": {
        "pylate": "1.6.0",
        "fast-plaid": "1.4.6.2110",
        "torch": "2.11.0",
        "sentence-transformers": "5.3.0",
        "transformers": "5.3.0",
    },
    # the CUDA-12 variant: fast-plaid's build for torch 2.10.0, the index's CUDA 12.8 wheel
    "colbert-cuda12.yaml": {
        "pylate": "1.6.0",
        "fast-plaid": "1.4.6.2100",
        "torch": "2.10.0",
        "sentence-transformers": "5.3.0",
        "transformers": "5.3.0",
    },
}
ENVS = sorted(p for p in (REPO / "envs").glob("*.yaml") if p.name not in OWN_PINS)
CONDA_NAMES = {"pytorch": "torch"}  # conda-forge name -> PyPI name
CONDA_ONLY = {"cuda-version"}  # conda-forge's CUDA metapackage: no PyPI counterpart


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pyproject_pins() -> dict[str, str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    specs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        specs += extra
    pins = {}
    for spec in specs:
        name, _, version = spec.partition("==")
        assert version, f"pyproject.toml: {spec!r} is not pinned with =="
        pins[norm(name)] = version
    return pins


def env_pins(path: Path) -> dict[str, str]:
    env = yaml.safe_load(path.read_text())
    pins = {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            for spec in dep.get("pip", []):
                name, _, version = spec.partition("==")
                pins[norm(name)] = version
        else:
            name, _, rest = dep.partition("=")
            if name in ("python", "pip") or name in CONDA_ONLY:
                continue
            pins[norm(CONDA_NAMES.get(name, name))] = rest.split("=")[0]
    return pins


def test_there_are_environments():
    assert {p.stem for p in ENVS} >= {"data", "torch"}


SERVING = [p for p in ENVS if p.stem.startswith("serving")]


@pytest.mark.parametrize("path", [p for p in ENVS if p not in SERVING], ids=lambda p: p.name)
def test_env_pins_agree_with_pyproject(path):
    pins = pyproject_pins()
    for name, version in env_pins(path).items():
        assert version, f"{path.name}: {name} is not pinned"
        assert name in pins, f"{path.name}: {name} is not a dependency in pyproject.toml"
        assert pins[name] == version, (
            f"{path.name}: {name}=={version}, pyproject.toml says {pins[name]}"
        )


def test_every_rule_uses_a_pinned_env():
    used, plain = set(), set()
    for smk in (REPO / "rules").rglob("*.smk"):
        text = smk.read_text()
        for env in re.findall(r'conda:\s*\n\s*"(?:\.\./)+(envs/[^"]+)"', text):
            assert (REPO / env).exists(), f"{smk.name} uses {env}, which does not exist"
            plain.add(Path(env).stem)
        for name in re.findall(r'conda:\s*\n\s*conda_env\("([^"]+)"\)', text):
            for version in cuda.VARIANTS:
                env = cuda.env_file(name, version)
                assert (REPO / env).exists(), f"{smk.name}: conda_env({name!r}) -> {env}, absent"
            used.add(name)
    # a GPU environment named as a plain file would ignore the cuda setting
    assert not plain & set(cuda.GPU_ENVS), (
        f"GPU environments without conda_env(): {plain & set(cuda.GPU_ENVS)}"
    )
    used |= plain
    assert {"torch", "colbert", "data"} <= used


@pytest.mark.parametrize("name", cuda.GPU_ENVS)
def test_every_gpu_environment_has_a_cuda_12_and_a_cuda_13_file(name):
    """Each file's CUDA libraries are of its major version: pip's CUDA runtime and cuBLAS wheels
    (every nvidia-* wheel a -cu12 one in a CUDA-12 file) and conda-forge's cuda-version."""
    for version in cuda.VARIANTS:
        path = REPO / cuda.env_file(name, version)
        major = version.split(".")[0]
        pins = env_pins(path)
        nvidia = {k: v for k, v in pins.items() if k.startswith("nvidia-")}
        text = path.read_text()
        if name == "torch":
            assert f"  - cuda-version={major}  " in text, path.name
            continue
        assert nvidia, f"{path.name}: no CUDA libraries pinned"
        if major == "12":
            assert all(k.endswith("-cu12") for k in nvidia), (path.name, nvidia)
        for library in ("nvidia-cuda-runtime", "nvidia-cublas"):
            (version_pinned,) = [v for k, v in nvidia.items() if k in (library, f"{library}-cu12")]
            assert version_pinned.split(".")[0] == major, f"{path.name}: {library} {version_pinned}"


def test_the_torch_variants_differ_only_in_their_cuda_version():
    def packages(path):
        return [
            line.split("#")[0].strip()
            for line in path.read_text().splitlines()
            if line.strip().startswith("- ") and "cuda-version" not in line
        ]

    assert packages(REPO / "envs/torch.yaml") == packages(REPO / "envs/torch-cuda12.yaml")


@pytest.mark.parametrize(
    ("env", "fixture"),
    [
        ("serving.yaml", "vllm-0.33.0-interface.json"),
        ("serving-cuda12.yaml", "vllm-0.11.0-interface.json"),
    ],
)
def test_serving_envs_are_full_pins_of_their_vllm(env, fixture):
    """The vLLM environments pin every package pip resolves for their vLLM (tools/serving_env.py),
    with the torch its wheel requires (tests/fixtures, read from the wheel)."""
    import json

    interface = json.loads((REPO / "tests/fixtures" / fixture).read_text())
    pins = env_pins(REPO / "envs" / env)
    assert all(pins.values()) and len(pins) > 100  # the whole resolution, not vllm alone
    assert pins["vllm"] == interface["wheel"]["version"]
    (torch,) = interface["wheel"]["requires_torch"]
    assert pins["torch"] == torch.partition("==")[2]
    for imported in (
        "transformers",
        "tokenizers",
        "fastapi",
        "uvicorn",
        "pydantic",
        "openai",
        "triton",
    ):
        assert imported in pins, f"{env}: {imported} (imported by the server) is not pinned"
    cuda = interface["wheel"]["links_cudart"][0].rsplit(".", 1)[1]
    assert f"CUDA {cuda}" in (REPO / "envs" / env).read_text()


def test_pyproject_vllm_extra_is_the_serving_env():
    assert pyproject_pins()["vllm"] == env_pins(REPO / "envs/serving.yaml")["vllm"]


@pytest.mark.parametrize("name", sorted(OWN_PINS))
def test_own_environments_are_fully_pinned(name):
    """Every package exact, nothing twice, and the versions that force the separate env."""
    env = yaml.safe_load((REPO / "envs" / name).read_text())
    specs = [spec for dep in env["dependencies"] if isinstance(dep, dict) for spec in dep["pip"]]
    names = [norm(spec.partition("==")[0]) for spec in specs]
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[A-Za-z0-9_.+!-]+", spec) for spec in specs), specs
    assert len(set(names)) == len(names)
    pins = env_pins(REPO / "envs" / name)
    for package, pinned in OWN_PINS[name].items():
        assert pins.get(package) == pinned, (
            f"{name}: {package}=={pins.get(package)}, expected {pinned}"
        )
    assert "python=3.11" in env["dependencies"]
