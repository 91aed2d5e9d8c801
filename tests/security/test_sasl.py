"""SASL listeners with the real clients: PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 round
trips through librdkafka, aiokafka, kafka-python and the Java client; what each client
reports for a wrong password; SCRAM users made with the Java and librdkafka admin
clients, still there after a restart; the protocol's rules seen from a raw client
(requests before authentication, handshake v0, re-handshakes, bad and oversized
tokens); SASL_SSL; settings that stop the broker."""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import struct
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaConnectionError
from aiokafka.structs import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from helpers import java
from helpers.broker import Broker, BrokerFactory, BrokerStartError
from helpers.certs import make_certs
from helpers.logs import LogLines
from helpers.wire import WireClient
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaPythonTopicPartition
from kafka.errors import KafkaTimeoutError

pytestmark = pytest.mark.timeout(240)

PRODUCE, METADATA, SASL_HANDSHAKE, API_VERSIONS, SASL_AUTHENTICATE = 0, 3, 17, 18, 36
# ApiVersions v3+ must name the client software (INVALID_REQUEST otherwise, as Kafka)
SOFTWARE = {"client_software_name": "odradek-tests", "client_software_version": "1.0"}
NONE, UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED = 0, 33, 34, 58
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" '
    'user_admin="admin-secret" user_alice="alice-secret";'
)
# who logs in with each mechanism (the SCRAM users are made through the admin API)
LOGINS = {
    "PLAIN": ("alice", "alice-secret"),
    "SCRAM-SHA-256": ("sam", "sam-secret"),
    "SCRAM-SHA-512": ("sue", "sue-secret"),
}
PLAIN_REFUSED = "Authentication failed: Invalid username or password"
SCRAM_REFUSED = "invalid credentials with SASL mechanism"


def sasl_broker(
    broker_factory: BrokerFactory, settings: Mapping[str, str] | None = None, protocol: str = ""
) -> Broker:
    """A broker whose one listener, SASL_PLAINTEXT (or ``protocol``), is on broker.port."""
    broker = broker_factory(start=False)
    protocol = protocol or "SASL_PLAINTEXT"
    broker.overrides.update(
        {
            "listeners": f"{protocol}://127.0.0.1:{broker.port}",
            "sasl.enabled.mechanisms": ",".join(MECHANISMS),
            f"listener.name.{protocol.lower()}.plain.sasl.jaas.config": PLAIN_JAAS,
            **(settings or {}),
        }
    )
    return broker.start()


def rdkafka_config(
    bootstrap: str, mechanism: str, user: str, password: str, protocol: str = "SASL_PLAINTEXT"
) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": protocol,
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def admin_config(bootstrap: str) -> dict[str, Any]:
    return rdkafka_config(bootstrap, "PLAIN", "admin", "admin-secret")


def java_props(mechanism: str, user: str, password: str) -> dict[str, str]:
    module = (
        "org.apache.kafka.common.security.plain.PlainLoginModule"
        if mechanism == "PLAIN"
        else "org.apache.kafka.common.security.scram.ScramLoginModule"
    )
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.jaas.config": f'{module} required username="{user}" password="{password}";',
    }


def make_scram_users(bootstrap: str) -> None:
    """The SCRAM users of LOGINS, through librdkafka's AdminClient logged in with PLAIN."""
    admin = AdminClient(admin_config(bootstrap))
    upsertions = [
        UserScramCredentialUpsertion(
            user,
            ScramCredentialInfo(ScramMechanism[mechanism.replace("-", "_")], 4096),
            password.encode(),
        )
        for mechanism, (user, password) in LOGINS.items()
        if mechanism != "PLAIN"
    ]
    for future in admin.alter_user_scram_credentials(upsertions).values():
        future.result(15)


def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient(admin_config(bootstrap))
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)


