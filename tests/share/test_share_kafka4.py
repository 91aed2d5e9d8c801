"""Share groups where Kafka 4.x answers in particular ways: offsets set before a share
group exists, a member opening a new share session while it holds records, and the
ShareFetch v2 fields (acquire mode, renew-only requests, record and batch sizes).

These run on the broker's default settings (30 s record locks, default batch sizes), and
those that need no restart run against Apache Kafka 4.4 as well (`either_broker`)."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from helpers.broker import BrokerFactory
from helpers.topics import create_topic
from helpers.wire import WireClient

from share.sharing import (
    earliest_group,
    poll_until,
    produce,
    share_among,
    share_consumer,
)
from share.test_share_wire import (
    ALTER_OFFSETS,
    FIND_COORDINATOR,
    GROUP_ID_NOT_FOUND,
    INVALID_RECORD_STATE,
    INVALID_REQUEST,
    INVALID_SHARE_SESSION_EPOCH,
    LIST_GROUPS,
    NONE,
    SHARE_DESCRIBE,
    SHARE_FETCH,
    SHARE_HEARTBEAT,
    describe_offsets,
    topic_id,
)

ACCEPT, RENEW = 1, 4
UNKNOWN_SERVER_ERROR = -1
NOT_READY = (14, 15, 16)  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR
BATCH_OPTIMIZED, RECORD_LIMIT = 0, 1


def alter(client: WireClient, group: str, topic: str, start: int) -> Any:
    body = {
        "group_id": group,
        "topics": [
            {"topic_name": topic, "partitions": [{"partition_index": 0, "start_offset": start}]}
        ],
    }
    return client.call(ALTER_OFFSETS, 0, body)


def join(client: WireClient, group: str, topic: str) -> str:
    """A new member of the share group (asked again while the group's coordinator is
    not ready, as on a Kafka broker that has just created its offsets topic)."""
    member = str(uuid.uuid4())
    body = {"group_id": group, "member_id": member, "member_epoch": 0}
    deadline = time.monotonic() + 15
    while True:
        client.call(FIND_COORDINATOR, 6, {"key_type": 0, "coordinator_keys": [group]})
        joined = client.call(SHARE_HEARTBEAT, 1, {**body, "subscribed_topic_names": [topic]})
        if joined.error_code not in NOT_READY or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert joined.error_code == NONE, joined
    return member


def fetch(
    client: WireClient,
    group: str,
    member: str,
    epoch: int,
    topic: uuid.UUID,
    acks: list[dict[str, Any]] | None = None,
    **fields: Any,
) -> Any:
    """ShareFetch v2 of partition 0 of `topic`; `fields` override the defaults."""
    partition: dict[str, Any] = {"partition_index": 0}
    if acks:
        partition["acknowledgement_batches"] = acks
    body = {
        "group_id": group,
        "member_id": member,
        "share_session_epoch": epoch,
        "max_wait": 500,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "max_records": 500,
        "batch_size": 500,
        "topics": [{"topic_id": topic, "partitions": [partition]}],
        **fields,
    }
    return client.call(SHARE_FETCH, 2, body)


def acquired(answer: Any) -> list[tuple[int, int, int]]:
    assert answer.error_code == NONE, answer
    return [
        (a.first_offset, a.last_offset, a.delivery_count)
        for topic in answer.responses
        for p in topic.partitions
        for a in p.acquired_records
    ]


def ack_error(answer: Any) -> int:
    assert answer.error_code == NONE, answer
    code: int = answer.responses[0].partitions[0].acknowledge_error_code
    return code


def lag(client: WireClient, group: str, topic: str, expected: int = 0) -> int:
    """The share-partition's lag, once `expected` or after 10 s (Kafka writes the state
    a moment after it answers an acknowledgement)."""
    deadline = time.monotonic() + 10
    while True:
        found: int = describe_offsets(client, group, topic).groups[0].topics[0].partitions[0].lag
        if found == expected or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def produce_batches(bootstrap: str, topic: str, sizes: list[int]) -> None:
    """One stored batch of each size, in order."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
    for size in sizes:
        for i in range(size):
            producer.produce(topic, f"r{i}".encode(), partition=0)
        assert producer.flush(30) == 0


