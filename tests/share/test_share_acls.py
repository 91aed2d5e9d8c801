"""Share groups under ACLs, checked as Kafka checks them: READ on the group for the
heartbeat, fetches and acknowledgements, DESCRIBE on the subscribed topics for the
heartbeat, READ on a topic for its records, DESCRIBE on the group to describe it.

Every client here is User:ANONYMOUS. It may read the topic "shared" through the group
"readers"; it may write and describe the topic "secret" but not read it; it has no rights
at all on the group "others"."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from helpers.acl_admin import Acl, start_with_acls
from helpers.broker import Broker, BrokerFactory
from helpers.wire import WireClient

from share.sharing import FAST, earliest_group, poll_for, poll_until, produce, share_consumer

pytestmark = pytest.mark.timeout(300)

SHARED, SECRET, READERS, OTHERS = "shared", "secret", "readers", "others"
ACLS = [
    Acl("TOPIC", SHARED),
    Acl("TOPIC", SECRET, "CREATE"),
    Acl("TOPIC", SECRET, "WRITE"),
    Acl("TOPIC", SECRET, "DESCRIBE"),
    Acl("GROUP", READERS, "READ"),
    Acl("GROUP", READERS, "DESCRIBE"),
    Acl("GROUP", READERS, "ALTER_CONFIGS"),
    Acl("GROUP", READERS, "DESCRIBE_CONFIGS"),
]
METADATA, SHARE_HEARTBEAT, SHARE_DESCRIBE, SHARE_FETCH, SHARE_ACK = 3, 76, 77, 78, 79
DESCRIBE_OFFSETS = 90
NONE, TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED = 0, 29, 30


@pytest.fixture
def broker(broker_factory: BrokerFactory) -> Broker:
    broker = start_with_acls(broker_factory(FAST, start=False), ACLS)
    with WireClient(broker.bootstrap) as client:
        client.create_topic(SHARED, 1)
        client.create_topic(SECRET, 1)
    produce(broker.bootstrap, SHARED, [f"s{i}".encode() for i in range(5)])
    produce(broker.bootstrap, SECRET, [f"x{i}".encode() for i in range(5)])
    earliest_group(broker.bootstrap, READERS)
    return broker


def heartbeat(client: WireClient, group: str, topics: list[str]) -> Any:
    body = {
        "group_id": group,
        "member_id": "m-" + group,
        "member_epoch": 0,
        "subscribed_topic_names": topics,
    }
    return client.call(SHARE_HEARTBEAT, 1, body)


def share_fetch(client: WireClient, group: str, topic_id: Any) -> Any:
    body = {
        "group_id": group,
        "member_id": "m-" + group,
        "share_session_epoch": 0,
        "max_wait_ms": 100,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "max_records": 100,
        "batch_size": 100,
        "topics": [{"topic_id": topic_id, "partitions": [{"partition_index": 0}]}],
    }
    return client.call(SHARE_FETCH, 1, body)


def test_a_share_consumer_reads_only_where_it_may(broker: Broker) -> None:
    allowed = share_consumer(broker.bootstrap, READERS, [SHARED])
    try:
        got = poll_until(allowed, 5)
        assert sorted(d.value for d in got) == [f"s{i}".encode() for i in range(5)]
    finally:
        allowed.close()

    refused = share_consumer(broker.bootstrap, OTHERS, [SHARED])
    try:
        with pytest.raises(KafkaException) as raised:
            poll_for(refused, 4)
        assert raised.value.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    finally:
        refused.close()


def test_share_requests_get_kafkas_authorization_errors(broker: Broker) -> None:
    with WireClient(broker.bootstrap) as client:
        ids = {
            t.name: t.topic_id
            for t in client.call(
                METADATA, 12, {"topics": [{"name": SHARED}, {"name": SECRET}]}
            ).topics
        }
        assert heartbeat(client, OTHERS, [SHARED]).error_code == GROUP_AUTHORIZATION_FAILED
        assert heartbeat(client, READERS, [SHARED, "not-described"]).error_code == (
            TOPIC_AUTHORIZATION_FAILED
        )
        joined = heartbeat(client, READERS, [SHARED, SECRET])
        assert joined.error_code == NONE, joined

        assert share_fetch(client, OTHERS, ids[SHARED]).error_code == GROUP_AUTHORIZATION_FAILED
        secret = share_fetch(client, READERS, ids[SECRET])
        assert secret.error_code == NONE
        partition = secret.responses[0].partitions[0]
        assert partition.error_code == TOPIC_AUTHORIZATION_FAILED
        assert not partition.records

        ack = {
            "group_id": OTHERS,
            "member_id": "m-" + OTHERS,
            "share_session_epoch": 1,
            "topics": [],
        }
        assert client.call(SHARE_ACK, 1, ack).error_code == GROUP_AUTHORIZATION_FAILED

        described = client.call(SHARE_DESCRIBE, 1, {"group_ids": [OTHERS, READERS]}).groups
        assert [g.error_code for g in described] == [GROUP_AUTHORIZATION_FAILED, NONE]

        offsets = client.call(
            DESCRIBE_OFFSETS, 1, {"groups": [{"group_id": OTHERS, "topics": None}]}
        ).groups[0]
        assert offsets.error_code == GROUP_AUTHORIZATION_FAILED
