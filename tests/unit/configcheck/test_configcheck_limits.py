"""isqaflow.configcheck.limits: numbers at their limits are named errors before any job."""

from __future__ import annotations

import copy

import pytest
import yaml
from workflow_utils import REPO

from isqaflow.configcheck import check_config

EMBEDDED = yaml.safe_load((REPO / "config/config.yaml").read_text())


def problems_of(change):
    config = copy.deepcopy(EMBEDDED)
    change(config)
    return [str(p) for p in check_config(config, REPO, {})]


def _judge(config):
    return config["arena"]["judges"]["local"]


CASES = [
    # a seed torch.manual_seed cannot unpack (issue 39: the LoRA job crashed after 62 jobs)
    (lambda c: c.update(seed=2**70), "seed: seed 1180591620717411303424 is outside [0, 2**32 - 1]"),
    (lambda c: c.update(seed=-1), "seed: seed -1 is outside [0, 2**32 - 1]"),
    # NaN passes the schema's exclusiveMinimum: 0 (NaN <= 0 is false)
    (
        lambda c: _judge(c).update(generation={"max_new_tokens": 8, "temperature": float("nan")}),
        "arena.judges.local.generation.temperature: nan is not a finite number",
    ),
    (
        lambda c: _judge(c).update(tie_band=float("inf")),
        "arena.judges.local.tie_band: inf is not a finite number",
    ),
    (
        lambda c: c["arena"].update(bootstrap_rounds=2**64),
        "arena.bootstrap_rounds: 18446744073709551616 does not fit a 64-bit integer",
    ),
    (
        lambda c: (
            c["models"]["smollm2"].update(gpu={"parameters": 1.35e8, "context": 2048}),
            _judge(c).update(generation={"max_new_tokens": 4096}),
        ),
        "arena.judges.local.generation.max_new_tokens: 4096 new tokens do not fit model "
        "'smollm2''s context of 2048 tokens (models.smollm2.gpu.context)",
    ),
]


@pytest.mark.parametrize(("change", "message"), CASES)
def test_a_number_past_its_limit_is_named(change, message):
    problems = problems_of(change)
    assert any(p.startswith(message) for p in problems), problems


def test_numbers_within_their_limits_pass():
    def change(c):
        c.update(seed=2**32 - 1)
        c["models"]["smollm2"].update(gpu={"parameters": 1.35e8, "context": 2048})
        _judge(c).update(generation={"max_new_tokens": 2048, "temperature": 0.7})

    assert problems_of(change) == []
