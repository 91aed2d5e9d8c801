"""Reassignments on the controller's metadata state machine: the three steps of a move
(the union of replicas, the new ones joining the ISR, the completion), a cancel, the
refusals in Kafka's words, and a replay of the log that ends in the same state."""

from __future__ import annotations

import uuid
from typing import Any

from test_cluster_shard import Harness, alter, view

from odradek.coordinator.cluster import kafka_format as kf
from odradek.coordinator.cluster import reassignment
from odradek.coordinator.cluster import records as rec
from odradek.protocol.errors import ErrorCode


def move(h: Harness, replicas: list[int] | None, index: int = 0, **request: Any) -> Any:
    return h.apply(reassignment.alter(h.shard, "t", index, {"replicas": replicas, **request}))


def partition(h: Harness) -> rec.PartitionValue:
    found = h.shard.partition("t", 0)
    assert found is not None
    return found


def started(nodes: int = 4) -> Harness:
    h = Harness()
    h.start(*range(1, nodes + 1))
    h.apply(h.shard.create_topic({"name": "t", "assignments": {0: [1, 2]}}))
    return h


def test_a_move_adds_the_new_replicas_then_completes_once_they_are_in_sync() -> None:
    h = started()
    assert move(h, [3, 4])["error_code"] == ErrorCode.none
    moving = partition(h)
    assert (moving.replicas, moving.adding, moving.removing) == ((3, 4, 1, 2), (3, 4), (1, 2))
    assert (moving.isr, moving.leader, moving.leader_epoch) == ((1, 2), 1, 0)
    assert reassignment.ongoing(h.shard.topics, None) == [("t", [(0, moving)])]
    alter(h, 1, (1, 2, 3))
    assert partition(h).reassigning  # 4 still catching up
    # the leader's ISR change that brings in the last target replica completes the move,
    # and the leader, leaving, hands over: the answer says a new leader was elected
    assert alter(h, 1, (1, 2, 3, 4))["error_code"] == ErrorCode.new_leader_elected
    done = partition(h)
    assert (done.replicas, done.isr, done.adding, done.removing) == ((3, 4), (3, 4), (), ())
    assert (done.leader, done.leader_epoch) == (3, 1)
    assert reassignment.ongoing(h.shard.topics, None) == []
    assert view(h.replayed()) == view(h.shard)


def test_a_move_whose_target_is_in_sync_completes_at_once() -> None:
    h = started()
    assert move(h, [2, 1])["error_code"] == ErrorCode.none  # a reorder
    assert (partition(h).replicas, partition(h).leader) == ((2, 1), 1)
    assert move(h, [2])["error_code"] == ErrorCode.none  # a smaller replica set
    shrunk = partition(h)
    assert (shrunk.replicas, shrunk.isr, shrunk.leader, shrunk.leader_epoch) == ((2,), (2,), 2, 1)
    written = len(h.log)
    assert move(h, [2])["error_code"] == ErrorCode.none
    assert len(h.log) == written  # already so: nothing written


def test_a_cancel_reverts_to_the_original_replicas() -> None:
    h = started()
    move(h, [1, 3])
    alter(h, 1, (1, 2))  # nothing new in sync yet
    assert move(h, None)["error_code"] == ErrorCode.none
    back = partition(h)
    assert (back.replicas, back.isr, back.adding, back.removing) == ((1, 2), (1, 2), (), ())
    refused = move(h, None)
    assert refused == {
        "error_code": ErrorCode.no_reassignment_in_progress,
        "error_message": "No partition reassignment is in progress.",
    }
    assert view(h.replayed()) == view(h.shard)


def test_refusals_in_kafkas_words() -> None:
    h = started()
    cases = [
        (
            [1, 9],
            "The manual partition assignment includes broker 9, but no such broker is registered.",
        ),
        ([1, 1], "The manual partition assignment includes the broker 1 more than once."),
        ([], "The manual partition assignment includes an empty replica list."),
    ]
    for replicas, message in cases:
        assert move(h, replicas) == {
            "error_code": ErrorCode.invalid_replica_assignment,
            "error_message": message,
        }
    assert move(h, [1, 2, 3], allow_replication_factor_change=False) == {
        "error_code": ErrorCode.invalid_replication_factor,
        "error_message": "The replication factor is changed from 2 to 3",
    }
    assert move(h, [3, 4], allow_replication_factor_change=False)["error_code"] == 0
    # while it moves, the factor is the original one's
    assert move(h, [4, 1], allow_replication_factor_change=False)["error_code"] == 0
    assert move(h, [1], index=3) == {
        "error_code": ErrorCode.unknown_topic_or_partition,
        "error_message": "Unable to find partition t:3.",
    }
    gone = reassignment.alter(h.shard, "nope", 0, {"replicas": [1]}).response
    assert gone == {
        "error_code": ErrorCode.unknown_topic_or_partition,
        "error_message": "Unable to find a topic named nope.",
    }


def test_a_reassignment_is_written_as_kafkas_partition_change_record() -> None:
    """The records a reassignment writes name only what changed, and replay to the
    same partition (the controller's and every broker's view)."""
    topic_id = uuid.uuid4()
    plain = rec.PartitionValue((1, 2), (1, 2), 1, 0, 0)
    moving = rec.PartitionValue((3, 1, 2), (1, 2), 1, 0, 1, (3,), (2,))
    _, value = rec.partition_change(topic_id, 0, plain, moving)
    assert value is not None
    record = kf.decode(value)
    assert record.api_key == kf.PARTITION_CHANGE.api_key
    assert record["isr"] is None and record["leader"] == rec.NO_LEADER_CHANGE
    assert record["replicas"] == (3, 1, 2) and record["adding_replicas"] == (3,)
    assert rec.changed_partition(plain, record) == moving
    done = rec.PartitionValue((3, 1), (1, 3), 3, 1, 2)
    _, value = rec.partition_change(topic_id, 0, moving, done)
    assert value is not None
    record = kf.decode(value)
    assert record["leader"] == 3 and record["adding_replicas"] == ()
    assert rec.changed_partition(moving, record) == done
