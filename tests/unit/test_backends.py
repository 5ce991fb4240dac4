"""The backend records (isqaflow.backends): one list with the schema's enum, and a third API
backend registered there is treated as an API model by every place that asks -- no GPUs, no
Hub fetch, counted in the spend plan and the budget, its key checked -- with no edit elsewhere.
(Before the records, those places compared the name with "openai", some by exclusion, so such
a backend was asked GPUs, looked up on the Hub, left out of the spend plan, the budget and
the key check, silently.)"""

from __future__ import annotations

import copy
import json

import pytest
import yaml
from workflow_utils import REPO

from isqaflow import backends, spend
from isqaflow.backends import BACKENDS, Backend, backend_of, needs_gpus
from isqaflow.configcheck import check_config
from isqaflow.models import capabilities
from isqaflow.models.api import budget
from isqaflow.models.planning import gpu_plan
from isqaflow.models.registry import build_model
from isqaflow.models.weights.hub import hub_models
from isqaflow.settings import api_key_variable

PAPER = yaml.safe_load((REPO / "config/paper.yaml").read_text())
FAKE = Backend(
    name="anthropic-like",
    local=False,
    gpus=False,
    hub_weights=False,
    key_env="ANTHROPIC_API_KEY",
    priced=True,
    servable=False,
    lists_models=False,
    capabilities="openai",
)
# what the entry holds looks like a Hub id (owner/name) on purpose: only the record keeps it off the Hub
ENTRY = {"backend": FAKE.name, "family": "claude", "model": "anthropic/claude-3-opus"}
ENTRY_PRICE = {"input_per_million": 15.0, "output_per_million": 75.0}


def test_the_schemas_backend_enum_is_the_registry():
    schema = yaml.safe_load((REPO / "config/schema.yaml").read_text())
    enum = schema["properties"]["models"]["additionalProperties"]["properties"]["backend"]["enum"]
    assert enum == list(BACKENDS)
    assert all(name == record.name for name, record in BACKENDS.items())


def test_every_backends_capability_column_exists():
    assert {record.capabilities for record in BACKENDS.values()} <= set(capabilities.BACKENDS)


def test_the_two_backends_needs():
    hf, openai = BACKENDS["hf"], BACKENDS["openai"]
    assert hf.local and hf.gpus and hf.hub_weights and hf.servable and not hf.api_key
    assert not hf.priced
    assert not (openai.local or openai.gpus or openai.hub_weights or openai.servable)
    assert openai.priced and openai.key_env == "OPENAI_API_KEY" and openai.lists_models
    assert backend_of({}) is hf  # an entry without backend: (tests' entries) is hf
    # a served hf model asks for GPUs; a job naming no model asks for the stage's
    assert needs_gpus([{"backend": "hf", "serve": {"command": "x"}}]) and needs_gpus([])
    assert not needs_gpus([{"backend": "openai"}, {"backend": "openai"}])
    assert needs_gpus([{"backend": "openai"}, {"backend": "hf"}])


def test_an_unknown_backend_names_the_config_field():
    with pytest.raises(ValueError, match=r"models\.judge\.backend: unknown backend 'antropic'"):
        backend_of({"backend": "antropic", "model": "x"}, "judge")
    with pytest.raises(ValueError, match=r"models\.judge\.backend.*expected one of hf, openai"):
        build_model({"backend": "antropic", "model": "x"}, name="judge")


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setitem(backends.BACKENDS, FAKE.name, FAKE)
    config = copy.deepcopy(PAPER)
    # InFoBench's judge (drfr.judges.gpt4) on the fake backend, priced, with its default key
    config["models"]["gpt4-0314"] = {**ENTRY, "price": ENTRY_PRICE}
    return config


def test_a_third_api_backend_is_asked_no_gpu(fake):
    entry = fake["models"]["gpt4-0314"]
    assert not needs_gpus([entry])  # rules/common.smk: gpus_for
    use = gpu_plan.ModelUse("judge", "gpt4-0314", entry, 1000, 100)
    assert gpu_plan.plan_job("drfr_judge infobench/gpt4", [use], fake).gpus == 0
    assert gpu_plan.plan_grid(fake)["drfr_judge infobench/gpt4"].gpus == 0


def test_a_third_api_backend_is_not_looked_up_on_the_hub(fake):
    found = hub_models(fake["models"])
    assert "gpt4-0314" not in found
    assert "llama2-7b-chat" in found  # the hf models still are


def test_a_third_api_backend_is_in_the_spend_plan_and_the_budget(fake, tmp_path):
    assert "gpt4-0314" in spend.api_models(fake)
    by_job = {row.job: row for row in spend.plan(fake, root="/nonexistent")}
    row = by_job["drfr_judge infobench/gpt4"]
    assert row.model == "gpt4-0314" and row.calls == 8 * 2250 + 2 * 450  # as the GPT-4 judge's
    assert row.dollars and row.dollars > 0
    env = json.loads(budget.environment(tmp_path / "ledger.jsonl", None, fake["models"]))
    assert env["prices"]["anthropic/claude-3-opus"] == ENTRY_PRICE


def test_a_third_api_backends_key_is_checked(fake):
    assert api_key_variable(fake["models"]["gpt4-0314"]) == "ANTHROPIC_API_KEY"
    problems = check_config(fake, REPO, {"OPENAI_API_KEY": "sk-test-never-printed"})
    assert [p.path for p in problems] == ["models.gpt4-0314.api_key_env"]
    assert "ANTHROPIC_API_KEY" in problems[0].message
    assert "drfr.judges.gpt4.model" in problems[0].message
    environ = {"OPENAI_API_KEY": "sk-a", "ANTHROPIC_API_KEY": "sk-b"}
    assert check_config(fake, REPO, environ) == []


def test_a_registered_backend_without_a_builder_is_refused_by_name(fake):
    with pytest.raises(ValueError, match=r"models\.judge\.backend: .*builds no model for it"):
        build_model(ENTRY, name="judge")
