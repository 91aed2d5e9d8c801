"""Log directories in the controller's metadata: where each replica lies, written as
PartitionChangeRecords, and a broker's failed directory taking its replicas there out
of their ISRs (and their leadership elsewhere), never to rejoin while it is failed."""

from __future__ import annotations

import uuid

from unit.test_cluster_shard import Harness

from odradek.coordinator.cluster import directories, reassignment
from odradek.protocol.errors import ErrorCode

DIR_A, DIR_B = uuid.UUID(int=10), uuid.UUID(int=11)
UNASSIGNED = uuid.UUID(int=0)


def assign(h: Harness, node: int, *where: tuple[uuid.UUID, int]) -> dict:
    topic_id = h.shard.topics["t"].topic_id
    request = {
        "broker_id": node,
        "broker_epoch": h.epochs[node],
        "directories": [(directory, topic_id, index) for directory, index in where],
    }
    return h.apply(directories.assign(h.shard, request))


def alter(h: Harness, node: int, index: int, isr: tuple[int, ...]) -> dict:
    p = h.shard.topics["t"].partitions[index]
    request = {
        "node_id": node,
        "broker_epoch": h.epochs[node],
        "topic": "t",
        "partition": index,
        "leader_epoch": p.leader_epoch,
        "partition_epoch": p.partition_epoch,
        "isr": isr,
    }
    return h.apply(h.shard.alter_partition(request))


def test_assignments_are_recorded_per_replica_and_replayed() -> None:
    h = Harness()
    h.start(1, 2)
    h.create("t", 2, 2)
    answer = assign(h, 1, (DIR_A, 0), (DIR_B, 1))
    assert answer["error_code"] == ErrorCode.none
    assert all(
        p["error_code"] == 0
        for d in answer["directories"]
        for t in d["topics"]
        for p in t["partitions"]
    )
    for index, directory in ((0, DIR_A), (1, DIR_B)):
        value = h.shard.topics["t"].partitions[index]
        assert value.replica_directories()[value.replicas.index(1)] == directory
    assert h.replayed().topics["t"].partitions == h.shard.topics["t"].partitions
    before = len(h.log)
    assign(h, 1, (DIR_A, 0))  # already so: nothing written
    assert len(h.log) == before
    stale = {"broker_id": 1, "broker_epoch": -5, "directories": []}
    assert directories.assign(h.shard, stale).response["error_code"] == ErrorCode.stale_broker_epoch


def test_a_broker_with_one_directory_gets_it_assigned_to_its_new_replicas() -> None:
    h = Harness()
    h.register(1, log_dirs=(DIR_A,))  # one directory: assigned by the controller
    h.register(2, log_dirs=(DIR_A, DIR_B))  # several: the broker reports where
    h.register(3)  # none registered (BrokerRegistration before v2)
    for node in (1, 2, 3):
        h.beat(node)
    h.create("t", 3, 3)
    for value in h.shard.topics["t"].partitions.values():
        assert value.directory_of(1) == DIR_A
        assert value.directory_of(2) == value.directory_of(3) == UNASSIGNED
    assert h.replayed().topics["t"].partitions == h.shard.topics["t"].partitions
    assert h.replayed().brokers[1].value.log_dirs == (DIR_A,)
    # CreatePartitions, placed by the controller and by the client
    h.apply(h.shard.create_partitions("t", 4))
    h.apply(h.shard.create_partitions("t", 5, [[3, 1, 2]]))
    assert h.shard.topics["t"].partitions[3].directory_of(1) == DIR_A
    assert h.shard.topics["t"].partitions[4].directories == (UNASSIGNED, DIR_A, UNASSIGNED)
    # none of the replicas on a broker of one directory: nothing assigned
    h.apply(h.shard.create_topic({"name": "u", "assignments": {0: [2, 3]}}))
    assert h.shard.topics["u"].partitions[0].directories == ()


def test_a_reassignment_assigns_the_only_directory_of_a_new_replicas_broker() -> None:
    h = Harness()
    h.register(1, log_dirs=(DIR_A, DIR_B))
    h.register(2, log_dirs=(DIR_B,))
    for node in (1, 2):
        h.beat(node)
    h.apply(h.shard.create_topic({"name": "t", "assignments": {0: [1]}}))
    assign(h, 1, (DIR_A, 0))
    h.apply(reassignment.alter(h.shard, "t", 0, {"replicas": [1, 2]}))
    moving = h.shard.topics["t"].partitions[0]
    assert moving.adding == (2,)
    assert (moving.directory_of(1), moving.directory_of(2)) == (DIR_A, DIR_B)


def test_a_failed_directory_moves_its_replicas_out_and_keeps_them_out() -> None:
    h = Harness()
    h.start(1, 2)
    h.create("t", 2, 2)
    led_by_1 = [i for i, p in h.shard.topics["t"].partitions.items() if p.leader == 1]
    assert led_by_1
    index = led_by_1[0]
    assign(h, 1, (DIR_B, index))
    h.beat(1, offline_log_dirs=[DIR_B])
    moved = h.shard.topics["t"].partitions[index]
    assert (moved.leader, moved.isr) == (2, (2,))
    # the other partition (its replica on 1 not assigned to the failed directory) stays
    other = h.shard.topics["t"].partitions[1 - index]
    assert 1 in other.isr
    # the new leader may not take it back into the ISR while the directory is failed
    assert alter(h, 2, index, (2, 1))["error_code"] == ErrorCode.ineligible_replica
    h.beat(1, offline_log_dirs=[])  # the directory is back
    assert alter(h, 2, index, (2, 1))["error_code"] == ErrorCode.none
