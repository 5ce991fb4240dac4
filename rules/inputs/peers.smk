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


def peer_leaderboard_tables():
    """Table name -> the peers' CSV of it: the tables the leaderboard reads (isqaflow.suites:
    board_tables) of each suite some entry's records feed."""
    return {
        name: f"{PEER_TABLES}/{name}.csv"
        for entry in SUITES
        if peer_judged_files(entry.name)
        for name in entry.board_tables
    }


def peer_targets():
    """The peers' tables, figures and leaderboard (target peers)."""
    targets = list(PEER_LEADERBOARD)
    if peer_judged_files("arena"):
        targets += [f"{PEER_TABLES}/arena_{t}.csv" for t in ARENA_TABLES]
    if peer_judged_files("drfr"):
        targets += [f"{PEER_TABLES}/drfr_{t}.csv" for t in DRFR_TABLES]
    return targets
