"""Share groups on the wire, where no client library has an API: the share-group offset
admin APIs, the share-group state APIs, FindCoordinator for share keys, and the errors
that bad share requests get (they change nothing)."""

from __future__ import annotations

import base64
import time
import uuid
from typing import Any

from confluent_kafka import AcknowledgeType, TopicPartition
from confluent_kafka.admin import AdminClient
from helpers.broker import Broker, BrokerFactory
from helpers.wire import WireClient

from share.sharing import (
    FAST,
    earliest_group,
    explicit,
    poll_once,
    poll_until,
    produce,
    share_consumer,
)

FIND_COORDINATOR, JOIN_GROUP, DESCRIBE_GROUPS, LIST_GROUPS, METADATA = 10, 11, 15, 16, 3
CONSUMER_HEARTBEAT = 68
SHARE_HEARTBEAT, SHARE_DESCRIBE, SHARE_FETCH, SHARE_ACK = 76, 77, 78, 79
INITIALIZE, READ, WRITE, DELETE_STATE, READ_SUMMARY = 83, 84, 85, 86, 87
DESCRIBE_OFFSETS, ALTER_OFFSETS, DELETE_OFFSETS = 90, 91, 92

NONE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST, INVALID_RECORD_STATE = 0, 3, 42, 121
UNKNOWN_MEMBER_ID, NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, FENCED_STATE_EPOCH = 25, 68, 69, 124
SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH = 122, 123
ACCEPT = 1
RELEASE = AcknowledgeType.RELEASE


def topic_id(client: WireClient, name: str) -> uuid.UUID:
    reply = client.call(METADATA, 12, {"topics": [{"name": name}]})
    found: uuid.UUID = reply.topics[0].topic_id
    return found


def describe_offsets(client: WireClient, group: str, topic: str | None) -> Any:
    topics = None if topic is None else [{"topic_name": topic, "partitions": [0]}]
    return client.call(DESCRIBE_OFFSETS, 1, {"groups": [{"group_id": group, "topics": topics}]})


def consume_all(broker: Broker, group: str, topic: str, count: int) -> list[int]:
    consumer = share_consumer(broker.bootstrap, group, [topic])
    try:
        got = poll_until(consumer, count, timeout=30)
        consumer.commit_sync()  # the last poll's records are accepted (close alone does not)
    finally:
        consumer.close()
    return sorted(d.offset for d in got)


