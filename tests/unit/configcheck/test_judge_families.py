"""Self-preference: a judge that judges systems of its own model family is flagged, and warned of."""

from __future__ import annotations

import copy

from test_configcheck import EMBEDDED, PAPER, REPO

from isqaflow.configcheck import exit_on_problems
from isqaflow.configcheck.families import judge_system_pairs, self_judging_warnings


def _flags(config, suite):
    return {
        (p.judge, p.system): p.self_family for p in judge_system_pairs(config) if p.suite == suite
    }


def test_every_model_of_the_papers_has_a_family():
    missing = [name for name, entry in PAPER["models"].items() if not entry.get("family")]
    assert missing == []
    assert (
        PAPER["models"]["gpt4-0125"]["family"] == PAPER["models"]["gpt35"]["family"] == "openai-gpt"
    )
    assert (
        PAPER["models"]["vicuna-13b"]["family"]
        == PAPER["models"]["llama2-70b-chat"]["family"]
        == "llama"
    )
    assert PAPER["models"]["mixtral-8x7b"]["family"] == "mistral"
    assert EMBEDDED["models"]["smollm2"]["family"] == "smollm"


def test_the_papers_gpt4_judges_flag_the_gpt_systems_only():
    arena = _flags(PAPER, "arena")
    flagged = sorted(system for (judge, system), flag in arena.items() if flag)
    # the arena's GPT-4 snapshot judges itself, GPT-4o and GPT-4-Turbo (one family), no open model
    assert flagged == ["gpt4-0125", "gpt4-turbo", "gpt4o"]
    drfr = _flags(PAPER, "drfr")
    assert sorted(s for (_, s), flag in drfr.items() if flag) == ["gpt35-1106", "gpt4-1106"]
    assert drfr[("gpt4", "llama2-70b-chat")] is False
    # ISQA's summarizers (llama, vicuna, flan-t5) are judged too, by a GPT judge: not its family
    assert arena[("gpt4", "summaries:vicuna-7b")] is False


def test_same_model_is_flagged_without_any_family_and_unknown_is_not():
    config = copy.deepcopy(EMBEDDED)
    del config["models"]["smollm2"]["family"]
    arena = _flags(config, "arena")
    assert arena[("local", "smollm2")] is True  # the judge's own model
    assert arena[("local", "handwritten")] is False  # a file without a family: unknown, not flagged
    config["arena"]["answerers"]["handwritten"]["family"] = "smollm"
    config["models"]["smollm2"]["family"] = "smollm"
    assert _flags(config, "arena")[("local", "handwritten")] is True
    row = next(
        p for p in judge_system_pairs(config) if p.system == "handwritten" and p.suite == "arena"
    )
    assert row.as_dict()["system_model"] is None and row.system_family == "smollm"


def test_the_config_check_warns_naming_judge_and_systems_without_failing(capsys):
    warnings = self_judging_warnings(PAPER)
    arena = [w for w in warnings if w.startswith("arena.judges.gpt4 ")]
    assert len(arena) == 1
    assert "family openai-gpt" in arena[0] and "gpt4-turbo, gpt4o, gpt4-0125" in arena[0]
    exit_on_problems(EMBEDDED, workdir=REPO)  # returns: a warning, not a failure
    err = capsys.readouterr().err
    assert (
        "isqaflow: warning: arena.judges.local (family smollm) judges systems of its own family: "
        "smollm2, smollm2-nocot" in err
    )
    assert "drfr.judges.local (family smollm)" in err
    exit_on_problems(EMBEDDED, workdir=REPO, warn=False)  # a job's parse of the workflow: silent
    assert "warning" not in capsys.readouterr().err
