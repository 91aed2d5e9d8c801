"""ACLs: the ACL admin APIs through the Java and librdkafka admin clients, and the
checks of the data, group, transaction and admin APIs as real clients meet them (the
authorizer's rules alone are in tests/unit/test_acl_rules.py). A PLAINTEXT client is
User:ANONYMOUS; brokers start with their ACLs granted while ANONYMOUS is a super user,
then restart without that (helpers/acl_admin.py). Most grant ANONYMOUS ALTER on the
cluster, so that a test can change ACLs while the broker runs."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import TopicAuthorizationFailedError as AioTopicAuthorizationFailed
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import NewTopic
from helpers import java
from helpers.acl_admin import (
    ANONYMOUS,
    AUTHORIZER,
    CLUSTER,
    Acl,
    admin_client,
    grant,
    listed,
    revoke,
    start_with_acls,
)
from helpers.broker import Broker, BrokerFactory, BrokerStartError
from helpers.topics import create_topic
from helpers.wire import WireClient
from kafka import KafkaProducer
from kafka.errors import TopicAuthorizationFailedError as KafkaPythonTopicAuthorizationFailed

pytestmark = pytest.mark.timeout(240)

METADATA, INIT_PRODUCER_ID, DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 3, 22, 29, 30, 31
API_VERSIONS, DESCRIBE_CLUSTER = 18, 60
# ApiVersions v3+ must name the client software (INVALID_REQUEST otherwise, as Kafka)
SOFTWARE = {"client_software_name": "odradek-tests", "client_software_version": "1.0"}
NONE, INVALID_REQUEST, SECURITY_DISABLED = 0, 42, 54
TOPIC_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED = 29, 31
# ANONYMOUS may manage ACLs (ALTER on the cluster, which implies DESCRIBE on it)
ADMIN = Acl("CLUSTER", CLUSTER, "ALTER")
CREATE_TOPICS = Acl("CLUSTER", CLUSTER, "CREATE")


def acl_broker(
    broker_factory: BrokerFactory, acls: Iterable[Acl], settings: Mapping[str, str] | None = None
) -> Broker:
    return start_with_acls(broker_factory(start=False), acls, settings=settings)


def java_admin(broker: Broker, command: str, *args: str) -> java.JavaResult:
    return java.admin(broker.bootstrap, command, *args, check=False)


def error_type(result: java.JavaResult) -> str | None:
    """The simple class name of the tool's error, or of the first per-item failure."""
    if result.error_type is not None:
        return result.error_type
    for line in result.lines:
        if "failure" in line:
            return str(line["failure"]["type"]).rsplit(".", 1)[-1]
    return None


def java_txn(broker: Broker, transactional_id: str, *commands: dict[str, Any]) -> list[dict]:
    """Run a Java transactional producer through the commands; their result lines."""
    result = java.run(
        [
            "txn-producer",
            "--bootstrap",
            broker.bootstrap,
            *java.props_args({"transactional.id": transactional_id, "max.block.ms": 10000}),
        ],
        stdin="".join(json.dumps(c) + "\n" for c in commands),
        check=False,
    )
    return [line for line in result.lines if line.get("event") == "result"]


def end_offset(broker: Broker, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "unused"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        consumer.close()


def confluent_poll_error(broker: Broker, group: str, topics: list[str]) -> KafkaError:
    """Subscribe with librdkafka's consumer and return the first error it reports."""
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": group, "auto.offset.reset": "earliest"}
    )
    try:
        consumer.subscribe(topics)
        for _ in range(40):
            message = consumer.poll(0.5)
            if message is not None and message.error() is not None:
                return message.error()
        raise AssertionError("no error reported by the consumer")
    finally:
        consumer.close()


# --------------------------------------------------------------------------- settings


