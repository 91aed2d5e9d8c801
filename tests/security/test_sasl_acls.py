"""ACLs for principals that log in: on a SASL_PLAINTEXT listener, alice (PLAIN) may use
the topic "orders", the group "billing" and the transactional id "billing-tx"; carol
(SCRAM-SHA-256, made through the admin API) may only read; bob (PLAIN) may do nothing.
Each client meets its own authorization error where it has no rights, and nothing of
bob's is written or read."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import TopicAuthorizationFailedError as AioTopicAuthorizationFailed
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from helpers import java
from helpers.acl_admin import Acl, start_with_acls
from helpers.broker import Broker, BrokerFactory
from kafka import KafkaProducer
from kafka.errors import TopicAuthorizationFailedError as KafkaPythonTopicAuthorizationFailed

pytestmark = pytest.mark.timeout(300)

PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" '
    + " ".join(f'user_{user}="{password}"' for user, password in PASSWORDS.items())
    + ";"
)
CAROL = ("carol", "carol-secret")
ALICE = "User:alice"
TOPIC, GROUP, TXN_ID = "orders", "billing", "billing-tx"
ALICE_ACLS = [
    Acl("TOPIC", TOPIC, principal=ALICE),
    Acl("GROUP", GROUP, "READ", principal=ALICE),
    Acl("TRANSACTIONAL_ID", TXN_ID, "WRITE", principal=ALICE),
]
CAROL_ACLS = [
    Acl("TOPIC", TOPIC, "READ", principal="User:carol"),
    Acl("GROUP", "audit", "READ", principal="User:carol"),
]


def rdkafka(broker: Broker, user: str, mechanism: str = "PLAIN") -> dict[str, Any]:
    password = CAROL[1] if user == CAROL[0] else PASSWORDS[user]
    return {
        "bootstrap.servers": broker.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def java_props(user: str, mechanism: str = "PLAIN") -> dict[str, str]:
    password = CAROL[1] if user == CAROL[0] else PASSWORDS[user]
    module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.jaas.config": f"org.apache.kafka.common.security.{module} required "
        f'username="{user}" password="{password}";',
    }


@pytest.fixture
def broker(broker_factory: BrokerFactory) -> Iterator[Broker]:
    broker = broker_factory(start=False)
    broker.overrides.update(
        {
            "listeners": f"SASL_PLAINTEXT://127.0.0.1:{broker.port}",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        }
    )
    admin_login = rdkafka(broker, "admin")
    start_with_acls(
        broker,
        ALICE_ACLS + CAROL_ACLS,
        admin="User:admin",
        client_config=admin_login,
        settings={"super.users": "User:admin"},
    )
    admin = AdminClient(admin_login)
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(20)
    carol = UserScramCredentialUpsertion(
        CAROL[0], ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), CAROL[1].encode()
    )
    admin.alter_user_scram_credentials([carol])[CAROL[0]].result(20)
    del admin
    yield broker


def end_offset(broker: Broker) -> int:
    consumer = Consumer({**rdkafka(broker, "admin"), "group.id": "unused"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)[1])
    finally:
        consumer.close()


def java_txn(user: str, broker: Broker, *commands: dict[str, Any]) -> list[dict[str, Any]]:
    props = {**java_props(user), "transactional.id": TXN_ID, "max.block.ms": 10000}
    result = java.run(
        ["txn-producer", "--bootstrap", broker.bootstrap, *java.props_args(props)],
        stdin="".join(json.dumps(c) + "\n" for c in commands),
        check=False,
    )
    return [line for line in result.lines if line.get("event") == "result"]


def test_java_client_rights_follow_the_principal(broker: Broker) -> None:
    assert len(java.produce(broker.bootstrap, TOPIC, count=3, props=java_props("alice")).records)
    refused = java.produce(broker.bootstrap, TOPIC, count=2, props=java_props("bob"), check=False)
    assert refused.error_type == "TopicAuthorizationException"
    carol_writes = java.produce(
        broker.bootstrap, TOPIC, count=1, props=java_props("carol", "SCRAM-SHA-256"), check=False
    )
    # she may see the topic, so her idempotent producer gets as far as asking for a
    # producer id, which needs WRITE somewhere (or IDEMPOTENT_WRITE on the cluster)
    assert carol_writes.error_type == "ClusterAuthorizationException"
    assert end_offset(broker) == 3  # only alice's records

    bob_reads = java.consume(
        broker.bootstrap, TOPIC, group=GROUP, max_records=3, props=java_props("bob"), check=False
    )
    assert bob_reads.error_type in ("GroupAuthorizationException", "TopicAuthorizationException")
    assert bob_reads.records == []
    alice_reads = java.consume(
        broker.bootstrap, TOPIC, group=GROUP, max_records=3, commit=True, props=java_props("alice")
    )
    assert len(alice_reads.records) == 3
    carol = java_props("carol", "SCRAM-SHA-256")
    carol_reads = java.consume(broker.bootstrap, TOPIC, group="audit", max_records=3, props=carol)
    assert len(carol_reads.records) == 3
    # carol may not join alice's group, though she may read the topic
    carol_in_billing = java.consume(
        broker.bootstrap, TOPIC, group=GROUP, max_records=3, props=carol, check=False
    )
    assert carol_in_billing.error_type == "GroupAuthorizationException"

    record = {"topic": TOPIC, "partition": 0, "key": "k", "value": "in-txn"}
    steps = ({"cmd": "init"}, {"cmd": "begin"}, {"cmd": "send", "records": [record]})
    alice_txn = java_txn("alice", broker, *steps, {"cmd": "commit"})
    assert [(r["cmd"], r["ok"]) for r in alice_txn] == [
        ("init", True),
        ("begin", True),
        ("send", True),
        ("commit", True),
    ]
    bob_txn = java_txn("bob", broker, {"cmd": "init"})
    assert bob_txn[0]["error_type"] == "TransactionalIdAuthorizationException"

    bob_admin = java.admin(
        broker.bootstrap, "create-topic", "--topic", "bobs", props=java_props("bob"), check=False
    )
    assert bob_admin.error_type == "TopicAuthorizationException"
    alice_admin = java.admin(
        broker.bootstrap, "create-topic", "--topic", "alices", props=java_props("alice"),
        check=False,
    )  # fmt: skip
    assert alice_admin.error_type == "TopicAuthorizationException"  # no CREATE for alice
    bobs_topics = java.admin(broker.bootstrap, "list-topics", props=java_props("bob"))
    assert bobs_topics.lines == []
    alices_topics = java.admin(broker.bootstrap, "list-topics", props=java_props("alice"))
    assert [x["topic"] for x in alices_topics.lines] == [TOPIC]
    assert end_offset(broker) == 5  # alice's transaction: a record and its commit marker


def test_librdkafka_and_python_clients_get_their_authorization_errors(broker: Broker) -> None:
    errors: list[KafkaError] = []
    bob = Producer({**rdkafka(broker, "bob"), "message.timeout.ms": 10000})
    bob.produce(TOPIC, b"v", on_delivery=lambda err, _msg: errors.append(err))
    bob.flush(20)
    assert [e.code() for e in errors] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]

    consumer = Consumer(
        {**rdkafka(broker, "bob"), "group.id": GROUP, "auto.offset.reset": "earliest"}
    )
    try:
        consumer.subscribe([TOPIC])
        error = None
        for _ in range(40):
            message = consumer.poll(0.5)
            if message is not None and message.error() is not None:
                error = message.error()
                break
        assert error is not None
        assert error.code() in (
            KafkaError.GROUP_AUTHORIZATION_FAILED,
            KafkaError.TOPIC_AUTHORIZATION_FAILED,
        )
    finally:
        consumer.close()

    txn = Producer({**rdkafka(broker, "bob"), "transactional.id": TXN_ID})
    with pytest.raises(KafkaException) as raised:
        txn.init_transactions(20)
    assert raised.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED

    sasl = {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "bob",
        "sasl_plain_password": PASSWORDS["bob"],
    }
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, max_block_ms=10000, **sasl)
    try:
        with pytest.raises(KafkaPythonTopicAuthorizationFailed):
            producer.send(TOPIC, b"v").get(timeout=20)
    finally:
        producer.close(timeout=5)

    async def aiokafka_send() -> None:
        aio = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000, **sasl)
        await aio.start()
        try:
            await aio.send_and_wait(TOPIC, b"v")
        finally:
            await aio.stop()

    with pytest.raises(AioTopicAuthorizationFailed):
        asyncio.run(aiokafka_send())

    alice = Producer(rdkafka(broker, "alice"))
    alice.produce(TOPIC, b"alice's")
    assert alice.flush(20) == 0
    assert end_offset(broker) == 1  # bob's records never landed
