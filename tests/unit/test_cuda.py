"""One setting for the GPU environments' CUDA (isqaflow.cuda): files, the conda override, the check."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from isqaflow import cuda

REPO = Path(__file__).resolve().parents[2]


def test_each_setting_picks_its_files():
    assert cuda.env_file("torch", "13.0") == "envs/torch.yaml"
    assert cuda.env_file("torch", "12.8") == "envs/torch-cuda12.yaml"
    assert cuda.env_file("colbert", "12.8") == "envs/colbert-cuda12.yaml"
    assert cuda.env_file("serving", "12.8") == "envs/serving-cuda12.yaml"
    assert cuda.env_file("data", "12.8") == "envs/data.yaml"  # no CUDA in it: one file
    for name in cuda.GPU_ENVS:
        for version in cuda.VARIANTS:
            assert (REPO / cuda.env_file(name, version)).is_file()


def test_an_unknown_version_is_an_error_naming_the_choices():
    with pytest.raises(ValueError, match=r"cuda: '11.8' is none of 13.0, 12.8"):
        cuda.env_file("torch", "11.8")


def test_the_setting_from_a_file_or_the_command_line():
    assert cuda.setting({}) == cuda.DEFAULT == "13.0"
    assert cuda.setting({"cuda": "12.8"}) == "12.8"
    assert cuda.setting({"cuda": 12.8}) == "12.8"  # --config cuda=12.8
    assert cuda.setting({"cuda": 13}) == "13.0"
    assert cuda.conda_override("12.8") == "12.8"


def test_the_override_must_name_the_same_major_version():
    assert cuda.override_problems({"cuda": "12.8"}, {"CONDA_OVERRIDE_CUDA": "12.4"}) == []
    assert cuda.override_problems({"cuda": "12.8"}, {}) == []
    ((path, message),) = cuda.override_problems({"cuda": "13.0"}, {"CONDA_OVERRIDE_CUDA": "12.4"})
    assert path == "cuda"
    assert "CONDA_OVERRIDE_CUDA=12.4" in message and "CUDA-13 files" in message


def test_the_schema_offers_the_variants_and_the_default():
    schema = yaml.safe_load((REPO / "config/schema.yaml").read_text())["properties"]["cuda"]
    assert {str(v) for v in schema["enum"]} == set(cuda.VARIANTS)
    assert schema["default"] == cuda.DEFAULT
    assert yaml.safe_load((REPO / "config/paper.yaml").read_text())["cuda"] in cuda.VARIANTS


def test_a_wrong_version_names_each_choice_once():
    """The schema accepts "12.8" and 12.8 alike; the error lists each once."""
    from isqaflow.configcheck.schema import load_schema, schema_problems

    schema = load_schema(REPO / "config/schema.yaml")
    config = yaml.safe_load((REPO / "config/config.yaml").read_text()) | {"cuda": "12.4"}
    messages = [p.message for p in schema_problems(config, schema) if p.path == "cuda"]
    assert messages == ["'12.4' is not a valid value (did you mean '12.8'?); one of: 13.0, 12.8"]