def test_acl_apis_without_an_authorizer_answer_security_disabled(shared_broker: Broker) -> None:
    with pytest.raises(KafkaException) as raised:
        grant(shared_broker.bootstrap, [Acl("TOPIC", "t")])
    assert raised.value.args[0].code() == KafkaError.SECURITY_DISABLED
    created = java_admin(shared_broker, "create-acls", "--acl", "resource=TOPIC,name=t")
    assert error_type(created) == "SecurityDisabledException"
    described = java_admin(shared_broker, "describe-acls")
    assert error_type(described) == "SecurityDisabledException"


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"authorizer.class.name": "com.example.MyAuthorizer"}, "authorizer.class.name"),
        ({"authorizer.class.name": AUTHORIZER, "super.users": "alice"}, "super.users"),
        (
            {"authorizer.class.name": AUTHORIZER, "allow.everyone.if.no.acl.found": "maybe"},
            "allow.everyone.if.no.acl.found",
        ),
    ],
)
def test_authorizer_settings_that_stop_the_broker(
    broker_factory: BrokerFactory, settings: dict[str, str], message: str
) -> None:
    with pytest.raises(BrokerStartError) as raised:
        broker_factory(settings)
    assert message in str(raised.value)


def test_an_unreadable_acl_file_stops_the_broker(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(start=False)
    (broker.data_dir / "acls.json").write_text('{"version": 1, "acls": [{"name": 3}]}')
    broker.overrides["authorizer.class.name"] = AUTHORIZER
    with pytest.raises(BrokerStartError) as raised:
        broker.start()
    assert "acls.json" in str(raised.value)


# --------------------------------------------------------------------------- admin APIs


def test_acls_made_listed_and_deleted_by_both_admin_clients_survive_a_restart(
    broker_factory: BrokerFactory,
) -> None:
    broker = acl_broker(broker_factory, [ADMIN])
    made = java_admin(
        broker,
        "create-acls",
        "--acl",
        "resource=TOPIC,name=logs-,pattern=PREFIXED,principal=User:alice,operation=READ,"
        "permission=ALLOW",
        "--acl",
        "resource=TOPIC,name=audit,pattern=LITERAL,principal=User:*,operation=WRITE,"
        "permission=DENY",
    )
    assert [line["created"] for line in made.lines] == [True, True], made.describe()
    group_acl = Acl("GROUP", "g1", "READ")
    grant(broker.bootstrap, [group_acl])
    logs = Acl("TOPIC", "logs-", "READ", principal="User:alice", pattern="PREFIXED")
    audit = Acl("TOPIC", "audit", "WRITE", "DENY", principal="User:*")
    assert listed(broker.bootstrap) == {ADMIN, group_acl, logs, audit}

    # MATCH: what would apply to the topic logs-app
    matched = java_admin(broker, "describe-acls", "--filter", "name=logs-app,pattern=MATCH")
    assert [(x["name"], x["pattern_type"]) for x in matched.lines] == [("logs-", "PREFIXED")]
    by_principal = java_admin(broker, "describe-acls", "--filter", "principal=User:*")
    assert [x["name"] for x in by_principal.lines] == ["audit"]

    refused = java_admin(broker, "create-acls", "--acl", "resource=CLUSTER,name=other")
    assert error_type(refused) == "InvalidRequestException"
    with pytest.raises(KafkaException) as raised:
        grant(broker.bootstrap, [Acl("TOPIC", "t", principal="alice")])
    assert raised.value.args[0].code() == KafkaError.INVALID_REQUEST

    broker.restart()
    assert listed(broker.bootstrap) == {ADMIN, group_acl, logs, audit}
    assert revoke(broker.bootstrap, [logs]) == [logs]
    deleted = java_admin(broker, "delete-acls", "--filter", "principal=User:*")
    assert [(x["name"], x["deleted"]) for x in deleted.lines] == [("audit", True)]
    broker.restart()
    assert listed(broker.bootstrap) == {ADMIN, group_acl}


def test_acl_apis_need_the_cluster(broker_factory: BrokerFactory) -> None:
    describe_only = Acl("CLUSTER", CLUSTER, "DESCRIBE")
    broker = acl_broker(broker_factory, [describe_only])
    assert listed(broker.bootstrap) == {describe_only}
    created = java_admin(broker, "create-acls", "--acl", "resource=TOPIC,name=t")
    assert error_type(created) == "ClusterAuthorizationException"
    with pytest.raises(KafkaException) as raised:
        revoke(broker.bootstrap, [describe_only])
    assert raised.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    assert listed(broker.bootstrap) == {describe_only}  # still there
    nobody = acl_broker(broker_factory, [])
    described = java_admin(nobody, "describe-acls")
    assert error_type(described) == "ClusterAuthorizationException"


def test_bad_acl_requests_get_invalid_request(broker_factory: BrokerFactory) -> None:
    """Codes Kafka does not know answer INVALID_REQUEST (DescribeAcls: nothing
    matches); the UNKNOWN code (0) itself closes the connection, as on Kafka, whose
    request parsing refuses it."""
    broker = acl_broker(broker_factory, [ADMIN])

    def creation(resource_type: int, pattern: int, operation: int, permission: int) -> dict:
        return {
            "resource_type": resource_type,
            "resource_name": "t",
            "resource_pattern_type": pattern,
            "principal": ANONYMOUS,
            "host": "*",
            "operation": operation,
            "permission_type": permission,
        }

    describe = {
        "resource_type_filter": 2,
        "resource_name_filter": None,
        "pattern_type_filter": 9,  # no such pattern type
        "principal_filter": None,
        "host_filter": None,
        "operation": 1,
        "permission_type": 1,
    }
    with WireClient(broker.bootstrap) as client:
        reply = client.call(
            CREATE_ACLS,
            3,
            {
                "creations": [
                    creation(2, 1, 3, 3),  # pattern ANY
                    creation(2, 3, 1, 3),  # operation ANY
                    creation(99, 3, 3, 3),  # no such resource type
                    creation(2, 3, 3, 3),  # READ on topic t: fine
                ]
            },
        )
        codes = [r.error_code for r in reply.results]
        assert codes == [INVALID_REQUEST] * 3 + [NONE]
        reply = client.call(DESCRIBE_ACLS, 3, describe)
        assert (reply.error_code, reply.resources) == (NONE, ())
        delete = {"filters": [describe, {**describe, "pattern_type_filter": 1}]}
        results = client.call(DELETE_ACLS, 3, delete).filter_results
        assert [r.error_code for r in results] == [INVALID_REQUEST, NONE]
        assert results[0].error_message == "Unknown patternFilter."
        assert [a.resource_name for a in results[1].matching_acls] == ["t"]
        assert client.call(API_VERSIONS, 3, SOFTWARE).error_code == NONE  # still talking
    for api_key, body in (
        (CREATE_ACLS, {"creations": [creation(0, 3, 3, 3)]}),
        (DESCRIBE_ACLS, {**describe, "pattern_type_filter": 0}),
        (DELETE_ACLS, {"filters": [{**describe, "operation": 0}]}),
    ):
        with WireClient(broker.bootstrap) as client:
            client.send_raw(client.request_bytes(api_key, 3, body)[1])
            assert client.is_closed_by_peer()
    assert listed(broker.bootstrap) == {ADMIN}


# --------------------------------------------------------------------------- data


def test_produce_and_fetch_follow_topic_acls(broker_factory: BrokerFactory) -> None:
    broker = acl_broker(
        broker_factory,
        [
            ADMIN,
            CREATE_TOPICS,
            Acl("TOPIC", "open-", pattern="PREFIXED"),
            Acl("TOPIC", "open-locked", "WRITE", "DENY"),
            Acl("TOPIC", "read-only", "READ"),
            Acl("TOPIC", "write-only", "WRITE"),
            Acl("GROUP", "readers", "READ"),
        ],
    )
    for topic in ("open-a", "open-locked", "read-only", "write-only"):
        create_topic(broker.bootstrap, topic)

    assert len(java.produce(broker.bootstrap, "open-a", count=3).records) == 3
    assert len(java.consume(broker.bootstrap, "open-a", until_end=True).records) == 3

    # DENY beats the prefixed ALLOW
    locked = java.produce(broker.bootstrap, "open-locked", count=2, check=False)
    assert locked.error_type == "TopicAuthorizationException"
    assert end_offset(broker, "open-locked") == 0  # nothing written

    refused = java.produce(broker.bootstrap, "read-only", count=2, check=False)
    assert refused.error_type == "TopicAuthorizationException"
    errors: list[KafkaError] = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "message.timeout.ms": 10000})
    producer.produce("read-only", b"v", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(20)
    assert [e.code() for e in errors] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    assert end_offset(broker, "read-only") == 0

    assert len(java.produce(broker.bootstrap, "write-only", count=2).records) == 2
    read = java.consume(broker.bootstrap, "write-only", until_end=True, check=False)
    assert read.error_type == "TopicAuthorizationException"
    assert read.records == []
    error = confluent_poll_error(broker, "readers", ["write-only"])
    assert error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_python_clients_get_their_authorization_errors(broker_factory: BrokerFactory) -> None:
    # WRITE on some topic lets the idempotent producers get their producer id
    acls = [CREATE_TOPICS, Acl("TOPIC", "read-only", "READ"), Acl("TOPIC", "elsewhere", "WRITE")]
    broker = acl_broker(broker_factory, acls)
    create_topic(broker.bootstrap, "read-only")

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, max_block_ms=10000)
    try:
        with pytest.raises(KafkaPythonTopicAuthorizationFailed):
            producer.send("read-only", b"v").get(timeout=20)
    finally:
        producer.close(timeout=5)

    async def aiokafka_send() -> None:
        aio = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
        await aio.start()
        try:
            await aio.send_and_wait("read-only", b"v")
        finally:
            await aio.stop()

    with pytest.raises(AioTopicAuthorizationFailed):
        asyncio.run(aiokafka_send())
    assert end_offset(broker, "read-only") == 0