def test_share_group_offsets_described_altered_and_deleted(
    broker_factory: BrokerFactory, unique_topic: str, unique_group: str
) -> None:
    broker = broker_factory(FAST)
    group = earliest_group(broker.bootstrap, unique_group)
    with WireClient(broker.bootstrap) as client:
        client.create_topic(unique_topic, 1)
        produce(broker.bootstrap, unique_topic, [f"v{i}".encode() for i in range(10)])
        assert consume_all(broker, group, unique_topic, 10) == list(range(10))
        described = describe_offsets(client, group, unique_topic).groups[0]
        assert described.error_code == NONE
        (partition,) = described.topics[0].partitions
        assert (partition.start_offset, partition.lag) == (10, 0)
        produce(broker.bootstrap, unique_topic, [f"w{i}".encode() for i in range(5)])
        # null topics: every topic the group has state for
        everything = describe_offsets(client, group, None).groups[0]
        assert [t.topic_name for t in everything.topics] == [unique_topic]
        assert everything.topics[0].partitions[0].lag == 5
        # back to offset 3: those records are delivered again
        body = {
            "group_id": group,
            "topics": [
                {
                    "topic_name": unique_topic,
                    "partitions": [{"partition_index": 0, "start_offset": 3}],
                }
            ],
        }
        altered = client.call(ALTER_OFFSETS, 0, body)
        assert altered.error_code == NONE
        assert altered.responses[0].partitions[0].error_code == NONE
        assert (
            describe_offsets(client, group, unique_topic)
            .groups[0]
            .topics[0]
            .partitions[0]
            .start_offset
            == 3
        )
        assert consume_all(broker, group, unique_topic, 12) == list(range(3, 15))
        # offsets past the end, unknown topics
        past = {
            **body,
            "topics": [
                {**body["topics"][0], "partitions": [{"partition_index": 0, "start_offset": 99}]}
            ],
        }
        # (taken as it is, as on Kafka: the lag is then negative)
        assert client.call(ALTER_OFFSETS, 0, past).responses[0].partitions[0].error_code == NONE
        far = describe_offsets(client, group, unique_topic).groups[0].topics[0].partitions[0]
        assert (far.start_offset, far.lag) == (99, 15 - 99)
        unknown = {**body, "topics": [{**body["topics"][0], "topic_name": "no-such-topic"}]}
        assert (
            client.call(ALTER_OFFSETS, 0, unknown).responses[0].partitions[0].error_code
            == UNKNOWN_TOPIC_OR_PARTITION
        )
        # deleted: the group starts the topic again where share.auto.offset.reset says
        deleted = client.call(
            DELETE_OFFSETS, 0, {"group_id": group, "topics": [{"topic_name": unique_topic}]}
        )
        assert (deleted.error_code, deleted.responses[0].error_code) == (NONE, NONE)
        assert (
            describe_offsets(client, group, unique_topic)
            .groups[0]
            .topics[0]
            .partitions[0]
            .start_offset
            == -1
        )
        assert consume_all(broker, group, unique_topic, 15) == list(range(15))
        # not while the group has members
        member = share_consumer(broker.bootstrap, group, [unique_topic])
        try:
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                member.poll(0.2)
                reply = client.call(ALTER_OFFSETS, 0, body)
                if reply.error_code == NON_EMPTY_GROUP:
                    break
            assert reply.error_code == NON_EMPTY_GROUP
            assert (
                client.call(
                    DELETE_OFFSETS, 0, {"group_id": group, "topics": [{"topic_name": unique_topic}]}
                ).error_code
                == NON_EMPTY_GROUP
            )
        finally:
            member.close()
        # a group without state is not looked up, as on Kafka
        missing = describe_offsets(client, "no-such-group", unique_topic).groups[0]
        assert missing.error_code == NONE
        (partition,) = missing.topics[0].partitions
        assert (partition.start_offset, partition.lag) == (-1, -1)