def rdkafka_round_trip(config: Mapping[str, Any], topic: str, values: list[bytes]) -> list[bytes]:
    """Produce ``values``, then read the partition from the start; what was read."""
    producer = Producer({**config, "message.timeout.ms": 20000})
    for value in values:
        producer.produce(topic, value, partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer({**config, "group.id": f"{topic}-reader", "enable.auto.commit": False})
    got: list[bytes] = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 30
        while not set(values) <= set(got) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message.value())
    finally:
        consumer.close()
    return got


def rdkafka_login_error(config: Mapping[str, Any], timeout: float = 20) -> KafkaError:
    """The first error a producer with ``config`` reports."""
    errors: list[KafkaError] = []
    producer = Producer({**config, "error_cb": errors.append})
    deadline = time.monotonic() + timeout
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    assert errors, "librdkafka reported no error"
    return errors[0]


# -- round trips with each client ---------------------------------------------------------


def test_librdkafka_with_each_mechanism(broker_factory: BrokerFactory, unique_topic: str) -> None:
    broker = sasl_broker(broker_factory)
    make_scram_users(broker.bootstrap)
    create_topic(broker.bootstrap, unique_topic)
    for mechanism, (user, password) in LOGINS.items():
        values = [f"{mechanism}-{i}".encode() for i in range(5)]
        config = rdkafka_config(broker.bootstrap, mechanism, user, password)
        assert set(values) <= set(rdkafka_round_trip(config, unique_topic, values)), mechanism


async def test_aiokafka_with_each_mechanism(
    broker_factory: BrokerFactory, unique_topic: str
) -> None:
    broker = sasl_broker(broker_factory)
    make_scram_users(broker.bootstrap)
    create_topic(broker.bootstrap, unique_topic)
    for mechanism, (user, password) in LOGINS.items():
        login: dict[str, Any] = {
            "bootstrap_servers": broker.bootstrap,
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": mechanism,
            "sasl_plain_username": user,
            "sasl_plain_password": password,
        }
        producer = AIOKafkaProducer(**login)
        await producer.start()
        try:
            offsets = [
                (await producer.send_and_wait(unique_topic, f"{mechanism}-{i}".encode())).offset
                for i in range(3)
            ]
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(**login, enable_auto_commit=False)
        await consumer.start()
        try:
            partition = AioTopicPartition(unique_topic, 0)
            consumer.assign([partition])
            consumer.seek(partition, offsets[0])
            batches = await consumer.getmany(partition, timeout_ms=10000, max_records=3)
            values = [record.value for record in batches.get(partition, [])]
        finally:
            await consumer.stop()
        assert values == [f"{mechanism}-{i}".encode() for i in range(3)], mechanism


def test_kafka_python_with_each_mechanism(broker_factory: BrokerFactory, unique_topic: str) -> None:
    broker = sasl_broker(broker_factory)
    make_scram_users(broker.bootstrap)
    create_topic(broker.bootstrap, unique_topic)
    for mechanism, (user, password) in LOGINS.items():
        login: dict[str, Any] = {
            "bootstrap_servers": broker.bootstrap,
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": mechanism,
            "sasl_plain_username": user,
            "sasl_plain_password": password,
        }
        producer = KafkaProducer(**login)
        try:
            sent = [
                producer.send(unique_topic, f"{mechanism}-{i}".encode()).get(15) for i in range(3)
            ]
        finally:
            producer.close()
        consumer = KafkaConsumer(**login, enable_auto_commit=False, consumer_timeout_ms=10000)
        try:
            partition = KafkaPythonTopicPartition(unique_topic, 0)
            consumer.assign([partition])
            consumer.seek(partition, sent[0].offset)
            values = [next(consumer).value for _ in range(3)]
        finally:
            consumer.close()
        assert values == [f"{mechanism}-{i}".encode() for i in range(3)], mechanism


