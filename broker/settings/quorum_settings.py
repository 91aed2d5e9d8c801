"""The timings of the controller quorum's elections and replication: the part of
BrokerConfig (config.py) the controllers read, each declared once on its field."""

from __future__ import annotations

from dataclasses import dataclass

from odradek.broker.settings.setting import INT, at_least, setting


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
