"""The controller's metadata state machine: registration, fencing, leader election and
topic placement, each step's records replayed as the runtime would, and a second shard
that replays the whole log ends in the same state (what a broker's view is)."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import pytest

from odradek.coordinator.cluster import legacy_records as legacy
from odradek.coordinator.cluster import records as rec
from odradek.coordinator.cluster.shard import NO_LEADER, ClusterSettings, ClusterShard
from odradek.coordinator.runtime import Record, Result
from odradek.protocol.codec import RecordFormatError
from odradek.protocol.errors import ErrorCode

SESSION_MS = 9000


class Harness:
    def __init__(self) -> None:
        self.shard = ClusterShard(None, ClusterSettings("c1", SESSION_MS))
        self.log: list[Record] = []
        self.incarnations: dict[int, uuid.UUID] = {}
        self.epochs: dict[int, int] = {}

    def apply(self, result: Result[Any]) -> Any:
        for key, value in result.records:
            assert key is None  # Kafka's metadata records have no key
            self.shard.replay(len(self.log), key, value, -1)
            self.log.append((key, value))
        return result.response

    def register(
        self,
        node: int,
        now: int = 0,
        incarnation: uuid.UUID | None = None,
        log_dirs: tuple[uuid.UUID, ...] = (),
    ) -> Any:
        incarnation = incarnation or self.incarnations.get(node) or uuid.uuid4()
        endpoint = rec.Endpoint("PLAINTEXT", f"node{node}", 9092, "PLAINTEXT")
        answer = self.apply(
            self.shard.register_broker(
                {
                    "node_id": node,
                    "cluster_id": "c1",
                    "incarnation_id": incarnation,
                    "endpoints": (endpoint,),
                    "rack": None,
                    "now_ms": now,
                    "log_dirs": log_dirs,
                }
            )
        )
        if answer["error_code"] == 0:
            self.epochs[node] = answer["broker_epoch"]
            self.incarnations[node] = incarnation
        return answer

    def beat(self, node: int, now: int = 0, **flags: Any) -> Any:
        request = {
            "node_id": node,
            "broker_epoch": self.epochs[node],
            "current_metadata_offset": len(self.log) - 1,
            "now_ms": now,
            **flags,
        }
        return self.apply(self.shard.broker_heartbeat(request))

    def start(self, *nodes: int) -> None:
        for node in nodes:
            assert self.register(node)["error_code"] == 0
            assert self.beat(node)["is_fenced"] is False

    def create(self, name: str, partitions: int, factor: int) -> Any:
        return self.apply(
            self.shard.create_topic(
                {"name": name, "partitions": partitions, "replication_factor": factor}
            )
        )

    def replayed(self) -> ClusterShard:
        fresh = ClusterShard(None, ClusterSettings("c1", SESSION_MS))
        for offset, (key, value) in enumerate(self.log):
            fresh.replay(offset, key, value, -1)
        return fresh


def view(shard: ClusterShard) -> Any:
    brokers = {n: (r.value.epoch, r.value.fenced) for n, r in shard.brokers.items()}
    topics = {name: (t.topic_id, dict(t.partitions)) for name, t in shard.topics.items()}
    return brokers, topics


def test_a_new_broker_is_fenced_until_it_has_caught_up() -> None:
    h = Harness()
    assert h.register(1)["broker_epoch"] == 1
    assert h.shard.live_brokers() == []
    behind = h.apply(
        h.shard.broker_heartbeat(
            {"node_id": 1, "broker_epoch": 1, "current_metadata_offset": -1, "now_ms": 0}
        )
    )
    assert (behind["is_caught_up"], behind["is_fenced"]) == (False, True)
    assert h.beat(1)["is_fenced"] is False
    assert h.shard.live_brokers() == [1]
    assert view(h.replayed()) == view(h.shard)


def test_topics_are_placed_round_robin_over_live_brokers() -> None:
    h = Harness()
    h.start(1, 2, 3)
    assert h.create("orders", 3, 3)["error_code"] == 0
    replicas = [h.shard.partition("orders", i).replicas for i in range(3)]  # type: ignore[union-attr]
    assert replicas == [(1, 2, 3), (2, 3, 1), (3, 1, 2)]
    leaders = [h.shard.partition("orders", i).leader for i in range(3)]  # type: ignore[union-attr]
    assert leaders == [1, 2, 3]
    assert h.create("orders", 1, 1)["error_code"] == ErrorCode.topic_already_exists
    too_many = h.create("wide", 1, 4)
    assert too_many["error_code"] == ErrorCode.invalid_replication_factor
    assert "only 3 broker(s)" in too_many["error_message"]
    assert h.create("none", 0, 1)["error_code"] == ErrorCode.invalid_partitions
    assert view(h.replayed()) == view(h.shard)


def test_a_silent_broker_is_fenced_and_its_partitions_move_to_in_sync_replicas() -> None:
    h = Harness()
    h.start(1, 2, 3)
    h.create("t", 3, 2)  # (1,2) (2,3) (3,1)
    h.beat(2, now=5000)
    h.beat(3, now=5000)
    assert h.apply(h.shard.fence_if_expired(1, now=5000)) is None
    assert h.shard.live_brokers() == [1, 2, 3]  # not yet: 5 s of 9
    h.apply(h.shard.fence_if_expired(1, now=SESSION_MS))
    assert h.shard.live_brokers() == [2, 3]
    p0, p1, p2 = (h.shard.partition("t", i) for i in range(3))
    assert p0 is not None and p1 is not None and p2 is not None
    assert (p0.leader, p0.isr, p0.leader_epoch) == (2, (2,), 1)
    assert (p1.leader, p1.isr, p1.leader_epoch) == (2, (2, 3), 0)  # untouched
    assert (p2.leader, p2.isr, p2.leader_epoch, p2.partition_epoch) == (3, (3,), 0, 1)
    assert view(h.replayed()) == view(h.shard)


def test_no_live_in_sync_replica_leaves_no_leader_until_one_returns() -> None:
    h = Harness()
    h.start(1, 2)
    h.create("t", 1, 2)  # replicas (1, 2)
    h.apply(h.shard.fence_if_expired(2, now=SESSION_MS))  # 2 leaves the ISR
    p = h.shard.partition("t", 0)
    assert p is not None and (p.leader, p.isr) == (1, (1,))
    h.beat(1, now=SESSION_MS)
    h.apply(h.shard.fence_if_expired(1, now=3 * SESSION_MS))  # the last ISR member
    p = h.shard.partition("t", 0)
    assert p is not None and (p.leader, p.isr, p.leader_epoch) == (NO_LEADER, (1,), 1)
    # broker 2 comes back, but it is out of sync: never elected
    assert h.register(2, now=3 * SESSION_MS)["error_code"] == 0
    h.beat(2, now=3 * SESSION_MS)
    p = h.shard.partition("t", 0)
    assert p is not None and p.leader == NO_LEADER
    h.register(1, now=3 * SESSION_MS)
    h.beat(1, now=3 * SESSION_MS)
    p = h.shard.partition("t", 0)
    assert p is not None and (p.leader, p.isr, p.leader_epoch) == (1, (1,), 2)
    assert view(h.replayed()) == view(h.shard)


def test_a_node_id_held_by_a_live_broker_is_refused_and_freed_by_its_session_end() -> None:
    h = Harness()
    h.start(1)
    other = uuid.uuid4()
    refused = h.register(1, now=1000, incarnation=other)
    assert refused["error_code"] == ErrorCode.duplicate_broker_registration
    assert h.register(1, now=1000)["error_code"] == 0  # the same node again: fine
    h.beat(1, now=1000)
    assert h.register(1, now=1000 + SESSION_MS, incarnation=other)["error_code"] == 0


def test_wrong_cluster_unknown_broker_and_stale_epoch() -> None:
    h = Harness()
    wrong = h.shard.register_broker(
        {"node_id": 1, "cluster_id": "other", "incarnation_id": uuid.uuid4(), "endpoints": ()}
    )
    assert wrong.response is not None
    assert wrong.response["error_code"] == ErrorCode.inconsistent_cluster_id
    h.epochs[7] = 1
    assert h.beat(7)["error_code"] == ErrorCode.broker_id_not_registered
    h.start(1)
    h.epochs[1] = 99
    assert h.beat(1)["error_code"] == ErrorCode.stale_broker_epoch


def test_controlled_shutdown_moves_leadership_first() -> None:
    h = Harness()
    h.start(1, 2)
    h.create("t", 2, 2)
    answer = h.beat(1, want_shutdown=True)
    assert answer["should_shutdown"] and answer["is_fenced"]
    assert {h.shard.partition("t", i).leader for i in range(2)} == {2}  # type: ignore[union-attr]


def test_deleting_a_topic_removes_its_partitions() -> None:
    h = Harness()
    h.start(1)
    topic_id = h.create("t", 2, 1)["topic_id"]
    assert h.apply(h.shard.delete_topic("t"))["topic_id"] == topic_id
    assert "t" not in h.shard.topics and "t" not in h.replayed().topics
    assert h.apply(h.shard.delete_topic("t"))["error_code"] == ErrorCode.unknown_topic_or_partition


def test_legacy_records_round_trip_and_bad_bytes_are_refused() -> None:
    broker = rec.BrokerValue(
        3, uuid.uuid4(), True, "r1", (rec.Endpoint("PLAINTEXT", "h", 9092, "PLAINTEXT"),)
    )
    assert legacy.decode_broker(legacy.encode_broker(broker)) == broker
    topic = legacy.TopicValue(uuid.uuid4(), {"retention.ms": "1000"})
    assert legacy.decode_topic(legacy.encode_topic(topic)) == topic
    partition = rec.PartitionValue((1, 2, 3), (1, 3), 1, 4, 7)
    assert legacy.decode_partition(legacy.encode_partition(partition)) == partition
    for key in (legacy.BrokerKey(1), legacy.TopicKey("t"), legacy.PartitionKey("t", 2)):
        assert legacy.decode_key(legacy.encode_key(key)) == key
    with pytest.raises(RecordFormatError):
        legacy.decode_key(b"\x00\x09")
    with pytest.raises(RecordFormatError):
        legacy.decode_partition(b"\x7f\xff\xff\xff")


def test_a_log_of_the_old_format_loads_into_the_same_state() -> None:
    """A cluster's metadata log written before the records took Kafka's format."""
    broker = rec.BrokerValue(
        3, uuid.uuid4(), False, None, (rec.Endpoint("PLAINTEXT", "h", 9092, "PLAINTEXT"),)
    )
    topic_id = uuid.uuid4()
    partition = rec.PartitionValue((3,), (3,), 3, 0, 0)
    old_log: list[tuple[bytes, bytes | None]] = [
        (legacy.encode_key(legacy.BrokerKey(3)), legacy.encode_broker(broker)),
        (
            legacy.encode_key(legacy.TopicKey("t")),
            legacy.encode_topic(legacy.TopicValue(topic_id, {"retention.ms": "5"})),
        ),
        (legacy.encode_key(legacy.PartitionKey("t", 0)), legacy.encode_partition(partition)),
        (legacy.encode_key(legacy.ProducerIdsKey()), legacy.encode_next_producer_id(2000)),
    ]
    shard = ClusterShard(None, ClusterSettings("c1", SESSION_MS))
    for offset, (key, value) in enumerate(old_log):
        shard.replay(offset, key, value, -1)
    assert shard.brokers[3].value == broker and shard.next_producer_id == 2000
    assert shard.topics["t"].configs == {"retention.ms": "5"}
    assert shard.partition("t", 0) == partition
    # and the new records go on from there
    change = shard.partition_changed(
        "t", 0, replace(partition, isr=(), leader=-1, leader_epoch=1, partition_epoch=1)
    )
    shard.replay(4, *change, -1)
    assert shard.partition("t", 0) == rec.PartitionValue((3,), (), -1, 1, 1)


def alter(h: Harness, node: int, isr: tuple[int, ...], **changes: Any) -> Any:
    p = h.shard.partition("t", 0)
    assert p is not None
    request = {
        "node_id": node,
        "broker_epoch": h.epochs[node],
        "topic": "t",
        "partition": 0,
        "leader_epoch": p.leader_epoch,
        "partition_epoch": p.partition_epoch,
        "isr": isr,
        **changes,
    }
    return h.apply(h.shard.alter_partition(request))


def test_the_leader_shrinks_and_expands_the_isr_with_kafkas_checks() -> None:
    h = Harness()
    h.start(1, 2, 3)
    h.create("t", 1, 3)  # replicas (1, 2, 3), leader 1
    shrunk = alter(h, 1, (1, 2))
    assert (shrunk["error_code"], shrunk["isr"], shrunk["partition_epoch"]) == (0, (1, 2), 1)
    assert alter(h, 2, (1, 2))["error_code"] == ErrorCode.not_leader_or_follower
    assert alter(h, 1, (1,), partition_epoch=0)["error_code"] == ErrorCode.invalid_update_version
    assert alter(h, 1, (1,), leader_epoch=7)["error_code"] == ErrorCode.fenced_leader_epoch
    assert alter(h, 1, (2, 3))["error_code"] == ErrorCode.invalid_request  # without the leader
    assert alter(h, 1, (1, 4))["error_code"] == ErrorCode.invalid_request  # not a replica
    assert alter(h, 1, (1,), broker_epoch=99)["error_code"] == ErrorCode.stale_broker_epoch
    h.apply(h.shard.fence_if_expired(3, now=SESSION_MS))
    assert alter(h, 1, (1, 2, 3))["error_code"] == ErrorCode.ineligible_replica  # fenced
    h.beat(1, now=SESSION_MS)
    h.beat(2, now=SESSION_MS)
    h.register(3, now=SESSION_MS)
    h.beat(3, now=SESSION_MS)
    assert alter(h, 1, (1, 2, 3))["isr"] == (1, 2, 3)
    assert view(h.replayed()) == view(h.shard)


def test_unclean_election_only_where_the_topic_allows_it() -> None:
    for allowed, leader in ((False, NO_LEADER), (True, 2)):
        h = Harness()
        h.start(1, 2)
        h.create("t", 1, 2)
        alter(h, 1, (1,))  # 2 falls behind
        if allowed:
            h.apply(h.shard.alter_topic_configs("t", {"unclean.leader.election.enable": "true"}))
        h.beat(2, now=SESSION_MS)
        h.apply(h.shard.fence_if_expired(1, now=SESSION_MS))
        p = h.shard.partition("t", 0)
        assert p is not None and p.leader == leader
        if allowed:
            assert p.isr == (2,)


def test_preferred_leader_election_and_more_partitions() -> None:
    h = Harness()
    h.start(1, 2)
    h.create("t", 1, 2)  # replicas (1, 2)
    assert h.apply(h.shard.elect_preferred_leader("t", 0))["error_code"] == (
        ErrorCode.election_not_needed
    )
    h.beat(2, now=SESSION_MS)
    h.apply(h.shard.fence_if_expired(1, now=SESSION_MS))  # 2 leads
    h.register(1, now=SESSION_MS)
    h.beat(1, now=SESSION_MS)
    assert h.apply(h.shard.elect_preferred_leader("t", 0))["error_code"] == (
        ErrorCode.preferred_leader_not_available  # 1 left the ISR when fenced
    )
    p = h.shard.partition("t", 0)
    assert p is not None
    h.epochs[2] = h.shard.brokers[2].value.epoch
    alter(h, 2, (2, 1))
    assert h.apply(h.shard.elect_preferred_leader("t", 0))["error_code"] == 0
    p = h.shard.partition("t", 0)
    assert p is not None and p.leader == 1
    assert h.apply(h.shard.create_partitions("t", 1))["error_code"] == ErrorCode.invalid_partitions
    assert h.apply(h.shard.create_partitions("t", 3))["error_code"] == 0
    assert sorted(h.shard.topics["t"].partitions) == [0, 1, 2]
    assert all(len(p.replicas) == 2 for p in h.shard.topics["t"].partitions.values())
    assert view(h.replayed()) == view(h.shard)


def test_manual_assignments_place_replicas_where_the_client_said() -> None:
    h = Harness()
    h.start(1, 2, 3)
    h.register(4)  # registered, not yet caught up: fenced
    assignments = {0: [3, 1], 1: [4, 2], 2: [1, 2]}
    answer = h.apply(h.shard.create_topic({"name": "m", "assignments": assignments}))
    assert answer["error_code"] == 0
    placed = [h.shard.partition("m", i) for i in range(3)]
    assert [(p.replicas, p.isr, p.leader) for p in placed if p is not None] == [
        ((3, 1), (3, 1), 3),
        ((4, 2), (2,), 2),  # the fenced broker is a replica, out of sync, not the leader
        ((1, 2), (1, 2), 1),
    ]
    grown = h.apply(h.shard.create_partitions("m", 5, [[2, 3], [4, 1]]))
    assert grown["error_code"] == 0
    p3, p4 = h.shard.partition("m", 3), h.shard.partition("m", 4)
    assert p3 is not None and (p3.replicas, p3.leader) == ((2, 3), 2)
    assert p4 is not None and (p4.replicas, p4.isr, p4.leader) == ((4, 1), (1,), 1)
    assert view(h.replayed()) == view(h.shard)


@pytest.mark.parametrize(
    ("assignments", "why"),
    [
        ({0: [1, 9]}, "includes broker 9, but no such broker is registered"),
        ({0: [1, 1]}, "includes the broker 1 more than once"),
        (
            {0: [1, 2], 1: [3]},
            "with 1 replica(s), but this is not consistent with previous partitions, which have 2",
        ),
        ({0: []}, "includes an empty replica list"),
        ({0: [1], 2: [2]}, "a consecutive 0-based integer sequence"),
        ({0: [4]}, "are fenced or in controlled shutdown"),
    ],
)
def test_manual_assignments_that_cannot_be_used_are_refused(
    assignments: dict[int, list[int]], why: str
) -> None:
    h = Harness()
    h.start(1, 2, 3)
    h.register(4)
    answer = h.apply(h.shard.create_topic({"name": "m", "assignments": assignments}))
    assert answer["error_code"] == ErrorCode.invalid_replica_assignment
    assert why in answer["error_message"]
    assert "m" not in h.shard.topics


def test_more_partitions_by_assignment_keep_the_topics_replication_factor() -> None:
    h = Harness()
    h.start(1, 2, 3)
    h.create("t", 1, 2)
    for count, assignments, why in (
        (2, [[1, 2, 3]], "with 3 replica(s), but this is not consistent"),
        (3, [[1, 2]], "add 2 additional partition(s), but only 1 assignment(s)"),
    ):
        answer = h.apply(h.shard.create_partitions("t", count, assignments))
        assert answer["error_code"] == ErrorCode.invalid_replica_assignment
        assert why in answer["error_message"]
    assert len(h.shard.topics["t"].partitions) == 1
