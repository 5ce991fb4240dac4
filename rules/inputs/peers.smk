"""Input functions of the peers' rules (rules/peers.smk)."""

# What the peers' tables write (the same tables as the suites' own, under results/peers/; the
# rules write the paths out: snakemake --lint refuses composed ones).
PEER_TABLES = "results/peers/tables"
PEER_LEADERBOARD = [f"{PEER_TABLES}/leaderboard.{ext}" for ext in ("csv", "md", "tex")]


def peer_entry(name):
    return config["peers"][name]


def peer_judged_files(suite):
    """setting label -> judged records (peer_judgments' files) of every peers entry whose judged
    records ``suite``'s tables read; the arena's label ``peers.<name>`` is the leaderboard's
    run "peers" and judge <name>."""
    return {
        peer_setting_label(name): f"results/peers/judged/{name}.jsonl"
        for name, entry in config["peers"].items()
        if suite in PEER_JUDGED_BY[entry["format"]]
    }


def peer_released(suite):
    """The released files ``suite``'s tables read as they are, with what its table code needs of
    them (isqaflow.data.peers.records.released_files; Arena-Hard's own formats)."""
    return released_files(config["peers"], suite)


def peer_bootstrap_rounds(suite):
    """The bootstrap rounds of the peers' table of ``suite``: its own section's (config
    ``<suite>.bootstrap_rounds``, which config/peers.yaml sets to arena-hard v0.1's 100); a
    config without the section is an error naming the entries that need it."""
    if suite not in config:
        names = ", ".join(
            f"peers.{name}"
            for name, entry in config["peers"].items()
            if suite in PEER_READ_BY[entry["format"]]
        )
        raise ValueError(
            f"{names}: their table {suite}_* takes its bootstrap rounds from config "
            f"{suite}.bootstrap_rounds, and this config has no {suite} section"
        )
    return config[suite]["bootstrap_rounds"]


def peer_suites(shown=False):
    """The suites whose tables read some entry's records (``shown``: those whose leaderboard
    columns show them; isqaflow.data.peers.records.PEER_FORMATS)."""
    return {
        suite
        for entry in config["peers"].values()
        for suite in (
            [PEER_SUITES[entry["format"]]] if shown else PEER_READ_BY[entry["format"]]
        )
    }


def peer_leaderboard_tables():
    """Table name -> the peers' CSV of it: the tables the leaderboard reads (isqaflow.suites:
    board_tables) of each suite whose columns show some entry's records."""
    return {
        name: f"{PEER_TABLES}/{name}.csv"
        for entry in SUITES
        if entry.name in peer_suites(shown=True)
        for name in entry.board_tables
    }


def peer_targets():
    """The peers' tables (each suite's, of the suites some entry's records reach), figures and
    leaderboard (target peers)."""
    targets = list(PEER_LEADERBOARD)
    for entry in SUITES:
        if entry.name in peer_suites():
            targets += [f"{PEER_TABLES}/{table}.csv" for table in entry.table_names]
    return targets
