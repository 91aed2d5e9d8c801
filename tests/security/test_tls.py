"""SSL listeners with the real clients: round trips through the Java client,
librdkafka, aiokafka and kafka-python; PEM, inline PEM and PKCS12 key stores;
client certificates (ssl.client.auth) and the principal they give; per-listener
settings; what a client that does not trust the CA, or that sends garbage, gets."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.helpers import create_ssl_context
from confluent_kafka import Consumer, KafkaException, Producer
from helpers import java
from helpers.broker import REPO_ROOT, Broker, BrokerFactory, free_port
from helpers.certs import Certs, Identity, make_certs
from helpers.logs import client_logger
from helpers.wire import WireClient
from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import KafkaTimeoutError

pytestmark = pytest.mark.timeout(180)

METADATA = 3
TLS_ALERT = 0x15  # the content type of a TLS alert record


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def other_certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    """A second CA, which the brokers and clients of these tests do not trust."""
    return make_certs(tmp_path_factory.mktemp("other-certs"), ca_name="some other CA")


def pem_store(certs: Certs) -> dict[str, str]:
    return {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs.server.pem)}


def ssl_broker(
    broker_factory: BrokerFactory,
    settings: Mapping[str, str],
    *,
    other_listeners: str = "",
    log_level: str = "info",
) -> Broker:
    """A broker whose listener SSL is on ``broker.port``, after ``other_listeners``
    (the start-up check waits for the last listener, so every other one is open too)."""
    broker = broker_factory(start=False)
    listeners = [*other_listeners.split(","), f"SSL://127.0.0.1:{broker.port}"]
    broker.overrides.update({"listeners": ",".join(filter(None, listeners)), **settings})
    broker.extra_args += ["--log-level", log_level]
    return broker.start()


# -- clients ----------------------------------------------------------------------------


def rdkafka_config(
    bootstrap: str, ca: Path | None, client: Identity | None = None
) -> dict[str, Any]:
    config: dict[str, Any] = {"bootstrap.servers": bootstrap}
    if ca is not None:
        config.update({"security.protocol": "SSL", "ssl.ca.location": str(ca)})
    if client is not None:
        config.update(
            {
                "ssl.certificate.location": str(client.cert_pem),
                "ssl.key.location": str(client.key_pem),
            }
        )
    return config


def rdkafka_round_trip(config: Mapping[str, Any], topic: str, values: list[bytes]) -> list[bytes]:
    producer = Producer({**config, "message.timeout.ms": 20000})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0
    consumer = Consumer({**config, "group.id": topic, "auto.offset.reset": "earliest"})
    got: list[bytes] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        while len(got) < len(values) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message.value())
    finally:
        consumer.close()
    return got


def rdkafka_refused(config: Mapping[str, Any]) -> str:
    """Metadata through a client that should not get through; what it logged and the
    errors it reported."""
    logger, collect = client_logger(logging.INFO)
    errors: list[str] = []
    client = Producer({**config, "logger": logger, "error_cb": lambda e: errors.append(str(e))})
    with pytest.raises(KafkaException):
        client.list_topics(timeout=6)
    client.poll(0.5)  # delivers the queued log lines
    return "\n".join(collect.lines + errors)


def java_props(certs: Certs, client: Identity | None = None) -> dict[str, str]:
    props = {
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(certs.ca_pem),
    }
    if client is not None:
        props.update(
            {
                "ssl.keystore.type": "PKCS12",
                "ssl.keystore.location": str(client.p12),
                "ssl.keystore.password": certs.password,
            }
        )
    return props


def principals(broker: Broker) -> set[str]:
    """The principals of the connections the broker opened (from its debug log)."""
    found = set()
    for line in broker.log_text().splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            if entry.get("event") == "connection opened" and "principal" in entry:
                found.add(entry["principal"])
    return found


# -- round trips ----------------------------------------------------------------------


def test_java_client_round_trip_with_a_pkcs12_key_store(
    broker_factory: BrokerFactory, certs: Certs, unique_topic: str
) -> None:
    # no ssl.keystore.type: Kafka's default, JKS, reads PKCS12 files too (as Java 17 does)
    broker = ssl_broker(
        broker_factory,
        {
            "ssl.keystore.location": str(certs.server.p12),
            "ssl.keystore.password": certs.password,
            "ssl.key.password": certs.password,
        },
    )
    props = java_props(certs)
    java.produce(broker.bootstrap, unique_topic, count=50, props=props)
    result = java.consume(broker.bootstrap, unique_topic, until_end=True, props=props)
    assert [r["value"] for r in result.records] == [f"value-{i}" for i in range(50)]


def test_librdkafka_round_trip_with_a_pem_key_store(
    broker_factory: BrokerFactory, certs: Certs, unique_topic: str
) -> None:
    broker = ssl_broker(broker_factory, pem_store(certs))
    values = [b"record-%d" % i for i in range(100)]
    assert (
        rdkafka_round_trip(rdkafka_config(broker.bootstrap, certs.ca_pem), unique_topic, values)
        == values
    )


async def test_aiokafka_round_trip_with_an_inline_pem_key_store(
    broker_factory: BrokerFactory, certs: Certs, unique_topic: str
) -> None:
    broker = ssl_broker(
        broker_factory,
        {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.key": certs.server.key_text(),
            "ssl.keystore.certificate.chain": certs.server.chain_text(),
        },
    )
    context = create_ssl_context(cafile=str(certs.ca_pem))
    producer = AIOKafkaProducer(
        bootstrap_servers=broker.bootstrap, security_protocol="SSL", ssl_context=context
    )
    await producer.start()
    try:
        for i in range(30):
            await producer.send_and_wait(unique_topic, b"aio-%d" % i)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        unique_topic,
        bootstrap_servers=broker.bootstrap,
        security_protocol="SSL",
        ssl_context=context,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    try:
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < 30 and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=500)
            got += [m.value for messages in batches.values() for m in messages if m.value]
    finally:
        await consumer.stop()
    assert got == [b"aio-%d" % i for i in range(30)]


def test_kafka_python_round_trip_and_large_fetches(
    broker_factory: BrokerFactory, certs: Certs, unique_topic: str
) -> None:
    """Large Fetch answers come from the log files: over TLS they must be encrypted like
    the rest (no sendfile past the TLS layer)."""
    broker = ssl_broker(broker_factory, pem_store(certs))
    ssl_settings = {"security_protocol": "SSL", "ssl_cafile": str(certs.ca_pem)}
    values = [os.urandom(400 * 1024) for _ in range(12)]
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap, max_request_size=2 * 1024 * 1024, **ssl_settings
    )
    for value in values:
        producer.send(unique_topic, value)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(
        unique_topic,
        bootstrap_servers=broker.bootstrap,
        auto_offset_reset="earliest",
        consumer_timeout_ms=20000,
        fetch_max_bytes=8 * 1024 * 1024,
        max_partition_fetch_bytes=8 * 1024 * 1024,
        **ssl_settings,
    )
    try:
        got = [message.value for _, message in zip(range(len(values)), consumer, strict=False)]
    finally:
        consumer.close()
    assert [hashlib.sha256(v).hexdigest() for v in got] == [
        hashlib.sha256(v).hexdigest() for v in values
    ]


# -- client certificates ----------------------------------------------------------------


def test_required_client_certificates(
    broker_factory: BrokerFactory, certs: Certs, unique_topic: str
) -> None:
    broker = ssl_broker(
        broker_factory,
        {
            **pem_store(certs),
            "ssl.client.auth": "required",
            "ssl.truststore.type": "PKCS12",
            "ssl.truststore.location": str(certs.truststore_p12()),
            "ssl.truststore.password": certs.password,
        },
        log_level="debug",
    )
    refused = rdkafka_refused(rdkafka_config(broker.bootstrap, certs.ca_pem))
    # TLS 1.3: the client's handshake ends before the server reads its (empty) certificate
    assert "SSL connection closed by peer" in refused or "certificate" in refused, refused

    alice = certs.client("alice")
    values = [b"from alice %d" % i for i in range(10)]
    config = rdkafka_config(broker.bootstrap, certs.ca_pem, alice)
    assert rdkafka_round_trip(config, unique_topic, values) == values
    props = java_props(certs, certs.client("bob", organizational_unit="java"))
    result = java.consume(broker.bootstrap, unique_topic, until_end=True, props=props)
    assert [r["value"] for r in result.records] == [v.decode() for v in values]

    seen = principals(broker)
    assert "User:CN=alice,OU=test,O=odradek" in seen
    assert "User:CN=bob,OU=java,O=odradek" in seen
    assert broker.is_running()


def test_principals_without_certificates_and_mapping_rules(
    broker_factory: BrokerFactory, certs: Certs, unique_topic: str
) -> None:
    broker = ssl_broker(
        broker_factory,
        {
            **pem_store(certs),
            "ssl.client.auth": "requested",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(certs.ca_pem),
            "ssl.principal.mapping.rules": "RULE:^CN=([^,]+),OU=test,.*$/$1/U",
        },
        log_level="debug",
    )
    values = [b"v"]
    anonymous = rdkafka_config(broker.bootstrap, certs.ca_pem)
    assert rdkafka_round_trip(anonymous, unique_topic, values) == values
    carol = rdkafka_config(broker.bootstrap, certs.ca_pem, certs.client("carol"))
    assert rdkafka_round_trip(carol, unique_topic + "-carol", values) == values
    seen = principals(broker)
    assert {"User:ANONYMOUS", "User:CAROL"} <= seen, seen

    # no rule applies to this subject: the connection is refused
    dave = certs.client("dave", organizational_unit="elsewhere")
    rdkafka_refused(rdkafka_config(broker.bootstrap, certs.ca_pem, dave))
    assert "no ssl.principal.mapping.rules apply to CN=dave,OU=elsewhere" in broker.log_text()
    assert broker.is_running()


def test_clients_that_do_not_trust_the_broker(
    broker_factory: BrokerFactory, certs: Certs, other_certs: Certs
) -> None:
    broker = ssl_broker(broker_factory, pem_store(certs))
    refused = rdkafka_refused(rdkafka_config(broker.bootstrap, other_certs.ca_pem))
    assert "certificate verify failed" in refused, refused
    with pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"):
        KafkaProducer(
            bootstrap_servers=broker.bootstrap,
            security_protocol="SSL",
            ssl_cafile=str(other_certs.ca_pem),
            bootstrap_timeout_ms=4000,
        )
    # a client certificate from a CA the broker does not trust
    required = ssl_broker(
        broker_factory,
        {**pem_store(certs), "ssl.client.auth": "required", "ssl.truststore.type": "PEM"}
        | {"ssl.truststore.location": str(certs.ca_pem)},
    )
    stranger = other_certs.client("stranger")
    rdkafka_refused(rdkafka_config(required.bootstrap, certs.ca_pem, stranger))
    assert broker.is_running() and required.is_running()


# -- listeners ------------------------------------------------------------------------


def test_per_listener_key_stores(
    broker_factory: BrokerFactory, certs: Certs, other_certs: Certs, unique_topic: str
) -> None:
    """PLAINTEXT, and two SSL listeners: INTERNAL with the broker-wide key store, SSL with
    its own (listener.name.ssl.ssl.keystore.location), from another CA."""
    plain, internal = free_port(), free_port()
    broker = ssl_broker(
        broker_factory,
        {
            **pem_store(certs),
            "listener.name.ssl.ssl.keystore.type": "PKCS12",
            "listener.name.ssl.ssl.keystore.location": str(other_certs.server.p12),
            "listener.name.ssl.ssl.keystore.password": other_certs.password,
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SSL,SSL:SSL",
        },
        other_listeners=f"PLAINTEXT://127.0.0.1:{plain},INTERNAL://127.0.0.1:{internal}",
    )
    values = [b"through %d" % i for i in range(5)]
    plain_config = rdkafka_config(f"127.0.0.1:{plain}", None)
    internal_config = rdkafka_config(f"127.0.0.1:{internal}", certs.ca_pem)
    own_config = rdkafka_config(broker.bootstrap, other_certs.ca_pem)
    assert rdkafka_round_trip(plain_config, unique_topic + "-plain", values) == values
    assert rdkafka_round_trip(internal_config, unique_topic + "-internal", values) == values
    assert rdkafka_round_trip(own_config, unique_topic + "-own", values) == values
    # each SSL listener shows its own certificate
    rdkafka_refused(rdkafka_config(f"127.0.0.1:{internal}", other_certs.ca_pem))
    rdkafka_refused(rdkafka_config(broker.bootstrap, certs.ca_pem))
    # and the PLAINTEXT one none
    with WireClient(f"127.0.0.1:{plain}") as client:
        reply = client.call(METADATA, 9, {"topics": [], "allow_auto_topic_creation": False})
    assert [b.port for b in reply.brokers] == [plain]


def test_garbage_and_plaintext_requests_on_a_tls_port(
    broker_factory: BrokerFactory, certs: Certs, unique_topic: str
) -> None:
    broker = ssl_broker(broker_factory, pem_store(certs))
    junk = [
        os.urandom(5000),
        b"\x16\x03\x01\xff\xff" + os.urandom(64),  # a TLS record header claiming 64 KiB
        b"\x00\x00\x00\x0e\x00\x12\x00\x03\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00",  # ApiVersions
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    ]
    for data in junk:
        with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as raw:
            raw.sendall(data)
            raw.shutdown(socket.SHUT_WR)
            received = b""
            while chunk := raw.recv(65536):  # ends when the broker closes the connection
                received += chunk
            assert received == b"" or received[0] == TLS_ALERT, received[:16]
    # a handshake that stops half way, then a good client
    context = ssl.create_default_context(cafile=str(certs.ca_pem))
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    client_hello = outgoing.read()
    assert len(client_hello) > 20
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as raw:
        raw.sendall(client_hello[: len(client_hello) // 2])
    values = [b"still serving"]
    config = rdkafka_config(broker.bootstrap, certs.ca_pem)
    assert rdkafka_round_trip(config, unique_topic, values) == values
    assert broker.is_running()


# -- settings that stop the broker ------------------------------------------------------


def run_broker(tmp_path: Path, settings: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, "-m", "odradek", "--data-dir", str(tmp_path / "data")]
    for key, value in {"listeners": f"SSL://127.0.0.1:{free_port()}", **settings}.items():
        args += ["--override", f"{key}={value}"]
    return subprocess.run(
        args,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("no key store", "ssl.keystore.location: not set: listener SSL uses SSL"),
        ("jks", "is a JKS store, which Odradek does not read: use PKCS12 or PEM"),
        ("wrong password", "ssl.keystore.password: cannot open the PKCS12 key store"),
        ("pem with a store password", "ssl.keystore.password: not used with PEM stores"),
        ("key of another certificate", "do not go together"),
        ("missing file", "ssl.keystore.location: cannot read"),
        ("client auth", "ssl.client.auth: 'always' is not one of none, requested, required"),
        ("protocols", "ssl.enabled.protocols: TLSv9: not a TLS version"),
        ("cipher", "ssl.cipher.suites: TLS_NO_SUCH_CIPHER_WITH_NOTHING"),
        ("rules", "ssl.principal.mapping.rules: invalid rule"),
        ("prefixed", "listener.name.ssl.ssl.keystore.type: 'JCEKS' is not a store type"),
        ("pem key store as jks", "server.pem is PEM: set ssl.keystore.type=PEM"),
        ("pem trust store as jks", "ca.pem is PEM: set ssl.truststore.type=PEM"),
    ],
)
def test_settings_that_stop_the_broker(
    tmp_path: Path, certs: Certs, other_certs: Certs, case: str, words: str
) -> None:
    p12 = {
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(certs.server.p12),
        "ssl.keystore.password": certs.password,
    }
    mixed = tmp_path / "mixed.pem"
    mixed.write_text(certs.server.key_text() + other_certs.server.chain_text())
    settings = {
        "no key store": {},
        "jks": {
            "ssl.keystore.location": str(certs.jks_keystore()),
            "ssl.keystore.password": certs.password,
        },
        "wrong password": {**p12, "ssl.keystore.password": "not-it"},
        "pem with a store password": {**pem_store(certs), "ssl.keystore.password": "x"},
        "key of another certificate": {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(mixed),
        },
        "missing file": {**p12, "ssl.keystore.location": str(tmp_path / "absent.p12")},
        "client auth": {**p12, "ssl.client.auth": "always"},
        "protocols": {**p12, "ssl.enabled.protocols": "TLSv1.2,TLSv9"},
        "cipher": {**p12, "ssl.cipher.suites": "TLS_NO_SUCH_CIPHER_WITH_NOTHING"},
        "rules": {**p12, "ssl.principal.mapping.rules": "RULE:^CN=(.*)$/$1/X/Y"},
        "prefixed": {**p12, "listener.name.ssl.ssl.keystore.type": "JCEKS"},
        "pem key store as jks": {
            "ssl.keystore.location": str(certs.server.pem),
            "ssl.keystore.password": certs.password,
        },
        "pem trust store as jks": {**p12, "ssl.truststore.location": str(certs.ca_pem)},
    }[case]
    done = run_broker(tmp_path, settings)
    assert done.returncode != 0
    assert words in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
