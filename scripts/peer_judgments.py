"""The peers' released judgments of one config entry as judged records (rule peer_judgments)."""

from isqaflow.data.peers.records import PeerEntry, convert_peer_judgments
from isqaflow.runtime import job, log

with job(snakemake):
    for line in convert_peer_judgments(
        PeerEntry.from_rule(snakemake.params, snakemake.wildcards),
        snakemake.output.judged,
    ):
        log.info(line)
