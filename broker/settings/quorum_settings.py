"""The timings of the controller quorum's elections and replication: the part of
BrokerConfig (config.py) the controllers read, each declared once on its field."""

from __future__ import annotations

from dataclasses import dataclass

from odradek.broker.settings.setting import BOOLEAN, INT, LONG, at_least, setting


@dataclass
class QuorumSettings:
    """BrokerConfig's controller quorum settings (BrokerConfig is one of these)."""

    controller_quorum_fetch_timeout_ms: int = setting(
        "controller.quorum.fetch.timeout.ms",
        INT,
        2000,
        at_least(1),
        doc=(
            "How long, in milliseconds, a voting controller goes without a successful fetch "
            "from the leader before it calls an election; a leader that has not heard from a "
            "majority of the voters for one and a half times this resigns."
        ),
    )
    controller_quorum_election_timeout_ms: int = setting(
        "controller.quorum.election.timeout.ms",
        INT,
        1000,
        at_least(1),
        doc=(
            "How long, in milliseconds, an election may take before the candidate tries "
            "again with a new epoch; a controller with no leader to follow waits a random "
            "time between this and twice this before it becomes a candidate."
        ),
    )
    controller_quorum_election_backoff_max_ms: int = setting(
        "controller.quorum.election.backoff.max.ms",
        INT,
        1000,
        at_least(0),
        doc=(
            "The longest random pause, in milliseconds, before a candidate whose election "
            "failed starts the next one, so that two candidates do not keep splitting the vote."
        ),
    )
    controller_quorum_request_timeout_ms: int = setting(
        "controller.quorum.request.timeout.ms",
        INT,
        2000,
        at_least(1),
        doc=(
            "How long, in milliseconds, a controller waits for another controller's answer "
            "to a vote, a new epoch or a fetch."
        ),
    )
    metadata_log_max_record_bytes_between_snapshots: int = setting(
        "metadata.log.max.record.bytes.between.snapshots",
        LONG,
        20 * 1024 * 1024,
        at_least(1),
        doc=(
            "How many bytes of records the leading controller appends to the metadata log "
            "before it writes a new snapshot of the whole metadata beside the log."
        ),
    )
    metadata_log_max_snapshot_interval_ms: int = setting(
        "metadata.log.max.snapshot.interval.ms",
        LONG,
        3600000,
        at_least(0),
        doc=(
            "The longest time, in milliseconds, the leading controller goes with records "
            "appended since its last snapshot before it writes a new one; 0 leaves it to "
            "metadata.log.max.record.bytes.between.snapshots."
        ),
    )
    metadata_max_retention_bytes: int = setting(
        "metadata.max.retention.bytes",
        LONG,
        100 * 1024 * 1024,
        doc=(
            "How many bytes of the metadata log, snapshots beside, a controller keeps before "
            "it deletes the oldest log segments a snapshot holds; -1 keeps them whatever "
            "their size."
        ),
    )
    metadata_max_retention_ms: int = setting(
        "metadata.max.retention.ms",
        LONG,
        7 * 24 * 3600 * 1000,
        doc=(
            "How long, in milliseconds, a controller keeps the part of the metadata log its "
            "latest snapshot holds before it deletes it; -1 keeps it however old."
        ),
    )
    controller_socket_timeout_ms: int = setting(
        "controller.socket.timeout.ms",
        INT,
        30000,
        at_least(1),
        doc=(
            "How long, in milliseconds, a broker waits for the active controller to answer "
            "a request it passed on (a topic change, an ACL, a credential, ...) before it "
            "answers the client REQUEST_TIMED_OUT; the request is not sent again, as it "
            "may have been carried out."
        ),
    )
    controller_quorum_auto_join_enable: bool = setting(
        "controller.quorum.auto.join.enable",
        BOOLEAN,
        False,
        doc=(
            "Whether a controller of a dynamic quorum (controller.quorum.bootstrap.servers) "
            "that is not a voter adds itself as one once it has caught up with the leader, "
            "as kafka-metadata-quorum add-controller would add it."
        ),
    )
