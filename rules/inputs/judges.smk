"""Input functions of the judges' audit (rules/judges.smk)."""

from isqaflow.configcheck.families import judge_system_pairs  # noqa: E402

# the tables of isqaflow.arena.judging.judge_audit (TABLES; tests/unit/arena/test_judge_audit.py checks they agree)
JUDGE_TABLES = [
    "self_preference",
    "noise",
    "noise_win_rates",
    "canaries",
    "panel",
    "panel_loo",
    "panel_reliability",
]
JUDGE_AUDIT = [
    f"results/tables/judges_{table}.{ext}"
    for table in JUDGE_TABLES
    for ext in ("csv", "md")
]


def judge_audit_judged():
    """run -> arena judge -> its judged pairs file, for every run and judge."""
    return {
        f"{run['retriever']}-k{run['k']}": {
            j: f"results/arena/judgments/{run['retriever']}-k{run['k']}/{j}.jsonl"
            for j in config["arena"]["judges"]
        }
        for run in arena_runs()
    }


def judge_audit_pairs():
    """Every (suite, judge, system) with both model families and the self-family flag."""
    return [pair.as_dict() for pair in judge_system_pairs(config)]


def judge_audit_drfr():
    """dataset -> DRFR judge -> its judgments file."""
    out = {}
    for label, path in drfr_judged_files().items():
        dataset, judge = label.rsplit(".", 1)  # a judge name has no dot
        out.setdefault(dataset, {})[judge] = path
    return out


def judge_audit_entries():
    """suite -> judge -> the config keys that say what its flip rate is and whose calls it reads."""
    keys = ("mode", "generation", "repeats", "reuse_calls")
    return {
        suite: {
            name: {k: entry.get(k) for k in keys}
            for name, entry in config[suite]["judges"].items()
        }
        for suite in ("arena", "drfr")
    }