def test_offsets_set_before_a_share_group_exists_create_it(
    broker_factory: BrokerFactory, unique_topic: str, unique_group: str
) -> None:
    broker = broker_factory()  # the defaults: share.auto.offset.reset is latest
    group, classic = unique_group, unique_group + "-classic"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    with WireClient(broker.bootstrap) as client:
        client.create_topic(unique_topic, 1)
        produce(broker.bootstrap, unique_topic, [f"v{i}".encode() for i in range(10)])
        gone = client.call(SHARE_DESCRIBE, 1, {"group_ids": [group]}).groups[0]
        assert (gone.error_code, gone.error_message, gone.group_state) == (
            GROUP_ID_NOT_FOUND,
            f"Group {group} not found.",
            "",
        )
        # an unknown topic alone creates nothing
        assert alter(client, group, "no-such-topic", 0).responses[0].partitions[0].error_code == 3
        assert client.call(SHARE_DESCRIBE, 1, {"group_ids": [group]}).groups[0].error_code == (
            GROUP_ID_NOT_FOUND
        )
        altered = alter(client, group, unique_topic, 4)
        assert altered.error_code == NONE
        assert altered.responses[0].partitions[0].error_code == NONE
        # the group now exists, empty, at epoch 1, and its state can be read
        described = client.call(SHARE_DESCRIBE, 1, {"group_ids": [group]}).groups[0]
        assert (described.error_code, described.group_state, described.members) == (
            NONE,
            "Empty",
            (),
        )
        assert (described.group_epoch, described.assignment_epoch) == (1, 1)
        # altered again, it stays at its epoch
        assert alter(client, group, unique_topic, 4).error_code == NONE
        described = client.call(SHARE_DESCRIBE, 1, {"group_ids": [group]}).groups[0]
        assert (described.group_epoch, described.assignment_epoch) == (1, 1)
        offsets = describe_offsets(client, group, unique_topic).groups[0]
        assert offsets.error_code == NONE
        assert (
            offsets.topics[0].partitions[0].start_offset,
            offsets.topics[0].partitions[0].lag,
        ) == (
            4,
            6,
        )
        listed = client.call(LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["share"]})
        assert (group, "share", "Empty") in [
            (g.group_id, g.group_type, g.group_state) for g in listed.groups
        ]
    # it survives a kill -9
    broker.restart(hard=True)
    with WireClient(broker.bootstrap) as client:
        described = client.call(SHARE_DESCRIBE, 1, {"group_ids": [group]}).groups[0]
        assert (described.error_code, described.group_state) == (NONE, "Empty")
    # a consumer joining later starts where the offsets were set, not at the latest
    consumer = share_consumer(broker.bootstrap, group, [unique_topic])
    try:
        got = poll_until(consumer, 6, timeout=30)
        consumer.commit_sync()
    finally:
        consumer.close()
    assert sorted(d.offset for d in got) == list(range(4, 10))
    # and the group can be deleted through the Admin client, once the member has left
    deadline = time.monotonic() + 15
    while True:
        try:
            admin.delete_consumer_groups([group], request_timeout=15)[group].result(timeout=15)
            break
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.NON_EMPTY_GROUP or time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    # a group of another kind is not made a share group
    committer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": classic})
    try:
        committer.commit(offsets=[TopicPartition(unique_topic, 0, 1)], asynchronous=False)
    finally:
        committer.close()
    with WireClient(broker.bootstrap) as client:
        described = client.call(SHARE_DESCRIBE, 1, {"group_ids": [group]}).groups[0]
        assert (described.error_code, described.error_message) == (
            GROUP_ID_NOT_FOUND,
            f"Group {group} not found.",
        )
        refused = alter(client, classic, unique_topic, 0)
        assert (refused.error_code, refused.error_message) == (
            GROUP_ID_NOT_FOUND,
            f"Group {classic} is not a share group.",
        )
        described = client.call(SHARE_DESCRIBE, 1, {"group_ids": [classic]}).groups[0]
        assert described.error_message == f"Group {classic} is not a share group."


