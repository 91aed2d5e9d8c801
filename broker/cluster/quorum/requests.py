"""The requests one controller sends another, as the quorum's APIs lay them out."""

from __future__ import annotations

from typing import Any

from odradek.broker.cluster.quorum.rules import LogEnd

METADATA_TOPIC = "__cluster_metadata"
FETCH_WAIT_MS = 500
FETCH_MAX_BYTES = 8 * 1024 * 1024


def _one_partition(fields: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0, **fields}]}]


def vote(
    cluster_id: str, voter: int, candidate: int, epoch: int, last: LogEnd, pre_vote: bool
) -> dict[str, Any]:
    """Vote v2: `candidate` asks `voter` for its vote in `epoch` (or, `pre_vote`,
    whether it would give it)."""
    fields = {
        "replica_epoch": epoch,
        "replica_id": candidate,
        "replica_directory_id": None,
        "voter_directory_id": None,
        "last_offset_epoch": last.epoch,
        "last_offset": last.offset,
        "pre_vote": pre_vote,
    }
    return {"cluster_id": cluster_id, "voter_id": voter, "topics": _one_partition(fields)}


def begin_epoch(cluster_id: str, voter: int, leader: int, epoch: int) -> dict[str, Any]:
    """BeginQuorumEpoch v1: `leader` tells `voter` that it leads `epoch`."""
    fields = {"voter_directory_id": None, "leader_id": leader, "leader_epoch": epoch}
    return {
        "cluster_id": cluster_id,
        "voter_id": voter,
        "topics": _one_partition(fields),
        "leader_endpoints": [],
    }


def end_epoch(cluster_id: str, leader: int, epoch: int, successors: list[int]) -> dict[str, Any]:
    """EndQuorumEpoch v1: `leader` steps down, naming whom it would have lead next."""
    fields = {
        "leader_id": leader,
        "leader_epoch": epoch,
        "preferred_candidates": [
            {"candidate_id": v, "candidate_directory_id": None} for v in successors
        ],
    }
    return {"cluster_id": cluster_id, "topics": _one_partition(fields), "leader_endpoints": []}


def fetch(cluster_id: str, replica: int, epoch: int, mine: LogEnd) -> dict[str, Any]:
    """Fetch v12 of the metadata log from where `mine` ends, by a voter in `epoch`."""
    partition = {
        "partition": 0,
        "current_leader_epoch": epoch,
        "fetch_offset": mine.offset,
        "last_fetched_epoch": mine.epoch if mine.offset > 0 else -1,
        "log_start_offset": -1,
        "partition_max_bytes": FETCH_MAX_BYTES,
    }
    return {
        "cluster_id": cluster_id,
        "replica_id": replica,
        "max_wait": FETCH_WAIT_MS,
        "min_bytes": 1,
        "max_bytes": FETCH_MAX_BYTES,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [{"topic": METADATA_TOPIC, "partitions": [partition]}],
    }


def describe_quorum() -> dict[str, Any]:
    """DescribeQuorum v2 of the metadata partition."""
    return {"topics": _one_partition({})}


def leads(answer: Any) -> bool:
    """Does a DescribeQuorum answer come from the quorum's leader?"""
    if answer.error_code != 0 or not answer.topics:
        return False
    partitions = answer.topics[0].partitions
    return bool(partitions) and partitions[0].error_code == 0