def test_java_client_with_each_mechanism(broker_factory: BrokerFactory, unique_topic: str) -> None:
    broker = sasl_broker(broker_factory)
    make_scram_users(broker.bootstrap)
    create_topic(broker.bootstrap, unique_topic)
    for mechanism, (user, password) in LOGINS.items():
        props = java_props(mechanism, user, password)
        records = [java.record_line(value=f"{mechanism}-{i}", partition=0) for i in range(3)]
        produced = java.produce(broker.bootstrap, unique_topic, records=records, props=props)
        first = produced.records[0]["offset"]
        read = java.consume(
            broker.bootstrap,
            unique_topic,
            offset_reset=str(first),
            partition=0,
            max_records=3,
            props=props,
        )
        assert [r["value"] for r in read.records] == [f"{mechanism}-{i}" for i in range(3)]


# -- wrong passwords ----------------------------------------------------------------------


def test_librdkafka_reports_a_wrong_password(broker_factory: BrokerFactory) -> None:
    broker = sasl_broker(broker_factory)
    make_scram_users(broker.bootstrap)
    for mechanism, (user, _) in LOGINS.items():
        error = rdkafka_login_error(rdkafka_config(broker.bootstrap, mechanism, user, "wrong"))
        assert error.code() == KafkaError._AUTHENTICATION
        expected = PLAIN_REFUSED if mechanism == "PLAIN" else f"{SCRAM_REFUSED} {mechanism}"
        assert expected in error.str(), error.str()
    assert "authentication failed" in broker.log_text()


def collecting(logger_name: str) -> LogLines:
    handler = LogLines()
    logging.getLogger(logger_name).addHandler(handler)
    return handler


async def test_aiokafka_reports_a_wrong_password(broker_factory: BrokerFactory) -> None:
    broker = sasl_broker(broker_factory)
    make_scram_users(broker.bootstrap)
    handler = collecting("aiokafka")
    try:
        for mechanism, (user, _) in LOGINS.items():
            producer = AIOKafkaProducer(
                bootstrap_servers=broker.bootstrap,
                security_protocol="SASL_PLAINTEXT",
                sasl_mechanism=mechanism,
                sasl_plain_username=user,
                sasl_plain_password="wrong",
            )
            with pytest.raises(KafkaConnectionError):
                await producer.start()
            await producer.stop()
            expected = PLAIN_REFUSED if mechanism == "PLAIN" else f"{SCRAM_REFUSED} {mechanism}"
            assert any(
                "SaslAuthenticationFailed" in line and expected in line for line in handler.lines
            ), handler.lines
    finally:
        logging.getLogger("aiokafka").removeHandler(handler)


def test_kafka_python_reports_a_wrong_password(broker_factory: BrokerFactory) -> None:
    broker = sasl_broker(broker_factory)
    make_scram_users(broker.bootstrap)
    handler = collecting("kafka")
    try:
        for mechanism, (user, _) in LOGINS.items():
            with pytest.raises(KafkaTimeoutError):
                KafkaProducer(
                    bootstrap_servers=broker.bootstrap,
                    security_protocol="SASL_PLAINTEXT",
                    sasl_mechanism=mechanism,
                    sasl_plain_username=user,
                    sasl_plain_password="wrong",
                    bootstrap_timeout_ms=2000,
                )
            expected = PLAIN_REFUSED if mechanism == "PLAIN" else f"{SCRAM_REFUSED} {mechanism}"
            assert any(
                "SaslAuthenticationFailedError" in line and expected in line
                for line in handler.lines
            ), handler.lines
    finally:
        logging.getLogger("kafka").removeHandler(handler)


def test_java_client_reports_a_wrong_password(broker_factory: BrokerFactory) -> None:
    broker = sasl_broker(broker_factory)
    make_scram_users(broker.bootstrap)
    for mechanism, (user, _) in LOGINS.items():
        result = java.produce(
            broker.bootstrap, "any-topic", props=java_props(mechanism, user, "wrong"), check=False
        )
        assert result.error_type == "SaslAuthenticationException", result.describe()
        expected = PLAIN_REFUSED if mechanism == "PLAIN" else f"{SCRAM_REFUSED} {mechanism}"
        assert expected in result.errors[0]["message"]


# -- SCRAM users through the admin APIs ---------------------------------------------------


