"""Which log directory holds each replica, and what the controller does when one fails,
as Kafka's controller does with several log directories (KIP-858).

- A broker registers with the ids of its directories, tells the controller where each
  of its replicas lies (AssignReplicasToDirs), and names the directories that failed
  in its heartbeats (`offline_log_dirs`).
- An assignment is a PartitionChangeRecord with the partition's `directories`. A new
  replica on a broker with one directory is assigned it at once, in its PartitionRecord.
- A replica in a failed directory leaves the ISR (unless it is the last one) and, if
  it led, another in-sync replica on a live broker leads: the broker's other
  directories serve on, as before.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from odradek.coordinator.cluster import kafka_format as kf
from odradek.coordinator.cluster import records as rec
from odradek.coordinator.runtime import Record, Result
from odradek.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from odradek.coordinator.cluster.shard import ClusterShard


def default(shard: ClusterShard, replicas: Iterable[int]) -> tuple[uuid.UUID, ...]:
    """The directory of each new replica as far as the controller can tell, as Kafka's
    assigns them: the only one of a broker that registered one; unassigned otherwise."""
    return rec.assigned(
        tuple(
            known.value.default_directory() if (known := shard.brokers.get(r)) else kf.ZERO_UUID
            for r in replicas
        )
    )


def with_defaults(shard: ClusterShard, partition: rec.PartitionValue) -> rec.PartitionValue:
    """`partition` with its new replicas' directories assigned where `default` can."""
    known = partition.replica_directories()
    defaults = default(shard, partition.replicas) or known
    filled = tuple(d if d != kf.ZERO_UUID else new for d, new in zip(known, defaults, strict=True))
    return replace(partition, directories=rec.assigned(filled))


def assign(shard: ClusterShard, request: dict[str, Any]) -> Result[dict[str, Any]]:
    """request: broker_id, broker_epoch, directories [(directory id, topic id, partition)].
    The answer is AssignReplicasToDirs' (error per partition)."""
    node_id = request["broker_id"]
    known = shard.brokers.get(node_id)
    if known is None:
        return Result([], {"error_code": ErrorCode.broker_id_not_registered, "directories": []})
    if known.value.epoch != request["broker_epoch"]:
        return Result([], {"error_code": ErrorCode.stale_broker_epoch, "directories": []})
    records: list[Record] = []
    answers: dict[tuple[uuid.UUID, uuid.UUID], list[dict[str, Any]]] = {}
    seen: set[tuple[uuid.UUID, int]] = set()
    for directory, topic_id, index in request["directories"]:
        if (topic_id, index) in seen:  # a replica lies in one directory
            code = ErrorCode.invalid_request
        else:
            code = _assign_one(shard, node_id, directory, topic_id, index, records)
        seen.add((topic_id, index))
        answers.setdefault((directory, topic_id), []).append(
            {"partition_index": index, "error_code": code}
        )
    by_directory: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for (directory, topic_id), partitions in answers.items():
        by_directory.setdefault(directory, []).append(
            {"topic_id": topic_id, "partitions": partitions}
        )
    directories = [{"id_": d, "topics": topics} for d, topics in by_directory.items()]
    return Result(records, {"error_code": ErrorCode.none, "directories": directories})


def _assign_one(
    shard: ClusterShard,
    node_id: int,
    directory: uuid.UUID,
    topic_id: uuid.UUID,
    index: int,
    records: list[Record],
) -> ErrorCode:
    state = shard.topic_by_id(topic_id)
    if state is None:
        return ErrorCode.unknown_topic_id
    partition = state.partitions.get(index)
    if partition is None:
        return ErrorCode.unknown_topic_or_partition
    if node_id not in partition.replicas:
        return ErrorCode.not_leader_or_follower
    if partition.directory_of(node_id) == directory:
        return ErrorCode.none
    directories = list(partition.replica_directories())
    directories[partition.replicas.index(node_id)] = directory
    changed = replace(
        partition,
        partition_epoch=partition.partition_epoch + 1,
        directories=tuple(directories),
    )
    records.append(rec.partition_change(state.topic_id, index, partition, changed))
    return ErrorCode.none


def offline_at(shard: ClusterShard, node_id: int, partition: rec.PartitionValue) -> bool:
    """Does `node_id`'s replica of `partition` lie in a directory it reported failed?
    (Such a replica cannot rejoin the ISR.)"""
    offline = shard.offline_dirs.get(node_id)
    if not offline or node_id not in partition.replicas:
        return False
    return partition.directory_of(node_id) in offline


def take_offline(shard: ClusterShard, node_id: int, offline: set[uuid.UUID]) -> list[Record]:
    """Partition changes for the replicas of `node_id` in failed directories: out of
    the ISR, and a new leader where one led (as for a broker that stops serving)."""
    if not offline:
        return []

    def in_failed_directory(p: rec.PartitionValue) -> bool:
        return p.directory_of(node_id) in offline

    return shard.leave(node_id, only=in_failed_directory)
