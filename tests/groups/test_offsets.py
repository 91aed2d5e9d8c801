"""Committed offsets (SPEC §8): generation checks, metadata size, last write wins,
and survival of a broker restart (clean stop and kill -9)."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import java
from helpers.broker import Broker, BrokerFactory
from helpers.env import require_module
from helpers.topics import create_topic
from helpers.wire import WireClient

from groups import wiregroup as wg
from groups.members import wait_until

require_module("confluent_kafka")

from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

pytestmark = pytest.mark.timeout(120)


def simple_consumer(b: Broker, group: str, **conf: Any) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": b.bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            **conf,
        }
    )


def _two_member_generation(
    b: Broker, group: str, topic: str
) -> tuple[WireClient, WireClient, str, str, int, int]:
    """Member A alone (generation g1), then A and B (generation g2 = g1 + 1)."""
    a, c = WireClient(b.bootstrap), WireClient(b.bootstrap)
    member_a, gen1 = wg.join_and_sync(a, group, topic)
    first = wg.join(c, group, topics=[topic])
    assert first.error_code == wg.MEMBER_ID_REQUIRED
    member_b = first.member_id
    corr, data = c.request_bytes(
        wg.JOIN,
        5,
        {
            "group_id": group,
            "session_timeout": 6000,
            "rebalance_timeout": 6000,
            "member_id": member_b,
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": wg.subscription([topic])}],
        },
    )
    c.send_raw(data)  # parked until A rejoins
    wg.until_state(b.bootstrap, group, "PreparingRebalance")
    assert wg.heartbeat(a, group, gen1, member_a) == wg.REBALANCE_IN_PROGRESS
    # a wrong generation is ILLEGAL_GENERATION even while the group rebalances
    assert wg.heartbeat(a, group, gen1 + 1, member_a) == wg.ILLEGAL_GENERATION
    rejoin_a = wg.join(a, group, member_id=member_a, topics=[topic])
    joined_b = c.read_response(wg.JOIN, 5, corr)
    assert rejoin_a.error_code == joined_b.error_code == wg.NONE
    gen2 = rejoin_a.generation_id
    assert gen2 == joined_b.generation_id == gen1 + 1
    return a, c, member_a, member_b, gen1, gen2


def test_stale_generation_commit_is_illegal_generation(
    shared_broker: Broker, unique_topic: str, unique_group: str
) -> None:
    create_topic(shared_broker.bootstrap, unique_topic, 2)
    tp0, tp1 = (unique_topic, 0), (unique_topic, 1)
    a, b, member_a, member_b, gen1, gen2 = _two_member_generation(
        shared_broker, unique_group, unique_topic
    )
    with a, b:
        # the old generation is refused; the new one waits for the assignment
        assert wg.commit(a, unique_group, {tp0: 5}, gen1, member_a) == {tp0: wg.ILLEGAL_GENERATION}
        assert wg.commit(a, unique_group, {tp0: 5}, gen2, member_a) == {
            tp0: wg.REBALANCE_IN_PROGRESS
        }
        leader = member_a if member_a < member_b else member_b
        leader_conn = a if leader == member_a else b
        plan = {
            member_a: wg.assignment({unique_topic: [0]}),
            member_b: wg.assignment({unique_topic: [1]}),
        }
        follower_conn = b if leader_conn is a else a
        follower = member_b if leader == member_a else member_a
        corr, data = follower_conn.request_bytes(
            wg.SYNC,
            3,
            {
                "group_id": unique_group,
                "generation_id": gen2,
                "member_id": follower,
                "group_instance_id": None,
                "assignments": [],
            },
        )
        follower_conn.send_raw(data)
        assert wg.sync(leader_conn, unique_group, gen2, leader, plan).error_code == wg.NONE
        assert follower_conn.read_response(wg.SYNC, 3, corr).error_code == wg.NONE
        assert wg.commit(a, unique_group, {tp0: 5}, gen2, member_a) == {tp0: wg.NONE}
        assert wg.commit(b, unique_group, {tp1: 6}, gen1, member_b) == {tp1: wg.ILLEGAL_GENERATION}
        assert wg.commit(b, unique_group, {tp1: 6}, gen2, "nobody") == {tp1: wg.UNKNOWN_MEMBER_ID}
        got = wg.fetch(a, unique_group, [tp0, tp1])
    assert got == {tp0: (5, "", 0), tp1: (-1, "", 0)}


def test_stale_generation_commit_java(
    shared_broker: Broker, unique_topic: str, unique_group: str
) -> None:
    """A real consumer that missed a rebalance: its commit with the old generation fails
    (CommitFailedException / RebalanceInProgress), and the committed offset stays."""
    create_topic(shared_broker.bootstrap, unique_topic, 1)
    tp = (unique_topic, 0)
    with WireClient(shared_broker.bootstrap) as w:
        member, gen = wg.join_and_sync(w, unique_group, unique_topic)
        assert wg.commit(w, unique_group, {tp: 7}, gen, member) == {tp: wg.NONE}
        assert wg.commit(w, unique_group, {tp: 9}, gen - 1, member) == {tp: wg.ILLEGAL_GENERATION}
        assert wg.commit(w, unique_group, {tp: 9}, gen + 1, member) == {tp: wg.ILLEGAL_GENERATION}
        assert wg.fetch(w, unique_group, [tp]) == {tp: (7, "", 0)}


def test_metadata_size_limit(shared_broker: Broker, unique_topic: str, unique_group: str) -> None:
    create_topic(shared_broker.bootstrap, unique_topic, 2)
    tp0, tp1 = (unique_topic, 0), (unique_topic, 1)
    with WireClient(shared_broker.bootstrap) as w:
        codes = wg.commit(w, unique_group, {tp0: (4, "m" * 4096), tp1: (5, "m" * 5000)})
        assert codes == {tp0: wg.NONE, tp1: wg.OFFSET_METADATA_TOO_LARGE}
        assert wg.fetch(w, unique_group, [tp0, tp1]) == {tp0: (4, "m" * 4096, 0), tp1: (-1, "", 0)}
    # the same through librdkafka; confluent-kafka sends the metadata with a trailing NUL
    # byte, so 4095 characters are 4096 bytes on the wire
    c = simple_consumer(shared_broker, unique_group)
    try:
        res = c.commit(
            offsets=[TopicPartition(unique_topic, 1, 8, metadata="x" * 4095)], asynchronous=False
        )
        assert res is not None and res[0].error is None
        with pytest.raises(Exception) as failure:
            c.commit(
                offsets=[TopicPartition(unique_topic, 0, 9, metadata="x" * 5000)],
                asynchronous=False,
            )
        assert (
            "OFFSET_METADATA_TOO_LARGE" in str(failure.value)
            or "metadata" in str(failure.value).lower()
        ), failure.value
        got = c.committed(
            [TopicPartition(unique_topic, 0), TopicPartition(unique_topic, 1)], timeout=10
        )
    finally:
        c.close()
    # (the binding reads metadata as a C string: compare only what it wrote itself)
    assert [p.offset for p in got] == [4, 8]
    assert got[1].metadata.rstrip("\0") == "x" * 4095


def test_commit_backwards_last_write_wins(
    shared_broker: Broker, unique_topic: str, unique_group: str
) -> None:
    create_topic(shared_broker.bootstrap, unique_topic, 1)
    c = simple_consumer(shared_broker, unique_group)
    try:
        for offset in (10, 8):
            c.commit(offsets=[TopicPartition(unique_topic, 0, offset)], asynchronous=False)
        got = c.committed([TopicPartition(unique_topic, 0)], timeout=10)
    finally:
        c.close()
    assert got[0].offset == 8
    listed = java.admin(shared_broker.bootstrap, "group-offsets", "--group", unique_group).records
    assert [(r["partition"], r["offset"]) for r in listed] == [(0, 8)]


@pytest.mark.parametrize("hard", [False, True], ids=["sigterm", "kill9"])
def test_offsets_and_group_survive_restart(
    broker_factory: BrokerFactory, unique_topic: str, unique_group: str, hard: bool
) -> None:
    """A stable group with one member and commits; the broker restarts (clean or
    kill -9): the offsets, the group's generation, member and assignment are back, and
    the member carries on without rejoining from scratch."""
    b = broker_factory({"group.initial.rebalance.delay.ms": "0"})
    create_topic(b.bootstrap, unique_topic, 2)
    tp0, tp1 = (unique_topic, 0), (unique_topic, 1)
    with WireClient(b.bootstrap) as w:
        member, gen = wg.join_and_sync(w, unique_group, unique_topic)
        assert wg.commit(w, unique_group, {tp0: 11, tp1: (22, "meta")}, gen, member) == {
            tp0: 0,
            tp1: 0,
        }
        assert wg.commit(w, unique_group, {tp0: 12}, gen, member) == {tp0: 0}
        before = wg.describe(w, unique_group)
        # a group known only by simple commits
        assert wg.commit(w, unique_group + "-simple", {tp1: 4}) == {tp1: 0}
        assert wg.describe(w, unique_group + "-simple").group_state == "Empty"
    assert before.group_state == "Stable"
    b.restart(hard=hard)

    def fetched() -> dict[tuple[str, int], tuple[int, str, int]] | None:
        try:
            with WireClient(b.bootstrap) as w2:
                got = wg.fetch(w2, unique_group, [tp0, tp1])
        except (AssertionError, OSError):
            return None  # still loading
        return got

    got = wait_until(fetched, 10, "offsets after restart")
    assert got == {tp0: (12, "", 0), tp1: (22, "meta", 0)}
    with WireClient(b.bootstrap) as w:
        after = wg.describe(w, unique_group)
        assert after.group_state == "Stable"
        assert [(m.member_id, m.member_assignment) for m in after.members] == [
            (m.member_id, m.member_assignment) for m in before.members
        ]
        simple = wg.describe(w, unique_group + "-simple")
        assert simple.error_code == 0 and simple.group_state == "Empty"
        assert wg.fetch(w, unique_group + "-simple", [tp1]) == {tp1: (4, "", 0)}
        # the member heartbeats on with its generation and can commit again
        assert wg.heartbeat(w, unique_group, gen, member) == wg.NONE
        assert wg.commit(w, unique_group, {tp0: 13}, gen, member) == {tp0: 0}
        assert wg.fetch(w, unique_group, [tp0])[tp0][0] == 13
        # a new member joining bumps the generation past the one before the restart
        rejoin = wg.join(w, unique_group, member_id=member, topics=[unique_topic])
        assert rejoin.error_code == 0 and rejoin.generation_id == gen + 1


def test_real_consumer_offsets_survive_kill9(
    broker_factory: BrokerFactory, unique_topic: str, unique_group: str
) -> None:
    b = broker_factory()
    create_topic(b.bootstrap, unique_topic, 3)
    c = simple_consumer(b, unique_group)
    c.subscribe([unique_topic])
    try:
        wait_until(lambda: (c.poll(0.1), len(c.assignment()) == 3)[1], 20, "assignment")
        c.commit(
            offsets=[TopicPartition(unique_topic, p, 100 + p) for p in range(3)], asynchronous=False
        )
    finally:
        c.close()
    b.restart(hard=True)
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    from confluent_kafka import ConsumerGroupTopicPartitions

    def listed() -> dict[int, int] | None:
        try:
            fut = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(unique_group)])[
                unique_group
            ]
            res = fut.result(timeout=10)
        except Exception:
            return None
        return {p.partition: p.offset for p in res.topic_partitions}

    assert wait_until(listed, 15, "listed offsets") == {0: 100, 1: 101, 2: 102}