def test_scram_users_made_with_the_java_admin_client_survive_a_restart(
    broker_factory: BrokerFactory, unique_topic: str
) -> None:
    broker = sasl_broker(broker_factory)
    admin = java_props("PLAIN", "admin", "admin-secret")
    altered = java.admin(
        broker.bootstrap,
        "alter-scram",
        "--upsert",
        "jay:SCRAM-SHA-512:8192:jay-secret",
        "--upsert",
        "kim:SCRAM-SHA-256:1000:kim-secret",
        "--delete",
        "nobody:SCRAM-SHA-256",
        props=admin,
    ).records
    assert altered[0] == {"user": "jay", "altered": True}
    assert altered[1]["failure"]["type"].endswith("UnacceptableCredentialException")
    assert altered[1]["failure"]["message"] == "Too few iterations"
    assert altered[2]["failure"]["type"].endswith("ResourceNotFoundException")
    jay = java_props("SCRAM-SHA-512", "jay", "jay-secret")
    java.produce(broker.bootstrap, unique_topic, count=2, props=jay)

    broker.restart()
    described = java.admin(broker.bootstrap, "describe-scram", props=jay).records
    assert described == [
        {"user": "jay", "credentials": [{"mechanism": "SCRAM-SHA-512", "iterations": 8192}]}
    ]
    read = java.consume(broker.bootstrap, unique_topic, max_records=2, props=jay)
    assert len(read.records) == 2
    java.admin(broker.bootstrap, "alter-scram", "--delete", "jay:SCRAM-SHA-512", props=admin)
    refused = java.produce(broker.bootstrap, unique_topic, props=jay, check=False)
    assert refused.error_type == "SaslAuthenticationException"


def test_scram_users_made_with_librdkafka_admin_survive_a_restart(
    broker_factory: BrokerFactory, unique_topic: str
) -> None:
    broker = sasl_broker(broker_factory)
    admin = AdminClient(admin_config(broker.bootstrap))
    sha256 = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
    sha512 = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 10000)
    for future in admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("lee", sha256, b"lee-256")]
    ).values():
        future.result(15)
    for future in admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("lee", sha512, b"lee-512")]
    ).values():
        future.result(15)
    # the same user twice in one request, and too many iterations
    twice = admin.alter_user_scram_credentials(
        [
            UserScramCredentialUpsertion("max", sha256, b"x"),
            UserScramCredentialUpsertion("max", sha512, b"x"),
            UserScramCredentialUpsertion(
                "ned", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 20000), b"x"
            ),
        ]
    )
    with pytest.raises(KafkaException, match="twice"):
        twice["max"].result(15)
    with pytest.raises(KafkaException, match="Too many iterations"):
        twice["ned"].result(15)
    missing = admin.alter_user_scram_credentials(
        [UserScramCredentialDeletion("ghost", ScramMechanism.SCRAM_SHA_256)]
    )
    with pytest.raises(KafkaException, match="does not exist"):
        missing["ghost"].result(15)

    def described() -> dict[str, list[tuple[str, int]]]:
        client = AdminClient(admin_config(broker.bootstrap))
        descriptions = client.describe_user_scram_credentials().result(15)
        return {
            user: sorted(
                (info.mechanism.name, info.iterations) for info in d.scram_credential_infos
            )
            for user, d in descriptions.items()
        }

    expected = {"lee": [("SCRAM_SHA_256", 4096), ("SCRAM_SHA_512", 10000)]}
    assert described() == expected
    create_topic(broker.bootstrap, unique_topic)
    broker.restart()
    assert described() == expected
    for mechanism, password in (("SCRAM-SHA-256", "lee-256"), ("SCRAM-SHA-512", "lee-512")):
        config = rdkafka_config(broker.bootstrap, mechanism, "lee", password)
        values = [f"lee-{mechanism}".encode()]
        assert set(values) <= set(rdkafka_round_trip(config, unique_topic, values))
    # each mechanism has its own password
    wrong = rdkafka_config(broker.bootstrap, "SCRAM-SHA-512", "lee", "lee-256")
    assert SCRAM_REFUSED in rdkafka_login_error(wrong).str()