def test_share_group_state_apis(
    shared_broker: Broker, unique_group: str, unique_topic: str
) -> None:
    with WireClient(shared_broker.bootstrap) as client:
        client.create_topic(unique_topic, 1)
        topic = topic_id(client, unique_topic)

    def body(**partition: Any) -> dict[str, Any]:
        return {
            "group_id": unique_group,
            "topics": [{"topic_id": topic, "partitions": [{"partition": 0, **partition}]}],
        }

    def code(reply: Any) -> int:
        result: int = reply.results[0].partitions[0].error_code
        return result

    with WireClient(shared_broker.bootstrap) as client:
        # no state yet: refused, as Kafka's share coordinator refuses it
        assert code(client.call(READ, 0, body(leader_epoch=0))) == INVALID_REQUEST
        assert code(client.call(INITIALIZE, 0, body(state_epoch=1, start_offset=100))) == NONE
        read = client.call(READ, 0, body(leader_epoch=0)).results[0].partitions[0]
        assert (read.error_code, read.state_epoch, read.start_offset, read.state_batches) == (
            NONE,
            1,
            100,
            (),
        )
        batches = [
            {"first_offset": 100, "last_offset": 104, "delivery_state": 2, "delivery_count": 1},
            {"first_offset": 105, "last_offset": 109, "delivery_state": 0, "delivery_count": 2},
        ]
        written = body(state_epoch=1, leader_epoch=0, start_offset=-1, state_batches=batches)
        assert code(client.call(WRITE, 1, written)) == NONE
        read = client.call(READ, 0, body(leader_epoch=0)).results[0].partitions[0]
        # the acknowledged run moved the start on
        assert read.start_offset == 105
        assert [
            (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
            for b in read.state_batches
        ] == [(105, 109, 0, 2)]
        summary = client.call(READ_SUMMARY, 1, body(leader_epoch=0)).results[0].partitions[0]
        assert (summary.error_code, summary.start_offset, summary.state_epoch) == (NONE, 105, 1)
        stale = body(state_epoch=0, leader_epoch=0, start_offset=-1, state_batches=[])
        assert code(client.call(WRITE, 1, stale)) == FENCED_STATE_EPOCH
        assert code(client.call(DELETE_STATE, 0, body())) == NONE
        assert code(client.call(READ, 0, body(leader_epoch=0))) == INVALID_REQUEST
        # a topic no broker knows
        stranger = {
            "group_id": unique_group,
            "topics": [
                {
                    "topic_id": uuid.uuid4(),
                    "partitions": [{"partition": 0, "state_epoch": 1, "start_offset": 0}],
                }
            ],
        }
        assert code(client.call(INITIALIZE, 0, stranger)) == UNKNOWN_TOPIC_OR_PARTITION
        # FindCoordinator for the share-partition's key
        key = f"{unique_group}:{base64.urlsafe_b64encode(topic.bytes).rstrip(b'=').decode()}:0"
        found = client.call(FIND_COORDINATOR, 6, {"key_type": 2, "coordinator_keys": [key, "bad"]})
        assert [(c.key, c.error_code) for c in found.coordinators] == [
            (key, NONE),
            ("bad", INVALID_REQUEST),
        ]
        assert found.coordinators[0].port == shared_broker.port


def share_fetch(
    client: WireClient,
    group: str,
    member: str,
    epoch: int,
    topic: uuid.UUID,
    acks: list[dict[str, Any]] | None = None,
) -> Any:
    partition: dict[str, Any] = {"partition_index": 0}
    if acks:
        partition["acknowledgement_batches"] = acks
    return client.call(
        SHARE_FETCH,
        1,
        {
            "group_id": group,
            "member_id": member,
            "share_session_epoch": epoch,
            "max_wait": 500,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "max_records": 100,
            "batch_size": 100,
            "topics": [{"topic_id": topic, "partitions": [partition]}],
        },
    )


def test_bad_share_requests_get_errors_and_change_nothing(
    broker_factory: BrokerFactory, unique_topic: str, unique_group: str
) -> None:
    broker = broker_factory({k: v for k, v in FAST.items() if "lock" not in k})  # 30 s locks
    group = earliest_group(broker.bootstrap, unique_group)
    member, other = str(uuid.uuid4()), str(uuid.uuid4())
    with WireClient(broker.bootstrap) as client, WireClient(broker.bootstrap) as second:
        client.create_topic(unique_topic, 1)
        produce(broker.bootstrap, unique_topic, [f"v{i}".encode() for i in range(5)])
        tid = topic_id(client, unique_topic)
        joined = client.call(
            SHARE_HEARTBEAT,
            1,
            {
                "group_id": group,
                "member_id": member,
                "member_epoch": 0,
                "subscribed_topic_names": [unique_topic],
            },
        )
        assert joined.error_code == NONE and joined.member_epoch > 0
        # no session yet
        ack = {"group_id": group, "member_id": member, "share_session_epoch": 1, "topics": []}
        assert client.call(SHARE_ACK, 1, ack).error_code == SHARE_SESSION_NOT_FOUND
        assert share_fetch(client, group, member, 3, tid).error_code == SHARE_SESSION_NOT_FOUND
        fetched = share_fetch(client, group, member, 0, tid)
        assert fetched.error_code == NONE
        acquired = fetched.responses[0].partitions[0].acquired_records
        assert [(a.first_offset, a.last_offset) for a in acquired] == [(0, 4)]
        # a stale session epoch
        assert share_fetch(client, group, member, 7, tid).error_code == INVALID_SHARE_SESSION_EPOCH
        # another member acknowledging records it does not hold, or offsets never acquired
        second.call(
            SHARE_HEARTBEAT,
            1,
            {
                "group_id": group,
                "member_id": other,
                "member_epoch": 0,
                "subscribed_topic_names": [unique_topic],
            },
        )
        assert share_fetch(second, group, other, 0, tid).error_code == NONE
        not_held = [{"first_offset": 0, "last_offset": 4, "acknowledge_types": [ACCEPT]}]
        answer = share_fetch(second, group, other, 1, tid, not_held).responses[0].partitions[0]
        assert answer.acknowledge_error_code == INVALID_RECORD_STATE
        never = [{"first_offset": 50, "last_offset": 60, "acknowledge_types": [ACCEPT]}]
        answer = share_fetch(client, group, member, 1, tid, never).responses[0].partitions[0]
        assert answer.acknowledge_error_code == INVALID_REQUEST  # past what is in flight
        # nothing changed: the holder's acknowledgement still works, in one piece
        acks = {
            "group_id": group,
            "member_id": member,
            "share_session_epoch": 2,
            "topics": [
                {
                    "topic_id": tid,
                    "partitions": [{"partition_index": 0, "acknowledgement_batches": not_held}],
                }
            ],
        }
        done = client.call(SHARE_ACK, 1, acks)
        assert done.error_code == NONE and done.responses[0].partitions[0].error_code == NONE
        assert (
            describe_offsets(client, group, unique_topic)
            .groups[0]
            .topics[0]
            .partitions[0]
            .start_offset
            == 5
        )
        # groups that are not share groups, and share groups asked for as others
        unknown = client.call(
            SHARE_HEARTBEAT,
            1,
            {"group_id": group, "member_id": str(uuid.uuid4()), "member_epoch": 3},
        )
        assert unknown.error_code == UNKNOWN_MEMBER_ID
        described = client.call(SHARE_DESCRIBE, 1, {"group_ids": ["no-such-group", group]})
        assert [g.error_code for g in described.groups] == [GROUP_ID_NOT_FOUND, NONE]
        assert len(described.groups[1].members) == 2
        as_consumer = client.call(
            CONSUMER_HEARTBEAT,
            0,
            {
                "group_id": group,
                "member_id": str(uuid.uuid4()),
                "member_epoch": 0,
                "rebalance_timeout": 5000,
                "subscribed_topic_names": [unique_topic],
                "topic_partitions": [],
            },
        )
        assert as_consumer.error_code == GROUP_ID_NOT_FOUND
        listed = client.call(LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["share"]})
        assert [(g.group_id, g.group_type) for g in listed.groups] == [(group, "share")]


