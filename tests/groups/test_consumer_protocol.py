"""The consumer group protocol (KIP-848, group.protocol=consumer) with real clients:
the Java client and librdkafka join, share partitions without overlap, and take over
from members that leave or crash."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewPartitions
from helpers.broker import Broker, BrokerFactory
from helpers.group_configs import set_group_configs
from helpers.topics import create_topic
from helpers.wire import WireClient

from groups.members import CONSUMER_PROTOCOL, JavaMember, Members, all_partitions, wait_settled

LIST_GROUPS, API_VERSIONS, CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE = 16, 18, 68, 69
# ApiVersions v3+ must name the client software (INVALID_REQUEST otherwise, as Kafka)
SOFTWARE = {"client_software_name": "odradek-tests", "client_software_version": "1.0"}
# members learn of a new assignment at their next heartbeat
SETTINGS = {"group.consumer.heartbeat.interval.ms": 200, "group.consumer.session.timeout.ms": 6000}


def settle(members: list[JavaMember], partitions: set[str]) -> dict[str, set[str]]:
    """Every partition owned once, and (uniform assignor) evenly."""

    def balanced(got: dict[str, set[str]]) -> bool:
        sizes = [len(p) for p in got.values()]
        return max(sizes) - min(sizes) <= 1

    return wait_settled(members, partitions, timeout=30, extra=balanced, same_generation=False)


@pytest.fixture
def kip848_broker(broker_factory: BrokerFactory) -> Broker:
    return broker_factory(SETTINGS)


def test_java_members_share_and_take_over(
    kip848_broker: Broker, unique_topic: str, unique_group: str
) -> None:
    create_topic(kip848_broker.bootstrap, unique_topic, 6)
    partitions = all_partitions({unique_topic: 6})
    with Members(kip848_broker.bootstrap, unique_group) as members:
        first = members.start("c0", [unique_topic], CONSUMER_PROTOCOL)
        assert settle([first], partitions)["c0"] == partitions
        second = members.start("c1", [unique_topic], CONSUMER_PROTOCOL)
        third = members.start("c2", [unique_topic], CONSUMER_PROTOCOL)
        split = settle([first, second, third], partitions)
        assert sorted(len(p) for p in split.values()) == [2, 2, 2]
        # c0 keeps what it still may (the uniform assignor is sticky)
        second.close()
        after = settle([first, third], partitions)
        assert split["c0"] <= after["c0"] and split["c2"] <= after["c2"]
        third.kill()  # no goodbye: its session ends (6 s) and c0 takes everything
        assert settle([first], partitions)["c0"] == partitions


def test_librdkafka_members_consume_everything_once(
    kip848_broker: Broker, unique_topic: str, unique_group: str
) -> None:
    create_topic(kip848_broker.bootstrap, unique_topic, 4)
    producer = Producer({"bootstrap.servers": kip848_broker.bootstrap})
    for i in range(400):
        producer.produce(unique_topic, b"%d" % i, partition=i % 4)
    assert producer.flush(15) == 0

    def member(name: str) -> Consumer:
        consumer = Consumer(
            {
                "bootstrap.servers": kip848_broker.bootstrap,
                "group.id": unique_group,
                "group.protocol": "consumer",
                "client.id": name,
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe([unique_topic])
        return consumer

    consumers = [member("r0"), member("r1")]
    seen: dict[bytes, int] = {}
    owned: list[set[int]] = [set(), set()]
    deadline = time.monotonic() + 40
    try:
        while time.monotonic() < deadline:
            for index, consumer in enumerate(consumers):
                message = consumer.poll(0.05)
                if message is not None and message.error() is None:
                    seen[message.value()] = seen.get(message.value(), 0) + 1
                owned[index] = {tp.partition for tp in consumer.assignment()}
            if len(seen) == 400 and owned[0] and owned[1] and not owned[0] & owned[1]:
                break
        assert len(seen) == 400
        assert owned[0] | owned[1] == {0, 1, 2, 3} and not owned[0] & owned[1], owned
    finally:
        for consumer in consumers:
            consumer.close()


def test_broker_killed_mid_rebalance_comes_back_with_the_group(
    kip848_broker: Broker, unique_topic: str, unique_group: str
) -> None:
    create_topic(kip848_broker.bootstrap, unique_topic, 6)
    partitions = all_partitions({unique_topic: 6})
    with Members(kip848_broker.bootstrap, unique_group) as members:
        first = members.start("c0", [unique_topic], CONSUMER_PROTOCOL)
        second = members.start("c1", [unique_topic], CONSUMER_PROTOCOL)
        settle([first, second], partitions)
        third = members.start("c2", [unique_topic], CONSUMER_PROTOCOL)
        third.wait_event("started")
        time.sleep(1.0)  # c2 has joined; c0 and c1 are giving partitions up
        kip848_broker.restart(hard=True)  # kill -9, then the same data and port
        after = settle([first, second, third], partitions)
        assert sorted(len(p) for p in after.values()) == [2, 2, 2]


def test_a_member_paused_past_its_session_is_fenced_and_rejoins(
    kip848_broker: Broker, unique_topic: str, unique_group: str
) -> None:
    create_topic(kip848_broker.bootstrap, unique_topic, 4)
    partitions = all_partitions({unique_topic: 4})
    with Members(kip848_broker.bootstrap, unique_group) as members:
        first = members.start("c0", [unique_topic], CONSUMER_PROTOCOL)
        second = members.start("c1", [unique_topic], CONSUMER_PROTOCOL)
        settle([first, second], partitions)
        os.kill(second.proc.pid, signal.SIGSTOP)  # stuck in processing: no heartbeats
        try:
            # its session (6 s) ends: c0 owns everything
            assert settle([first], partitions)["c0"] == partitions
        finally:
            os.kill(second.proc.pid, signal.SIGCONT)
        # c1 learns it was fenced, drops its partitions (lost) and rejoins
        second.wait_event("lost", timeout=30)
        after = settle([first, second], partitions)
        assert sorted(len(p) for p in after.values()) == [2, 2]


def test_static_member_restarts_without_moving_partitions(
    kip848_broker: Broker, unique_topic: str, unique_group: str
) -> None:
    create_topic(kip848_broker.bootstrap, unique_topic, 4)
    partitions = all_partitions({unique_topic: 4})
    static = {**CONSUMER_PROTOCOL, "group.instance.id": "instance-a"}
    # a session long enough that a's new JVM is back before it ends on a busy machine
    set_group_configs(kip848_broker.bootstrap, unique_group, {"consumer.session.timeout.ms": 45000})
    with Members(kip848_broker.bootstrap, unique_group) as members:
        a = members.start("a", [unique_topic], static)
        b = members.start("b", [unique_topic], CONSUMER_PROTOCOL)
        before = settle([a, b], partitions)
        a.close()  # a static member leaves for a while (epoch -2): nothing moves
        time.sleep(2)
        assert b.assignment() == before["b"]
        again = members.start("a", [unique_topic], static)
        after = settle([again, b], partitions)
        assert after == before


def test_classic_and_consumer_groups_side_by_side(
    kip848_broker: Broker, unique_topic: str, name_factory
) -> None:
    create_topic(kip848_broker.bootstrap, unique_topic, 2)
    producer = Producer({"bootstrap.servers": kip848_broker.bootstrap})
    for i in range(50):
        producer.produce(unique_topic, b"%d" % i, partition=i % 2)
    assert producer.flush(15) == 0
    groups = {"classic": name_factory("classic"), "consumer": name_factory("consumer")}
    consumers = {
        protocol: Consumer(
            {
                "bootstrap.servers": kip848_broker.bootstrap,
                "group.id": group,
                "group.protocol": protocol,
                "auto.offset.reset": "earliest",
            }
        )
        for protocol, group in groups.items()
    }
    try:
        counts = dict.fromkeys(groups, 0)
        for consumer in consumers.values():
            consumer.subscribe([unique_topic])
        deadline = time.monotonic() + 30
        while min(counts.values()) < 50 and time.monotonic() < deadline:
            for protocol, consumer in consumers.items():
                message = consumer.poll(0.05)
                if message is not None and message.error() is None:
                    counts[protocol] += 1
        assert counts == {"classic": 50, "consumer": 50}
        with WireClient(kip848_broker.bootstrap) as client:
            listed = client.call(LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})
            types = {g.group_id: (g.group_type, g.protocol_type) for g in listed.groups}
            assert types[groups["classic"]] == ("classic", "consumer")
            assert types[groups["consumer"]] == ("consumer", "consumer")
            only = client.call(LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["Consumer"]})
            assert groups["consumer"] in {g.group_id for g in only.groups}
            assert groups["classic"] not in {g.group_id for g in only.groups}
            described = client.call(
                CONSUMER_GROUP_DESCRIBE,
                0,
                {
                    "group_ids": [groups["consumer"], groups["classic"]],
                    "include_authorized_operations": False,
                },
            )
            found, missing = described.groups
            assert (found.error_code, found.group_state, found.assignor_name) == (
                0,
                "Stable",
                "uniform",
            )
            [member] = found.members
            assigned = {p for t in member.assignment.topic_partitions for p in t.partitions}
            assert assigned == {0, 1}
            assert [t.topic_name for t in member.assignment.topic_partitions] == [unique_topic]
            assert missing.error_code == 69  # GROUP_ID_NOT_FOUND: a classic group
    finally:
        for consumer in consumers.values():
            consumer.close()


def test_regex_subscription_picks_up_new_topics_and_partitions(
    kip848_broker: Broker, name_factory
) -> None:
    prefix = name_factory("rx")
    first, later = f"{prefix}-a", f"{prefix}-b"
    create_topic(kip848_broker.bootstrap, first, 1)
    create_topic(kip848_broker.bootstrap, name_factory("other"), 1)
    consumer = Consumer(
        {
            "bootstrap.servers": kip848_broker.bootstrap,
            "group.id": name_factory("group"),
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )

    def owned_after(wanted: set[tuple[str, int]]) -> set[tuple[str, int]]:
        deadline = time.monotonic() + 30
        owned: set[tuple[str, int]] = set()
        while time.monotonic() < deadline and owned != wanted:
            consumer.poll(0.1)
            owned = {(tp.topic, tp.partition) for tp in consumer.assignment()}
        return owned

    try:
        consumer.subscribe([f"^{prefix}-.*"])
        assert owned_after({(first, 0)}) == {(first, 0)}
        create_topic(kip848_broker.bootstrap, later, 2)
        assert owned_after({(first, 0), (later, 0), (later, 1)}) == {
            (first, 0),
            (later, 0),
            (later, 1),
        }
        admin = AdminClient({"bootstrap.servers": kip848_broker.bootstrap})
        admin.create_partitions([NewPartitions(first, 3)])[first].result(15)
        assert len(owned_after({(first, p) for p in range(3)} | {(later, 0), (later, 1)})) == 5
    finally:
        consumer.close()


def test_librdkafka_classic_and_consumer_members_share_one_group(
    kip848_broker: Broker, unique_topic: str, unique_group: str
) -> None:
    """A classic member joins a consumer group as a classic member of it; when the
    consumer-protocol member leaves, the group turns classic again."""
    create_topic(kip848_broker.bootstrap, unique_topic, 2)

    def member(protocol: str) -> Consumer:
        consumer = Consumer(
            {
                "bootstrap.servers": kip848_broker.bootstrap,
                "group.id": unique_group,
                "group.protocol": protocol,
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe([unique_topic])
        return consumer

    def owned(consumers: list[Consumer], want: list[set[int]]) -> None:
        deadline = time.monotonic() + 30
        got: list[set[int]] = []
        while time.monotonic() < deadline:
            for consumer in consumers:
                consumer.poll(0.05)
            got = [{tp.partition for tp in c.assignment()} for c in consumers]
            if got == want:
                return
        raise AssertionError(f"assignments {got}, wanted {want}")

    def group_type() -> str:
        with WireClient(kip848_broker.bootstrap) as client:
            listed = client.call(LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})
        return next(g.group_type for g in listed.groups if g.group_id == unique_group)

    modern = member("consumer")
    owned([modern], [{0, 1}])
    classic = member("classic")
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            classic.poll(0.05)
            modern.poll(0.05)
            split = [{tp.partition for tp in c.assignment()} for c in (modern, classic)]
            if all(len(p) == 1 for p in split) and split[0] != split[1]:
                break
        else:
            raise AssertionError(f"no split: {split}")
        assert group_type() == "consumer"
        modern.close()  # the last consumer-protocol member: the group turns classic
        owned([classic], [{0, 1}])
        assert group_type() == "classic"
    finally:
        classic.close()


def test_the_consumer_protocol_can_be_switched_off(broker_factory: BrokerFactory) -> None:
    broker = broker_factory({"group.coordinator.rebalance.protocols": "classic"})
    with WireClient(broker.bootstrap) as client:
        listed = {a.api_key for a in client.call(API_VERSIONS, 3, SOFTWARE).api_keys}
        assert 68 not in listed and 69 not in listed and 11 in listed
        answer = client.call(
            CONSUMER_GROUP_HEARTBEAT,
            0,
            {
                "group_id": "g",
                "member_id": "m",
                "member_epoch": 0,
                "rebalance_timeout": 30000,
                "subscribed_topic_names": ["t"],
                "topic_partitions": [],
            },
        )
        assert answer.error_code == 35  # UNSUPPORTED_VERSION


def test_a_member_that_does_not_revoke_within_its_rebalance_timeout_is_fenced(
    kip848_broker: Broker, unique_topic: str, unique_group: str
) -> None:
    """Driven by hand on the wire: member a keeps saying it owns what it must give up;
    after its rebalance timeout (2 s) the broker fences it and b gets everything."""
    create_topic(kip848_broker.bootstrap, unique_topic, 2)

    def beat(client: WireClient, member_id: str, epoch: int, owned: Any) -> Any:
        body = {
            "group_id": unique_group,
            "member_id": member_id,
            "member_epoch": epoch,
            "rebalance_timeout": 2000,
            "subscribed_topic_names": [unique_topic] if epoch == 0 else None,
            "topic_partitions": owned,
        }
        return client.call(CONSUMER_GROUP_HEARTBEAT, 0, body)

    with WireClient(kip848_broker.bootstrap) as a, WireClient(kip848_broker.bootstrap) as b:
        joined = beat(a, "member-a", 0, [])
        assert joined.error_code == 0 and joined.member_epoch == 1
        everything = [
            {"topic_id": t.topic_id, "partitions": list(t.partitions)}
            for t in joined.assignment.topic_partitions
        ]
        assert sum(len(t["partitions"]) for t in everything) == 2
        second = beat(b, "member-b", 0, [])
        assert second.error_code == 0
        told = beat(a, "member-a", 1, everything)
        assert told.error_code == 0 and told.member_epoch == 1  # revoke one, at epoch 1
        assert sum(len(t.partitions) for t in told.assignment.topic_partitions) == 1
        b_epoch, b_partitions = second.member_epoch, 0

        def beat_b() -> None:  # b heartbeats all along, noting the partitions it is given
            nonlocal b_epoch, b_partitions
            taken = beat(b, "member-b", b_epoch, None)
            b_epoch = taken.member_epoch
            if taken.assignment is not None:
                b_partitions = sum(len(t.partitions) for t in taken.assignment.topic_partitions)

        started = time.monotonic()
        answer = told
        while answer.error_code == 0 and time.monotonic() - started < 10:
            time.sleep(0.3)
            answer = beat(a, "member-a", 1, everything)  # never lets go
            beat_b()
        assert answer.error_code in (25, 110), answer  # UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH
        assert 1.5 < time.monotonic() - started < 8
        deadline = time.monotonic() + 10
        while b_partitions != 2:
            assert time.monotonic() < deadline, "b never got both partitions"
            time.sleep(0.2)
            beat_b()