# -- the protocol from a raw client -------------------------------------------------------


def handshake(client: WireClient, mechanism: str, version: int = 1) -> Any:
    return client.call(SASL_HANDSHAKE, version, {"mechanism": mechanism})


def authenticate(client: WireClient, token: bytes, version: int = 2) -> Any:
    return client.call(SASL_AUTHENTICATE, version, {"auth_bytes": token})


def metadata(client: WireClient) -> Any:
    return client.call(METADATA, 9, {"topics": [], "allow_auto_topic_creation": False})


def test_a_refused_login_is_answered_then_closed(broker_factory: BrokerFactory) -> None:
    broker = sasl_broker(broker_factory)
    with WireClient(broker.bootstrap) as client:
        assert client.call(API_VERSIONS, 3, SOFTWARE).error_code == NONE
        assert handshake(client, "PLAIN").error_code == NONE
        reply = authenticate(client, b"\0alice\0wrong")
        assert reply.error_code == SASL_AUTHENTICATION_FAILED
        assert reply.error_message == PLAIN_REFUSED
        assert client.is_closed_by_peer()


def test_requests_before_authentication_close_the_connection(
    broker_factory: BrokerFactory,
) -> None:
    broker = sasl_broker(broker_factory)
    produce = {"transactional_id": None, "acks": 1, "timeout": 1000, "topic_data": []}
    with WireClient(broker.bootstrap) as client:
        client.send_raw(client.request_bytes(PRODUCE, 9, produce)[1])
        assert client.is_closed_by_peer()
    with WireClient(broker.bootstrap) as client:  # also after the handshake
        assert handshake(client, "PLAIN").error_code == NONE
        client.send_raw(client.request_bytes(METADATA, 9, {"topics": []})[1])
        assert client.is_closed_by_peer()
    with WireClient(broker.bootstrap) as client:  # and SaslAuthenticate without a handshake
        client.send_raw(client.request_bytes(SASL_AUTHENTICATE, 2, {"auth_bytes": b"x"})[1])
        assert client.is_closed_by_peer()


def test_api_versions_before_and_after_and_no_second_handshake(
    broker_factory: BrokerFactory,
) -> None:
    broker = sasl_broker(broker_factory)
    with WireClient(broker.bootstrap) as client:
        versions = client.call(API_VERSIONS, 3, SOFTWARE)
        served = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
        assert served[SASL_HANDSHAKE] == (0, 1) and served[SASL_AUTHENTICATE] == (0, 2)
        reply = handshake(client, "PLAIN")
        assert (reply.error_code, list(reply.mechanisms)) == (NONE, list(MECHANISMS))
        reply = authenticate(client, b"alice\0alice\0alice-secret")
        assert (reply.error_code, reply.auth_bytes) == (NONE, b"")
        assert reply.session_lifetime.total_seconds() == 0
        assert client.call(API_VERSIONS, 3, SOFTWARE).error_code == NONE
        assert metadata(client).brokers
        # no re-authentication: refused, and the connection stays
        assert handshake(client, "PLAIN").error_code == ILLEGAL_SASL_STATE
        assert authenticate(client, b"\0admin\0admin-secret").error_code == ILLEGAL_SASL_STATE
        assert metadata(client).brokers


def test_an_unsupported_mechanism_is_refused_with_the_enabled_list(
    broker_factory: BrokerFactory,
) -> None:
    broker = sasl_broker(broker_factory, {"sasl.enabled.mechanisms": "SCRAM-SHA-512"})
    with WireClient(broker.bootstrap) as client:
        reply = handshake(client, "PLAIN")
        assert reply.error_code == UNSUPPORTED_SASL_MECHANISM
        assert list(reply.mechanisms) == ["SCRAM-SHA-512"]
        assert client.is_closed_by_peer()


def bare_token(client: WireClient, token: bytes) -> bytes:
    client.send_raw(struct.pack(">i", len(token)) + token)
    return client.read_frame()