def test_metadata_leaves_out_topics_the_principal_may_not_describe(
    broker_factory: BrokerFactory,
) -> None:
    broker = acl_broker(broker_factory, [ADMIN, CREATE_TOPICS, Acl("TOPIC", "seen", "DESCRIBE")])
    for topic in ("seen", "hidden"):
        create_topic(broker.bootstrap, topic)
    admin = admin_client(broker.bootstrap)
    assert set(admin.list_topics(timeout=15).topics) == {"seen"}
    named = admin.list_topics(topic="hidden", timeout=15).topics["hidden"]
    assert named.error is not None
    assert named.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert [x["topic"] for x in java_admin(broker, "list-topics").lines] == ["seen"]

    revoke(broker.bootstrap, [CREATE_TOPICS])
    grant(broker.bootstrap, [Acl("TOPIC", "new-", "DESCRIBE", pattern="PREFIXED")])
    with WireClient(broker.bootstrap) as client:

        def metadata(*names: str) -> Any:
            body = {
                "topics": [{"name": n, "topic_id": uuid.UUID(int=0)} for n in names],
                "allow_auto_topic_creation": True,
                "include_topic_authorized_operations": True,
            }
            return client.call(METADATA, 12, body)

        # auto creation needs CREATE: DESCRIBE alone is not enough
        assert metadata("new-a").topics[0].error_code == TOPIC_AUTHORIZATION_FAILED
        grant(broker.bootstrap, [Acl("TOPIC", "new-a", "CREATE")])
        created = metadata("new-a", "seen").topics
        assert [t.error_code for t in created] == [NONE, NONE]
        # what ANONYMOUS may do on each: bits of Kafka's AclOperation codes
        assert created[0].topic_authorized_operations == 1 << 5 | 1 << 8  # CREATE, DESCRIBE
        assert created[1].topic_authorized_operations == 1 << 8
        cluster = client.call(DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": True})
        assert cluster.cluster_authorized_operations == 1 << 7 | 1 << 8  # ALTER, DESCRIBE


# --------------------------------------------------------------------------- groups


def test_groups_follow_group_acls(broker_factory: BrokerFactory) -> None:
    broker = acl_broker(
        broker_factory,
        [
            ADMIN,
            CREATE_TOPICS,
            Acl("TOPIC", "t"),
            Acl("GROUP", "good", "READ"),
            Acl("GROUP", "bad", "DESCRIBE"),
        ],
    )
    create_topic(broker.bootstrap, "t")
    java.produce(broker.bootstrap, "t", count=2)

    denied = java.consume(broker.bootstrap, "t", group="bad", max_records=2, check=False)
    assert denied.error_type == "GroupAuthorizationException"
    error = confluent_poll_error(broker, "bad", ["t"])
    assert error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    consumer_protocol = java.consume(
        broker.bootstrap,
        "t",
        group="bad",
        max_records=2,
        props={"group.protocol": "consumer"},
        check=False,
    )
    assert consumer_protocol.error_type == "GroupAuthorizationException"

    read = java.consume(broker.bootstrap, "t", group="good", max_records=2, commit=True)
    assert len(read.records) == 2
    offsets = java_admin(broker, "group-offsets", "--group", "good")
    assert [(x["topic"], x["offset"]) for x in offsets.lines] == [("t", 2)]
    assert error_type(java_admin(broker, "group-offsets", "--group", "bad")) is None
    refused = java_admin(broker, "group-offsets", "--group", "other")
    assert error_type(refused) == "GroupAuthorizationException"
    deleted = java_admin(broker, "delete-groups", "--group", "good")
    assert error_type(deleted) == "GroupAuthorizationException"
    described = java_admin(broker, "describe-groups", "--group", "other")
    assert error_type(described) == "GroupAuthorizationException"

    other = Acl("GROUP", "other", "READ")
    grant(broker.bootstrap, [other])
    java.consume(broker.bootstrap, "t", group="other", max_records=2, commit=True).check()
    revoke(broker.bootstrap, [other])
    # DESCRIBE on the cluster lists every group; without it only the describable ones
    assert {x["group"] for x in java_admin(broker, "list-groups").lines} == {"good", "other"}
    revoke(broker.bootstrap, [ADMIN])
    assert {x["group"] for x in java_admin(broker, "list-groups").lines} == {"good"}


# --------------------------------------------------------------------------- transactions


def test_transactions_follow_transactional_id_acls(broker_factory: BrokerFactory) -> None:
    broker = acl_broker(
        broker_factory,
        [
            CREATE_TOPICS,
            Acl("TOPIC", "out"),
            Acl("TOPIC", "closed", "DESCRIBE"),
            Acl("TRANSACTIONAL_ID", "tx-ok", "WRITE"),
            Acl("GROUP", "txg", "READ"),
        ],
    )
    for topic in ("out", "closed"):
        create_topic(broker.bootstrap, topic)

    record = {"topic": "out", "partition": 0, "key": "k", "value": "v"}
    offsets = [{"topic": "out", "partition": 0, "offset": 1}]
    results = java_txn(
        broker,
        "tx-ok",
        {"cmd": "init"},
        {"cmd": "begin"},
        {"cmd": "send", "records": [record]},
        {"cmd": "send-offsets", "group": "txg", "offsets": offsets},
        {"cmd": "commit"},
        {"cmd": "begin"},
        {"cmd": "send-offsets", "group": "nogroup", "offsets": offsets},
        {"cmd": "abort"},
        {"cmd": "begin"},
        {"cmd": "send", "records": [{**record, "topic": "closed"}]},
    )
    outcome = [(r["cmd"], r["ok"], r.get("error_type")) for r in results]
    assert outcome[:5] == [
        (c, True, None) for c in ("init", "begin", "send", "send-offsets", "commit")
    ]
    assert outcome[6] == ("send-offsets", False, "GroupAuthorizationException")
    assert outcome[9][:2] == ("send", False)
    assert "TopicAuthorizationException" in json.dumps(results[9])
    committed = java.consume(
        broker.bootstrap, "out", isolation_level="read_committed", until_end=True
    )
    assert [r["value"] for r in committed.records] == ["v"]
    assert end_offset(broker, "closed") == 0

    denied = java_txn(broker, "tx-no", {"cmd": "init"})
    assert denied[0]["error_type"] == "TransactionalIdAuthorizationException"
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-no"})
    with pytest.raises(KafkaException) as raised:
        producer.init_transactions(20)
    assert raised.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_idempotent_producer_ids_need_a_write_permission(broker_factory: BrokerFactory) -> None:
    broker = acl_broker(broker_factory, [ADMIN, Acl("TOPIC", "readable", "READ")])
    body = {
        "transactional_id": None,
        "transaction_timeout": 60000,
        "producer_id": -1,
        "producer_epoch": -1,
    }
    permissions = (Acl("TOPIC", "any", "WRITE"), Acl("CLUSTER", CLUSTER, "IDEMPOTENT_WRITE"))
    with WireClient(broker.bootstrap) as client:
        assert client.call(INIT_PRODUCER_ID, 4, body).error_code == CLUSTER_AUTHORIZATION_FAILED
        for permission in permissions:
            grant(broker.bootstrap, [permission])
            answer = client.call(INIT_PRODUCER_ID, 4, body)
            assert (answer.error_code, answer.producer_id >= 0) == (NONE, True)
            revoke(broker.bootstrap, [permission])


# --------------------------------------------------------------------------- admin


def test_admin_operations_follow_topic_and_cluster_acls(broker_factory: BrokerFactory) -> None:
    broker = acl_broker(
        broker_factory,
        [
            ADMIN,
            Acl("TOPIC", "mine-", pattern="PREFIXED"),
            Acl("TOPIC", "theirs", "CREATE"),
        ],
    )
    create_topic(broker.bootstrap, "mine-1")
    create_topic(broker.bootstrap, "theirs")
    assert error_type(java_admin(broker, "create-topic", "--topic", "other")) == (
        "TopicAuthorizationException"
    )
    client = admin_client(broker.bootstrap)
    futures = client.create_topics([NewTopic("other2", 1, 1)])
    with pytest.raises(KafkaException) as raised:
        futures["other2"].result(timeout=20)
    assert raised.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED

    denied = {
        "describe-configs": ("--topic", "theirs"),
        "alter-configs": ("--topic", "theirs", "--set", "retention.ms=1000"),
        "create-partitions": ("--topic", "theirs", "--total", "2"),
        "delete-topic": ("--topic", "theirs"),
    }
    for command, args in denied.items():
        assert error_type(java_admin(broker, command, *args)) == "TopicAuthorizationException"
    cluster = java_admin(broker, "describe-configs", "--broker", "0")
    assert error_type(cluster) == "ClusterAuthorizationException"
    for command, args in denied.items():
        mine = tuple("mine-1" if a == "theirs" else a for a in args)
        assert error_type(java_admin(broker, command, *mine)) is None, command
    assert [x["topic"] for x in java_admin(broker, "list-topics").lines] == []


# --------------------------------------------------------------------------- settings at work


def test_super_users_may_do_anything(broker_factory: BrokerFactory) -> None:
    broker = broker_factory({"authorizer.class.name": AUTHORIZER, "super.users": ANONYMOUS})
    create_topic(broker.bootstrap, "t")
    java.produce(broker.bootstrap, "t", count=2)
    assert len(java.consume(broker.bootstrap, "t", group="g", max_records=2).records) == 2


def test_allow_everyone_if_no_acl_found(broker_factory: BrokerFactory) -> None:
    alices = Acl("TOPIC", "alices", principal="User:alice")
    broker = acl_broker(
        broker_factory, [alices], settings={"allow.everyone.if.no.acl.found": "true"}
    )
    create_topic(broker.bootstrap, "free")
    assert len(java.produce(broker.bootstrap, "free", count=2).records) == 2
    refused = java.produce(broker.bootstrap, "alices", count=1, check=False)
    assert refused.error_type == "TopicAuthorizationException"