def test_records_deleted_from_the_log_leave_the_share_partition(
    broker_factory: BrokerFactory, unique_topic: str, unique_group: str
) -> None:
    """Released records that DeleteRecords removes are never delivered, and the share
    partition's start offset moves past them."""
    broker = broker_factory(FAST)
    group = earliest_group(broker.bootstrap, unique_group)
    with WireClient(broker.bootstrap) as client:
        client.create_topic(unique_topic, 1)
        produce(broker.bootstrap, unique_topic, [f"v{i}".encode() for i in range(10)])
        first = explicit(broker.bootstrap, group, [unique_topic])
        try:
            got: list = []
            deadline = time.monotonic() + 30
            while len(got) < 10 and time.monotonic() < deadline:
                got += poll_once(first)
            for message, d in got:
                first.acknowledge(message, AcknowledgeType.ACCEPT if d.offset < 5 else RELEASE)
            first.commit_sync()
        finally:
            first.close()
        start = describe_offsets(client, group, unique_topic).groups[0].topics[0].partitions[0]
        assert start.start_offset == 5
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        deleted = admin.delete_records([TopicPartition(unique_topic, 0, 8)])
        for future in deleted.values():
            future.result(timeout=15)
        rest = share_consumer(broker.bootstrap, group, [unique_topic])
        try:
            again = poll_until(rest, 2, timeout=30) + poll_until(rest, 1, timeout=2)
            rest.commit_sync()
        finally:
            rest.close()
        assert [(d.offset, d.delivery_count) for d in again] == [(8, 2), (9, 2)]
        after = describe_offsets(client, group, unique_topic).groups[0].topics[0].partitions[0]
        assert (after.start_offset, after.lag) == (10, 0)
