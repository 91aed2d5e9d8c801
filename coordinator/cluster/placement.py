"""Where the replicas of new partitions go, and the PartitionRecords that place them.

- Round robin over the live brokers, from where the last placement left off (as
  Kafka's controller does without racks); the first replica leads, all start in sync.
- Or as the client said (CreateTopics' and CreatePartitions' assignments): the live
  replicas in sync, the first of them leading.
- A replica on a broker with a single log directory is assigned that directory in the
  same record (directories.default); the others report theirs (AssignReplicasToDirs).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from odradek.coordinator.cluster import directories
from odradek.coordinator.cluster import records as rec
from odradek.coordinator.runtime import Record

if TYPE_CHECKING:
    from odradek.coordinator.cluster.shard import ClusterShard


def round_robin(
    shard: ClusterShard, topic_id: uuid.UUID, indexes: range, factor: int, live: list[int]
) -> list[Record]:
    start = shard.placement_start % len(live)
    shard.placement_start += 1
    placed = []
    for index in indexes:
        replicas = tuple(live[(start + index + i) % len(live)] for i in range(factor))
        placed.append(_placed(shard, topic_id, index, replicas, replicas))
    return placed


def as_assigned(
    shard: ClusterShard, topic_id: uuid.UUID, first: int, assignments: list[list[int]]
) -> list[Record]:
    live = set(shard.live_brokers())
    placed = []
    for index, replicas in enumerate(assignments, start=first):
        isr = tuple(node for node in replicas if node in live)
        placed.append(_placed(shard, topic_id, index, tuple(replicas), isr))
    return placed


def _placed(
    shard: ClusterShard,
    topic_id: uuid.UUID,
    index: int,
    replicas: tuple[int, ...],
    isr: tuple[int, ...],
) -> Record:
    value = rec.PartitionValue(
        replicas, isr, isr[0], 0, 0, directories=directories.default(shard, replicas)
    )
    return rec.partition(topic_id, index, value)
