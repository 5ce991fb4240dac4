"""isqaflow.configcheck.secrets: a key planted in any string field of the config is refused
at that field, and no message of the check shows it (the Snakemake side, with its own job
listing and metadata: tests/workflow/test_exact_reruns.py)."""

from __future__ import annotations

import copy

import pytest
import yaml
from workflow_utils import REPO

from isqaflow.configcheck import check_config, format_problems

SECRET = "sk-proj-PLANTED0123456789abcdef"
CONFIGS = {
    name: yaml.safe_load((REPO / f"config/{name}.yaml").read_text()) for name in ("config", "paper")
}


def string_fields(node, path=()):
    """(path of keys and indices, the config path as the check writes it) of every string."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from string_fields(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from string_fields(value, (*path, i))
    elif isinstance(node, str):
        written = ""
        for part in path:
            written += f"[{part}]" if isinstance(part, int) else (f".{part}" if written else part)
        yield path, written


def plant(config, path, value):
    config = copy.deepcopy(config)
    node = config
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return config


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_a_key_in_every_string_field_is_refused_at_each_and_never_shown(name):
    """The key planted in every string field at once (one check: milliseconds)."""
    fields = list(string_fields(CONFIGS[name]))
    assert len(fields) > 100
    config = CONFIGS[name]
    for path, _ in fields:
        config = plant(config, path, f"prefix {SECRET} suffix")
    problems = check_config(config, REPO, {"OPENAI_API_KEY": "x"})
    named = {p.path for p in problems}
    assert [written for _, written in fields if written not in named] == []
    assert "PLANTED0123456789" not in format_problems(problems)


def test_a_key_in_a_base_url_is_allowed_and_passed_redacted():
    config = copy.deepcopy(CONFIGS["config"])
    config["models"]["remote"] = {
        "backend": "openai",
        "model": "gpt-4o-mini",
        "base_url": f"https://proxy.example/v1?api-key={SECRET}",
    }
    assert [str(p) for p in check_config(config, REPO, {})] == []
