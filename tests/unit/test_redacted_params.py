"""isqaflow.settings.redact_secrets / restore_secrets and isqaflow.runtime.restore_params: a key
in a model's entry reaches a job's params (which Snakemake prints and stores) only redacted,
and the job gets the value back from its config."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from snakemake.iocontainers import Namedlist

from isqaflow.runtime import restore_params
from isqaflow.settings import redact_secrets, redact_url, restore_secrets

AZURE = "https://example.openai.azure.com/openai/v1?api-version=2024-06-01&api-key=0123456789abcdef0123456789abcdef"
PROJ = "https://proxy.example/v1?api-key=sk-proj-AbCdEf0123456789xyz"
ENTRY = {
    "backend": "openai",
    "model": "gpt-4o",
    "base_url": PROJ,
    "headers": ["Bearer abcdef123456"],
}
CONFIG = {"models": {"gpt": ENTRY}}


def test_no_secret_survives_redaction_and_the_redacted_form_keeps_its_hash():
    redacted = redact_secrets(ENTRY)
    text = repr(redacted)
    assert "AbCdEf0123456789xyz" not in text and "abcdef123456" not in text
    assert redacted["model"] == "gpt-4o" and redacted["backend"] == "openai"
    assert redacted["base_url"].startswith("<redacted https://proxy.example/v1?api-key=*** sha256:")
    # another key is another hash: a changed key still changes the params
    other = redact_url(PROJ.replace("xyz", "xyw"))
    assert other != redacted["base_url"]


def test_every_query_value_of_a_url_is_a_secret_even_one_no_key_pattern_knows():
    shown = redact_url(AZURE)
    assert "0123456789abcdef" not in shown and "api-version=***" in shown
    assert redact_url("http://localhost:8000/v1") == "http://localhost:8000/v1"  # nothing to hide
    assert "hunter2" not in redact_url("https://user:hunter2@host/v1")


def test_the_job_gets_the_values_back_from_its_config():
    assert restore_secrets(redact_secrets(ENTRY), CONFIG) == ENTRY


def test_a_redacted_value_the_config_no_longer_holds_is_an_error_without_the_secret():
    with pytest.raises(ValueError, match="the config changed after the job was planned") as err:
        restore_secrets(redact_secrets(ENTRY), {"models": {}})
    assert "AbCdEf0123456789xyz" not in str(err.value)


def test_restore_params_puts_the_values_into_the_params_by_name_and_index():
    params = Namedlist(fromdict={"model": redact_secrets(ENTRY), "seed": 1})
    smk = SimpleNamespace(params=params, config=CONFIG)
    restore_params(smk)
    assert smk.params.model == ENTRY and smk.params[0] == ENTRY and smk.params.seed == 1
