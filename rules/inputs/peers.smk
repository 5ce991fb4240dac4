"""Input functions of the peers' rules (rules/peers.smk)."""

# What the peers' tables write (the same tables as the suites' own, under results/peers/; the
# rules write the paths out: snakemake --lint refuses composed ones).
PEER_TABLES = "results/peers/tables"
PEER_LEADERBOARD = [f"{PEER_TABLES}/leaderboard.{ext}" for ext in ("csv", "md", "tex")]


def peer_entry(name):
    return config["peers"][name]


def peer_judged_files(suite):
    """setting label -> judged records of every peers entry whose records ``suite`` reads
    (arena: ``peers.<name>``, the leaderboard's run "peers" and judge <name>)."""
    return {
        peer_setting_label(name): f"results/peers/judged/{name}.jsonl"
        for name, entry in config["peers"].items()
        if PEER_SUITES[entry["format"]] == suite
    }


def peer_table_files(suite, table):
    """The peers' <suite> table file (a path, as rule leaderboard's script reads it), or none
    when no entry feeds that suite."""
    return f"{PEER_TABLES}/{table}" if peer_judged_files(suite) else []


def peer_targets():
    """The peers' tables, figures and leaderboard (target peers)."""
    targets = list(PEER_LEADERBOARD)
    if peer_judged_files("arena"):
        targets += [f"{PEER_TABLES}/arena_{t}.csv" for t in ARENA_TABLES]
    if peer_judged_files("drfr"):
        targets += [f"{PEER_TABLES}/drfr_{t}.csv" for t in DRFR_TABLES]
    return targets
