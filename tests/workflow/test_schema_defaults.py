"""Defaults live in the schema: validation fills them in, the rules read the filled config (no
``.get(key, default)`` fallback for a key the schema defaults), and the settings dataclasses the
stages build from the config agree with the schema's defaults."""

from __future__ import annotations

import copy
import dataclasses
import re
from pathlib import Path

import pytest
import yaml
from snakemake.utils import validate

from isqaflow.finetune.lora import LoraSettings
from isqaflow.isqa.refine import RefineSettings
from isqaflow.metrics.qa_metrics import QAMetricSettings
from isqaflow.metrics.questeval import QuestEvalSettings
from isqaflow.models.base import GenerationParams

REPO = Path(__file__).resolve().parents[2]
SCHEMA_FILE = REPO / "config/schema.yaml"
SCHEMA = yaml.safe_load(SCHEMA_FILE.read_text())
EMBEDDED = yaml.safe_load((REPO / "config/config.yaml").read_text())


def defaulted_names(schema) -> set[str]:
    """Every property name the schema gives a default, anywhere."""
    names = set()
    if isinstance(schema, dict):
        for name, sub in (schema.get("properties") or {}).items():
            if isinstance(sub, dict) and "default" in sub:
                names.add(name)
        for value in schema.values():
            names |= defaulted_names(value)
    elif isinstance(schema, list):
        for value in schema:
            names |= defaulted_names(value)
    return names


def test_no_rule_falls_back_on_a_key_the_schema_defaults():
    defaulted = defaulted_names(SCHEMA)
    assert {"generic_steps", "initial_prompt", "rule", "prompts", "style", "lenient"} <= defaulted
    fallbacks = []
    for path in sorted([REPO / "Snakefile", *(REPO / "rules").rglob("*.smk")]):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for key in re.findall(r"""\.get\(["']([A-Za-z_]+)["']\s*,""", line):
                if key in defaulted:
                    fallbacks.append(f"{path.relative_to(REPO)}:{number}: {key}")
    assert fallbacks == []


def test_validation_fills_the_defaults_the_rules_read():
    config = copy.deepcopy(EMBEDDED)
    isqa = config["isqa"]
    isqa.pop("generic_steps", None)
    isqa["refine"].pop("initial_prompt")
    isqa["refine"]["dedup"].pop("scope", None)
    for entry in isqa["feedback_models"].values():
        entry.pop("style", None)
    judges = [*config["drfr"]["judges"].values(), *config["arena"]["judges"].values()]
    for judge in judges:
        judge.pop("rule", None)
        judge.pop("prompts", None)
    converted = [m["convert"] for m in config["models"].values() if "convert" in m]
    for convert in converted:
        convert.pop("dtype", None)
    for entry in config["datasets"]["qa_train"].values():
        entry.pop("lenient", None)
    config["metrics"].pop("zero_papers", None)
    config["validity"]["metrics"].pop("others", None)
    config["human_eval"].pop("filled", None)
    validate(config, str(SCHEMA_FILE))
    assert (
        isqa["generic_steps"],
        isqa["refine"]["initial_prompt"],
        isqa["refine"]["dedup"]["scope"],
    ) == (
        1,
        "baseline_2",
        "within",
    )
    assert {e["style"] for e in isqa["feedback_models"].values()} == {"isqa"}
    assert {(j["rule"], j["prompts"]) for j in judges} == {("raw", "ours")}
    assert [c["dtype"] for c in converted] == ["bfloat16"]
    assert {e["lenient"] for e in config["datasets"]["qa_train"].values()} == {False}
    assert (config["metrics"]["zero_papers"], config["validity"]["metrics"]["others"]) == (
        "keep",
        1,
    )
    assert config["human_eval"]["filled"] == {}


def props(*path: str) -> dict:
    node = SCHEMA
    for key in path:
        node = node[key]
    return node["properties"]


FINETUNE = SCHEMA["properties"]["finetune"]["additionalProperties"]["properties"]["settings"]
# each settings dataclass, the schema object its fields come from, and the fields named
# otherwise there (dataclass field -> schema property)
SETTINGS = [
    (RefineSettings, props("properties", "isqa", "properties", "refine"), {}),
    (
        RefineSettings,
        props("properties", "isqa", "properties", "refine", "properties", "dedup"),
        {
            "dedup_method": "method",
            "dedup_threshold": "threshold",
            "dedup_model": "model",
            "dedup_scope": "scope",
        },
    ),
    (
        RefineSettings,
        props("properties", "isqa", "properties", "feedback_models", "additionalProperties"),
        {"feedback_style": "style"},
    ),
    (QAMetricSettings, props("properties", "metrics", "properties", "qags"), {}),
    (QuestEvalSettings, props("properties", "metrics", "properties", "questeval"), {}),
    (LoraSettings, FINETUNE["properties"], {}),
    (GenerationParams, props("$defs", "generation"), {}),
]


def field_default(field: dataclasses.Field):
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return dataclasses.MISSING


@pytest.mark.parametrize(("cls", "properties", "renamed"), SETTINGS)
def test_settings_dataclasses_agree_with_the_schema(cls, properties, renamed):
    """Where the schema gives a default, the dataclass has the same one; and the dataclass and
    the schema share at least one field (the pairing is not vacuous)."""
    shared = []
    for field in dataclasses.fields(cls):
        name = renamed.get(field.name, field.name)
        if name not in properties or (renamed and field.name not in renamed):
            continue
        shared.append(name)
        schema = properties[name]
        if "default" in schema:
            default = field_default(field)
            expected = tuple(schema["default"]) if isinstance(default, tuple) else schema["default"]
            assert default == expected, (
                f"{cls.__name__}.{field.name}: {default!r} vs the schema's {expected!r}"
            )
    assert shared, f"{cls.__name__} shares no field with the schema object"
