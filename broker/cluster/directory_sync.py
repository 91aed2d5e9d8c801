"""A broker's side of the log directories' story (coordinator/cluster/directories.py):
which of its replicas lie elsewhere than the controller has them (to tell it, with
AssignReplicasToDirs), and which of its directories failed (its heartbeats say)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from odradek.broker.dataplane.topics import TopicRegistry
    from odradek.coordinator.cluster.shard import ClusterShard

ASSIGN_REPLICAS_TO_DIRS = 73
MAX_ASSIGNMENTS = 1000  # in one request; the rest in the next


def offline_directories(topics: TopicRegistry) -> list[uuid.UUID]:
    return [d.directory_id for d in topics.log_dirs if not d.online]


def unreported(
    view: ClusterShard, topics: TopicRegistry, node_id: int
) -> list[tuple[uuid.UUID, uuid.UUID, int]]:
    """(directory id, topic id, partition) of each replica here that lies in an online
    directory other than the one the controller's metadata names."""
    found = []
    for topic in topics:
        state = view.topics.get(topic.name)
        if state is None:
            continue
        for partition in topic.partitions:
            value = state.partitions.get(partition.index)
            log_dir = partition.log_dir
            if value is None or log_dir is None or not log_dir.online or partition.offline:
                continue
            if node_id not in value.replicas:
                continue
            if value.directory_of(node_id) != log_dir.directory_id:
                found.append((log_dir.directory_id, state.topic_id, partition.index))
            if len(found) >= MAX_ASSIGNMENTS:
                return found
    return found


def assignment_request(
    node_id: int, broker_epoch: int, found: list[tuple[uuid.UUID, uuid.UUID, int]]
) -> dict[str, Any]:
    directories: dict[uuid.UUID, dict[uuid.UUID, list[int]]] = {}
    for directory, topic_id, index in found:
        directories.setdefault(directory, {}).setdefault(topic_id, []).append(index)
    return {
        "broker_id": node_id,
        "broker_epoch": broker_epoch,
        "directories": [
            {
                "id_": directory,
                "topics": [
                    {"topic_id": topic_id, "partitions": [{"partition_index": i} for i in indexes]}
                    for topic_id, indexes in by_topic.items()
                ],
            }
            for directory, by_topic in directories.items()
        ],
    }
