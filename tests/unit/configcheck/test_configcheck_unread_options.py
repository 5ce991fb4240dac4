"""An option no stage reads is refused, naming the option and why (issue 39 item 4): ignored,
it would still be a param of the judge's jobs, and editing it would rerun them."""

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


def _drfr_judge(config):
    return config["drfr"]["judges"][next(iter(config["drfr"]["judges"]))]


CASES = [
    (
        lambda c: c["arena"]["judges"]["local-raw"].update(tie_band=0.05),
        "arena.judges.local-raw.tie_band: read by the calibrated rule only; this judge's rule "
        "is 'raw'",
    ),
    (
        lambda c: _drfr_judge(c).update(tie_band=0.05),
        "tie_band: the arena's calibrated rule reads a tie band; a DRFR verdict is YES or NO",
    ),
]


@pytest.mark.parametrize(("change", "message"), CASES)
def test_an_option_no_stage_reads_is_refused_naming_it(change, message):
    problems = problems_of(change)
    assert any(message in p for p in problems), problems


def test_the_calibrated_arena_judge_keeps_its_tie_band():
    assert EMBEDDED["arena"]["judges"]["local"]["tie_band"] > 0
    assert problems_of(lambda c: None) == []