def test_a_new_share_session_leaves_the_members_records_with_it(
    either_broker: str, unique_topic: str, unique_group: str
) -> None:
    """Opening a share session again (epoch 0), as a client does after
    SHARE_SESSION_NOT_FOUND or INVALID_SHARE_SESSION_EPOCH, replaces the session only:
    the records the member holds stay its own."""
    bootstrap = either_broker
    with (
        WireClient(bootstrap) as client,
        WireClient(bootstrap) as again,
        WireClient(bootstrap) as other_client,
    ):
        client.create_topic(unique_topic, 1)
        tid = topic_id(client, unique_topic)
        earliest_group(bootstrap, unique_group)  # no race with the share-partition's start
        member, other = (
            join(client, unique_group, unique_topic),
            join(other_client, unique_group, unique_topic),
        )
        assert acquired(fetch(client, unique_group, member, 0, tid)) == []
        produce(bootstrap, unique_topic, [f"v{i}".encode() for i in range(5)])
        deadline = time.monotonic() + 15
        got: list[tuple[int, int, int]] = []
        epoch = 1
        while not got and time.monotonic() < deadline:
            got = acquired(fetch(client, unique_group, member, epoch, tid))
            epoch += 1
        assert got == [(0, 4, 1)]
        # a new session, from another connection: nothing is given back
        assert acquired(fetch(again, unique_group, member, 0, tid, max_wait=0)) == []
        assert acquired(fetch(other_client, unique_group, other, 0, tid, max_wait=200)) == []
        # the old session is gone; the member's acknowledgement in the new one holds
        accept = [{"first_offset": 0, "last_offset": 4, "acknowledge_types": [ACCEPT]}]
        stale = fetch(client, unique_group, member, epoch, tid, accept)
        assert stale.error_code == INVALID_SHARE_SESSION_EPOCH
        assert ack_error(fetch(again, unique_group, member, 1, tid, accept, max_wait=0)) == NONE
        assert lag(client, unique_group, unique_topic) == 0
        # what a member holds under a new session still goes back when its connection closes
        produce(bootstrap, unique_topic, [b"w"])
        deadline = time.monotonic() + 15
        got, epoch = [], 2
        while not got and time.monotonic() < deadline:
            got = acquired(fetch(again, unique_group, member, epoch, tid))
            epoch += 1
        assert got == [(5, 5, 1)]
    with WireClient(bootstrap) as client:
        member = join(client, unique_group, unique_topic)
        assert acquired(fetch(client, unique_group, member, 0, tid, max_wait=2000)) == [(5, 5, 2)]
        accept = [{"first_offset": 5, "last_offset": 5, "acknowledge_types": [ACCEPT]}]
        assert ack_error(fetch(client, unique_group, member, 1, tid, accept, max_wait=0)) == NONE
        assert lag(client, unique_group, unique_topic) == 0


def test_share_fetch_v2_fields(either_broker: str, unique_topic: str, unique_group: str) -> None:
    bootstrap = either_broker
    with WireClient(bootstrap) as client:
        client.create_topic(unique_topic, 1)
        tid = topic_id(client, unique_topic)
        earliest_group(bootstrap, unique_group)  # no race with the share-partition's start
        member = join(client, unique_group, unique_topic)
        produce_batches(bootstrap, unique_topic, [4, 4, 4, 10])
        assert acquired(fetch(client, unique_group, member, 0, tid, max_records=0)) == []
        epoch = 1

        def next_fetch(**fields: Any) -> Any:
            nonlocal epoch
            answer = fetch(client, unique_group, member, epoch, tid, **fields)
            epoch += 1
            return answer

        # renew-only requests must not ask for records
        wrong = next_fetch(is_renew_ack=True)
        assert wrong.error_code == INVALID_REQUEST
        epoch -= 1  # the refused request did not move the session on
        # max_records 0: an answer at once, with nothing acquired though records wait
        began = time.monotonic()
        assert acquired(next_fetch(max_records=0, max_wait=5000)) == []
        assert time.monotonic() - began < 2
        # the record-limit mode cuts a stored batch where the limit falls
        got, deadline = [], time.monotonic() + 15
        while not got and time.monotonic() < deadline:  # Kafka may still be loading
            got = acquired(next_fetch(max_records=3, share_acquire_mode=RECORD_LIMIT))
        assert got == [(0, 2, 1)]
        # the cut batch's rest and the next batch are separate ranges
        got = acquired(next_fetch(max_records=2, share_acquire_mode=RECORD_LIMIT))
        assert got == [(3, 3, 1), (4, 4, 1)]
        # batch-optimized: whole stored batches, cut in locked pieces of >= batch_size
        got = acquired(next_fetch(max_records=100, batch_size=4))
        # (5-7 is the rest of a batch cut before, so a range of its own)
        assert got == [(5, 7, 1), (8, 11, 1), (12, 21, 1)]
        # a renew-only request renews and fetches nothing
        renew = [{"first_offset": 0, "last_offset": 21, "acknowledge_types": [RENEW]}]
        fields = {"max_wait": 0, "min_bytes": 0, "max_bytes": 0, "max_records": 0}
        renewed = fetch(
            client, unique_group, member, epoch, tid, renew, is_renew_ack=True, **fields
        )
        epoch += 1
        assert ack_error(renewed) == NONE
        assert acquired(renewed) == []
        # every record is still the member's: all of them can be accepted
        accept = [{"first_offset": 0, "last_offset": 21, "acknowledge_types": [ACCEPT]}]
        done = fetch(client, unique_group, member, epoch, tid, accept, max_wait=0)
        assert ack_error(done) == NONE
        assert lag(client, unique_group, unique_topic) == 0
        # an acquire mode Kafka does not know fails as it fails on Kafka
        unknown = fetch(client, unique_group, member, epoch + 1, tid, share_acquire_mode=7)
        assert unknown.error_code == UNKNOWN_SERVER_ERROR