def test_handshake_v0_exchanges_bare_tokens(broker_factory: BrokerFactory) -> None:
    broker = sasl_broker(broker_factory)
    make_scram_users(broker.bootstrap)
    with WireClient(broker.bootstrap) as client:
        assert handshake(client, "PLAIN", version=0).error_code == NONE
        assert bare_token(client, b"\0alice\0alice-secret") == b""
        assert metadata(client).brokers
    with WireClient(broker.bootstrap) as client:  # SCRAM-SHA-256, written out by hand
        assert handshake(client, "SCRAM-SHA-256", version=0).error_code == NONE
        bare = "n=sam,r=fyko+d2lbbFgONRv9qkxdawL"
        server_first = bare_token(client, f"n,,{bare}".encode()).decode()
        final, signature = scram_client_final("sam-secret", server_first, bare)
        assert bare_token(client, final.encode()) == b"v=" + base64.b64encode(signature)
        assert metadata(client).brokers
    with WireClient(broker.bootstrap) as client:  # a refusal just closes: v0 has no errors
        assert handshake(client, "PLAIN", version=0).error_code == NONE
        client.send_raw(struct.pack(">i", 13) + b"\0alice\0wrong!")
        assert client.is_closed_by_peer()


def scram_client_final(
    password: str, server_first: str, client_first_bare: str
) -> tuple[str, bytes]:
    """A SCRAM-SHA-256 client's final message and the server signature it expects."""
    fields = dict(item.split("=", 1) for item in server_first.split(","))
    salted = hashlib.pbkdf2_hmac(
        "sha256", password.encode(), base64.b64decode(fields["s"]), int(fields["i"])
    )
    client_key = hmac.digest(salted, b"Client Key", "sha256")
    without_proof = f"c=biws,r={fields['r']}"
    auth = f"{client_first_bare},{server_first},{without_proof}".encode()
    signature = hmac.digest(hashlib.sha256(client_key).digest(), auth, "sha256")
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    server_signature = hmac.digest(hmac.digest(salted, b"Server Key", "sha256"), auth, "sha256")
    return f"{without_proof},p={base64.b64encode(proof).decode()}", server_signature


def test_malformed_and_oversized_tokens_close_the_connection(
    broker_factory: BrokerFactory,
) -> None:
    broker = sasl_broker(broker_factory)
    make_scram_users(broker.bootstrap)
    for mechanism, token in (
        ("PLAIN", b"no separators at all"),
        ("PLAIN", b"\xff\0\xfe\0\xfd"),
        ("SCRAM-SHA-256", b"not a client-first message"),
        ("SCRAM-SHA-256", b"p=tls-server-end-point,,n=sam,r=abc"),  # channel binding
    ):
        with WireClient(broker.bootstrap) as client:
            assert handshake(client, mechanism).error_code == NONE
            reply = authenticate(client, token)
            assert reply.error_code == SASL_AUTHENTICATION_FAILED, token
            assert reply.error_message
            assert client.is_closed_by_peer()
    with WireClient(broker.bootstrap) as client:  # a SCRAM final message with a bad proof
        assert handshake(client, "SCRAM-SHA-256").error_code == NONE
        server_first = authenticate(client, b"n,,n=sam,r=abcdef").auth_bytes.decode()
        reply = authenticate(client, f"c=biws,r={server_first[2:].split(',')[0]},p=AAAA".encode())
        assert reply.error_code == SASL_AUTHENTICATION_FAILED
        assert client.is_closed_by_peer()
    with WireClient(broker.bootstrap) as client:  # over sasl.server.max.receive.size
        assert handshake(client, "PLAIN").error_code == NONE
        client.send_raw(
            client.request_bytes(SASL_AUTHENTICATE, 2, {"auth_bytes": b"x" * 600_000})[1]
        )
        assert client.is_closed_by_peer()
    with WireClient(broker.bootstrap) as client:  # a SaslAuthenticate body that does not decode
        assert handshake(client, "PLAIN").error_code == NONE
        header = struct.pack(">hhih", SASL_AUTHENTICATE, 2, 7, 1) + b"x\x00"
        garbage = header + b"\xff\xff\xff\xff\x7f"
        client.send_raw(struct.pack(">i", len(garbage)) + garbage)
        assert client.is_closed_by_peer()
    assert broker.is_running()


