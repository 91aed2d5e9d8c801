"""Replication throttles, as Kafka's ReplicationQuotaManager keeps them.

- Which replicas are throttled is a topic's business: `leader.replication.throttled.replicas`
  lists the partition:broker pairs whose leader (that broker) holds back what it sends,
  `follower.replication.throttled.replicas` those whose follower (that broker) holds
  back what it asks for; `*` throttles every replica of the topic.
- How much is a broker's: `leader.replication.throttled.rate` and
  `follower.replication.throttled.rate`, bytes per second, set for one broker id at
  run time (IncrementalAlterConfigs on its BROKER resource; in a cluster the controller
  keeps them in the metadata log, a document every broker follows). Unset: unlimited.
- Only a replica out of the ISR is held back (one catching up after a move, or after
  it fell behind); while the rate measured over the throttled replicas' bytes is above
  the limit, the leader answers their fetches without records and the follower leaves
  them out of its fetches. The rate is measured as a client quota's is
  (`replication.quota.window.num` samples of `replication.quota.window.size.seconds`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from odradek.broker.dataplane.quotas import Rate

DOCUMENT = "replication-throttles"
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
RATES = (LEADER_RATE, FOLLOWER_RATE)
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"

# node id -> its rates, as set
Rates = dict[int, dict[str, str]]


def decode_document(raw: bytes | None) -> Rates:
    if not raw:
        return {}
    return {int(node): dict(rates) for node, rates in json.loads(raw).items()}


def encode_document(rates: Rates) -> bytes:
    kept = {str(node): dict(sorted(r.items())) for node, r in sorted(rates.items()) if r}
    return json.dumps(kept, sort_keys=True).encode()


def rate_problem(name: str, value: str) -> str | None:
    """Kafka's words for a rate it refuses (a LONG, at least 0)."""
    try:
        rate = int(value.strip())
    except ValueError:
        return f"Invalid value {value} for configuration {name}: Not a number of type LONG"
    if rate < 0:
        return f"Invalid value {rate} for configuration {name}: Value must be at least 0"
    return None


def throttled(configs: Mapping[str, str], which: str, partition: int, node: int) -> bool:
    """Does the topic's `which` list name this replica (the partition on `node`)?"""
    listed = [item.strip() for item in configs.get(which, "").split(",")]
    return listed == ["*"] or f"{partition}:{node}" in listed


class ReplicationQuota:
    """One direction's limit on one broker: the bytes of throttled replicas, measured."""

    def __init__(self, samples: int, window_s: int) -> None:
        self._rate = Rate(samples, window_s * 1000)
        self.bound: float | None = None  # bytes/s; None: unlimited

    def record(self, size: int, now_ms: int) -> None:
        if self.bound is not None:
            self._rate.record(size, now_ms)

    def exceeded(self, now_ms: int) -> bool:
        return self.bound is not None and self._rate.measure(now_ms) > self.bound


class Throttles:
    """This broker's two quotas, their limits following the cluster's document."""

    def __init__(self, node_id: int, samples: int, window_s: int) -> None:
        self.node_id = node_id
        self.leader = ReplicationQuota(samples, window_s)
        self.follower = ReplicationQuota(samples, window_s)

    def adopt(self, document: bytes | None) -> None:
        mine = decode_document(document).get(self.node_id, {})
        for quota, name in ((self.leader, LEADER_RATE), (self.follower, FOLLOWER_RATE)):
            value = mine.get(name)
            quota.bound = None if value is None else float(value)