def test_members_share_a_partition_on_the_defaults(
    either_broker: str, unique_topic: str, unique_group: str
) -> None:
    """librdkafka ShareConsumers on the broker's defaults (2000 record locks a
    partition, 30 s locks, the batch size the client asks for): every record is
    delivered once, and more than one member gets records."""
    bootstrap = either_broker
    create_topic(bootstrap, unique_topic, 1)
    group = earliest_group(bootstrap, unique_group)
    values = [f"r{i}".encode() for i in range(5000)]
    produce(bootstrap, unique_topic, values, batch_records=50)
    received = share_among(bootstrap, group, unique_topic, 2, len(values))
    every = [d.value for got in received.values() for d in got]
    assert Counter(every) == Counter(values)
    assert all(received[i] for i in range(2)), {i: len(g) for i, g in received.items()}
    assert {d.delivery_count for got in received.values() for d in got} == {1}


def test_acknowledgements_are_checked_as_on_kafka(
    either_broker: str, unique_topic: str, unique_group: str
) -> None:
    """Offsets already done pass unremarked; offsets past what is in flight are a bad
    request; an unknown acknowledge type too; a member acknowledges only its own."""
    bootstrap = either_broker
    with WireClient(bootstrap) as client, WireClient(bootstrap) as other_client:
        client.create_topic(unique_topic, 1)
        group = earliest_group(bootstrap, unique_group)
        produce(bootstrap, unique_topic, [b"x"] * 5)
        tid = topic_id(client, unique_topic)
        member, other = join(client, group, unique_topic), join(other_client, group, unique_topic)
        got, epoch, deadline = [], 0, time.monotonic() + 15
        while not got and time.monotonic() < deadline:
            got = acquired(fetch(client, group, member, epoch, tid, max_wait=1000))
            epoch += 1
        assert got == [(0, 4, 1)]
        assert acquired(fetch(other_client, group, other, 0, tid, max_wait=0)) == []

        def ack(who: str, first: int, last: int, kind: int = ACCEPT) -> tuple[int, str | None]:
            nonlocal epoch
            connection, session_epoch = (client, epoch) if who == member else (other_client, 1)
            batch = [{"first_offset": first, "last_offset": last, "acknowledge_types": [kind]}]
            answer = fetch(connection, group, who, session_epoch, tid, batch, max_wait=0)
            if who == member:
                epoch += 1
            part = answer.responses[0].partitions[0]
            return part.acknowledge_error_code, part.acknowledge_error_message

        assert ack(member, 50, 60) == (
            INVALID_REQUEST,
            "Batch record not found. The first offset in request is past acquired records.",
        )
        assert ack(member, 3, 8) == (
            INVALID_REQUEST,
            "Batch record not found. The last offset in request is past acquired records.",
        )
        assert ack(other, 0, 1) == (INVALID_RECORD_STATE, "Member is not the owner of batch record")
        assert ack(member, 3, 4, 9) == (INVALID_REQUEST, None)
        assert ack(member, 0, 1) == (NONE, None)
        assert ack(member, 0, 1) == (NONE, None)  # below the start: done already
        assert ack(member, 1, 2) == (NONE, None)  # partly below the start
        assert lag(client, group, unique_topic, 2) == 2