def test_a_smaller_max_receive_size(broker_factory: BrokerFactory) -> None:
    broker = sasl_broker(broker_factory, {"sasl.server.max.receive.size": "64"})
    with WireClient(broker.bootstrap) as client:
        assert handshake(client, "PLAIN").error_code == NONE
        assert authenticate(client, b"\0alice\0alice-secret").error_code == NONE
        assert metadata(client).brokers  # after authentication the limit is gone
    with WireClient(broker.bootstrap) as client:
        assert handshake(client, "PLAIN").error_code == NONE
        client.send_raw(client.request_bytes(SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0" * 100})[1])
        assert client.is_closed_by_peer()
    with WireClient(broker.bootstrap) as client:
        # only a size prefix: refused by it, before the broker waits for (or allocates)
        # 50 MB from someone it does not know
        client.send_raw(struct.pack(">i", 50_000_000))
        assert client.is_closed_by_peer()


# -- SASL_SSL and settings ----------------------------------------------------------------


def test_sasl_ssl_with_scram(
    broker_factory: BrokerFactory, tmp_path: Path, unique_topic: str
) -> None:
    certs = make_certs(tmp_path / "certs")
    broker = sasl_broker(
        broker_factory,
        {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs.server.pem)},
        protocol="SASL_SSL",
    )
    base = {"ssl.ca.location": str(certs.ca_pem)}
    admin = AdminClient(
        {**rdkafka_config(broker.bootstrap, "PLAIN", "admin", "admin-secret", "SASL_SSL"), **base}
    )
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
    for future in admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("tls-user", info, b"tls-secret")]
    ).values():
        future.result(15)
    config = {
        **rdkafka_config(broker.bootstrap, "SCRAM-SHA-512", "tls-user", "tls-secret", "SASL_SSL"),
        **base,
    }
    assert rdkafka_round_trip(config, unique_topic, [b"over TLS"]) == [b"over TLS"]


def test_jaas_config_over_several_lines_of_a_properties_file(
    broker_factory: BrokerFactory, tmp_path: Path
) -> None:
    broker = broker_factory(start=False)
    config = tmp_path / "server.properties"
    config.write_text(
        f"listeners=SASL_PLAINTEXT://127.0.0.1:{broker.port}\n"
        "sasl.enabled.mechanisms=PLAIN\n"
        "listener.name.sasl_plaintext.plain.sasl.jaas.config=\\\n"
        "    org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
        '    username="admin" password="admin-secret" \\\n'
        '    user_admin="admin-secret";\n'
    )
    broker.config_file = config
    broker.overrides["listeners"] = f"SASL_PLAINTEXT://127.0.0.1:{broker.port}"
    broker.start()
    with WireClient(broker.bootstrap) as client:
        assert handshake(client, "PLAIN").error_code == NONE
        assert authenticate(client, b"\0admin\0admin-secret").error_code == NONE
    assert "admin-secret" not in broker.log_text()  # the JAAS config is not logged


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"sasl.enabled.mechanisms": "GSSAPI"}, "sasl.enabled.mechanisms: listener"),
        (
            {
                "sasl.enabled.mechanisms": "PLAIN",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": "",
            },
            "no JAAS config names its users",
        ),
        (
            {"listener.name.sasl_plaintext.plain.sasl.jaas.config": "Module required a="},
            "Value not specified for key 'a'",
        ),
    ],
)
def test_settings_that_stop_the_broker(
    broker_factory: BrokerFactory, settings: dict[str, str], message: str
) -> None:
    with pytest.raises(BrokerStartError, match=message):
        sasl_broker(broker_factory, settings)
