"""Client quotas with real tools and clients: Kafka's kafka-configs on both brokers,
quotas kept across a restart, and a librdkafka producer and consumer held to their
byte rates, told so by throttle times."""

from __future__ import annotations

import contextlib
import socket
import struct
import time
import uuid
from typing import Any

from confluent_kafka import Consumer, Producer
from helpers.broker import Broker, BrokerFactory
from helpers.kafka_tools import configs
from helpers.reference_kafka import ReferenceKafka
from helpers.topics import create_topic
from helpers.wire import WireClient

ALTER_QUOTAS, DESCRIBE_QUOTAS = 49, 48
QUOTA = 200_000  # bytes a second
# Unthrottled, both clients move tens of times the quota here. The bounds are wide
# because on a busy machine the samples' edges fall unevenly (seen: 1.5x once).
LOW, HIGH = 0.4, 2.0
# The rate is measured over the samples kept, never over less than (samples - 1)
# windows: with two samples of one second it settles at the quota within two seconds.
SHORT_WINDOW = {"quota.window.num": 2, "quota.window.size.seconds": 1}


def kafka_configs(bootstrap: str, *args: str) -> str:
    out = configs("--bootstrap-server", bootstrap, *args)
    assert out.returncode == 0, out.stderr
    return out.stdout


def set_quota(bootstrap: str, entity: list[tuple[str, str | None]], **values: float) -> None:
    body = {
        "entries": [
            {
                "entity": [{"entity_type": kind, "entity_name": name} for kind, name in entity],
                "ops": [{"key": k, "value": v, "remove": False} for k, v in values.items()],
            }
        ],
        "validate_only": False,
    }
    with WireClient(bootstrap) as client:
        answer = client.call(ALTER_QUOTAS, 1, body)
    assert [entry.error_code for entry in answer.entries] == [0]


def remove_quotas(bootstrap: str, entity: list[tuple[str, str | None]], *keys: str) -> None:
    body = {
        "entries": [
            {
                "entity": [{"entity_type": kind, "entity_name": name} for kind, name in entity],
                "ops": [{"key": key, "value": 0.0, "remove": True} for key in keys],
            }
        ],
        "validate_only": False,
    }
    with WireClient(bootstrap) as client:
        answer = client.call(ALTER_QUOTAS, 1, body)
    assert [entry.error_code for entry in answer.entries] == [0]


def described(bootstrap: str, user: str, client_id: str | None = None) -> list[Any]:
    """The values set on the user (and client id), matched strictly."""
    components = [{"entity_type": "user", "match_type": 0, "match": user}]
    if client_id is not None:
        components.append({"entity_type": "client-id", "match_type": 0, "match": client_id})
    body = {"components": components, "strict": True}
    with WireClient(bootstrap) as client:
        answer = client.call(DESCRIBE_QUOTAS, 1, body)
    return sorted((v.key, v.value) for e in answer.entries for v in e.values)


def test_kafka_configs_users_and_clients_as_kafka(
    kafka44: ReferenceKafka, shared_broker: Broker
) -> None:
    user, client = f"qu-{uuid.uuid4().hex[:8]}", f"qc-{uuid.uuid4().hex[:8]}"
    seen: dict[str, list[str]] = {}
    for name, bootstrap in (("Kafka", kafka44.bootstrap), ("Odradek", shared_broker.bootstrap)):
        user_args = ["--entity-type", "users", "--entity-name", user]
        both_args = [*user_args, "--entity-type", "clients", "--entity-name", client]
        outputs = [
            kafka_configs(
                bootstrap,
                "--alter",
                *user_args,
                "--add-config",
                "producer_byte_rate=1048576000,consumer_byte_rate=2097152000",
            ),
            kafka_configs(
                bootstrap,
                "--alter",
                *both_args,
                "--add-config",
                "request_percentage=200.5,producer_byte_rate=1048576000",
            ),
        ]
        deadline = time.monotonic() + 10  # Kafka's broker learns of it a moment later
        while time.monotonic() < deadline and (
            len(described(bootstrap, user)) < 2 or len(described(bootstrap, user, client)) < 2
        ):
            time.sleep(0.1)
        outputs.append(kafka_configs(bootstrap, "--describe", *user_args))
        outputs.append(kafka_configs(bootstrap, "--describe", *both_args))
        seen[name] = outputs
    assert seen["Odradek"] == seen["Kafka"]
    assert "producer_byte_rate=1.048576E9" in seen["Kafka"][2], seen["Kafka"]
    for bootstrap in (kafka44.bootstrap, shared_broker.bootstrap):
        remove_quotas(bootstrap, [("user", user)], "producer_byte_rate", "consumer_byte_rate")
        remove_quotas(
            bootstrap,
            [("user", user), ("client-id", client)],
            "request_percentage",
            "producer_byte_rate",
        )


def test_quotas_kept_across_a_restart(broker_factory: BrokerFactory) -> None:
    broker = broker_factory()
    set_quota(broker.bootstrap, [("user", "alice")], producer_byte_rate=1024.0)
    set_quota(broker.bootstrap, [("user", None), ("client-id", None)], consumer_byte_rate=2048.0)
    broker.restart()
    assert described(broker.bootstrap, "alice") == [("producer_byte_rate", 1024.0)]
    body = {
        "components": [
            {"entity_type": "user", "match_type": 1, "match": None},
            {"entity_type": "client-id", "match_type": 1, "match": None},
        ],
        "strict": True,
    }
    with WireClient(broker.bootstrap) as client:
        answer = client.call(DESCRIBE_QUOTAS, 1, body)
    assert [(v.key, v.value) for v in answer.entries[0].values] == [("consumer_byte_rate", 2048.0)]


def _steady_rate(marks: list[tuple[float, int]]) -> float:
    """Bytes a second from two seconds after the first mark to the last: the rate
    first allows a burst of a window's worth, and while it has few samples a sample
    emptied by a throttled fetch still widens the time it divides by (Kafka's too)."""
    later = [(t, n) for t, n in marks if t >= marks[0][0] + 2.0]
    (t0, n0), (t1, n1) = later[0], later[-1]
    return (n1 - n0) / (t1 - t0)


def test_producer_and_consumer_held_to_their_byte_rates(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(SHORT_WINDOW)
    topic = f"quota-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic)
    set_quota(broker.bootstrap, [("client-id", "slow-producer")], producer_byte_rate=QUOTA)
    set_quota(broker.bootstrap, [("client-id", "slow-consumer")], consumer_byte_rate=QUOTA)
    value = b"x" * 10_000

    throttles: list[int] = []
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "client.id": "slow-producer",
            "linger.ms": 5,
            "queue.buffering.max.kbytes": 200,  # little waiting in the client
            "throttle_cb": lambda event: throttles.append(event.throttle_time),
        }
    )
    acked = 0
    marks: list[tuple[float, int]] = []

    def delivered(error: Any, message: Any) -> None:
        nonlocal acked
        if error is not None:  # what the test purges at its end
            return
        acked += len(message.value())
        marks.append((time.monotonic(), acked))

    end = time.monotonic() + 5.0
    while time.monotonic() < end:
        with contextlib.suppress(BufferError):  # the client's queue is full: poll on
            producer.produce(topic, value, on_delivery=delivered)
        producer.poll(0.01)
    producer.purge()
    producer.flush(5)
    rate = _steady_rate(marks)
    assert LOW * QUOTA < rate < HIGH * QUOTA, f"producer at {rate:.0f} B/s, quota {QUOTA}"
    assert throttles and max(throttles) > 0

    # unthrottled, the consumer would read all of this in well under a second
    fill = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20})
    for _ in range(400):
        fill.produce(topic, value)
    assert fill.flush(20) == 0
    consumer_throttles: list[int] = []
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "client.id": "slow-consumer",
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            # fetches small beside the quota: the rate is held smoothly (a fetch over the
            # quota is answered empty and counts for nothing, as on Kafka)
            "fetch.max.bytes": 25_000,
            "max.partition.fetch.bytes": 25_000,
            "message.max.bytes": 20_000,
            "throttle_cb": lambda event: consumer_throttles.append(event.throttle_time),
        }
    )
    consumer.subscribe([topic])
    received = 0
    read: list[tuple[float, int]] = []
    try:
        end = time.monotonic() + 8.0
        while time.monotonic() < end and (not read or time.monotonic() < read[0][0] + 5.0):
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                received += len(message.value())
                read.append((time.monotonic(), received))
    finally:
        consumer.close()
    rate = _steady_rate(read)
    assert LOW * QUOTA < rate < HIGH * QUOTA, f"consumer at {rate:.0f} B/s, quota {QUOTA}"
    assert consumer_throttles and max(consumer_throttles) > 0


def _ms(throttle: Any) -> int:
    """A throttle time as kio reads it (a timedelta) in milliseconds."""
    return round(throttle.total_seconds() * 1000)


def test_controller_mutation_rate_as_kafka(either_broker: str) -> None:
    """10 partitions a second, a bucket of 11 seconds' worth (110): strict from
    CreateTopics v6, DeleteTopics v5 and CreatePartitions v3, permissive before."""
    client_id, tag = f"mut-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex[:8]
    entity: list[tuple[str, str | None]] = [("client-id", client_id)]
    set_quota(either_broker, entity, controller_mutation_rate=10.0)
    try:
        with WireClient(either_broker, timeout=15) as client:
            client.client_id = client_id
            deadline = time.monotonic() + 10
            body = {
                "components": [{"entity_type": "client-id", "match_type": 0, "match": client_id}],
                "strict": True,
            }
            while not client.call(DESCRIBE_QUOTAS, 1, body).entries:
                assert time.monotonic() < deadline, "the quota never showed"
                time.sleep(0.1)
            time.sleep(1)  # Kafka's controller applies it as its brokers learn of it

            def create(version: int, count: int, partitions: int, prefix: str) -> Any:
                topics = [
                    {
                        "name": f"{prefix}{i}-{tag}",
                        "num_partitions": partitions,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                    for i in range(count)
                ]
                body = {"topics": topics, "timeout": 5000, "validate_only": False}
                return client.call(19, version, body)

            # a full bucket takes all 120: each topic found it at zero or above
            first = create(7, 3, 40, "a")
            assert [(t.error_code, _ms(first.throttle_time)) for t in first.topics] == [(0, 0)] * 3
            # now 10 below zero: refused, one second to wait (the connection muted)
            refused = create(7, 1, 1, "b")
            assert [(t.error_code, t.error_message) for t in refused.topics] == [(89, None)]
            # (less as the bucket refills while the broker creates the 120)
            assert 0 < _ms(refused.throttle_time) <= 1000
            # v5 is permissive: done, and told to wait for the 10 it takes
            permissive = create(5, 2, 5, "c")
            assert [t.error_code for t in permissive.topics] == [0, 0]
            assert 0 < _ms(permissive.throttle_time) <= 1000
            # past the muted second, the bucket is back above zero: a strict DeleteTopics
            # of 40 partitions is done (no wait asked: it found the bucket at zero or
            # above), and takes the bucket 30 or more below zero
            time.sleep(1.5)
            delete = {"topics": [{"name": f"a0-{tag}", "topic_id": None}], "timeout": 5000}
            deleted = client.call(20, 6, delete)
            assert [r.error_code for r in deleted.responses] == [0]
            assert _ms(deleted.throttle_time) == 0
            grow = {
                "topics": [{"name": f"a1-{tag}", "count": 41, "assignments": None}],
                "timeout": 5000,
                "validate_only": False,
            }
            grown = client.call(37, 3, grow)
            assert [(r.error_code, r.error_message) for r in grown.results] == [(89, None)]
            assert 2000 <= _ms(grown.throttle_time) <= 4000
            named = [{"name": f"a1-{tag}"}, {"name": f"b0-{tag}"}]
            metadata = client.call(3, 12, {"topics": named, "allow_auto_topic_creation": False})
            counts = {t.name: (t.error_code, len(t.partitions)) for t in metadata.topics}
            assert counts == {f"a1-{tag}": (0, 40), f"b0-{tag}": (3, 0)}
    finally:
        remove_quotas(either_broker, entity, "controller_mutation_rate")


def _api_versions_from(bootstrap: str, source_ip: str) -> tuple[str, float]:
    """('answered' | 'closed', seconds) for one new connection from `source_ip`."""
    host, port = bootstrap.rsplit(":", 1)
    request = struct.pack(">hhih", 18, 0, 1, 1) + b"t"
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=5, source_address=(source_ip, 0)) as s:
        s.sendall(struct.pack(">i", len(request)) + request)
        try:
            answered = len(s.recv(4)) == 4
        except ConnectionResetError:
            answered = False
    return ("answered" if answered else "closed"), time.monotonic() - started


def test_connection_creation_rate_as_kafka(either_broker: str) -> None:
    """One connection a second from an ip, measured over 10 s at least: ten at once are
    taken, the next are held unread for up to a window (1 s) and closed."""
    ip = "127.0.0.2"  # (a loopback address of its own: the quota holds no other client)
    set_quota(either_broker, [("ip", ip)], connection_creation_rate=1.0)
    try:
        body = {"components": [{"entity_type": "ip", "match_type": 0, "match": ip}]}
        with WireClient(either_broker) as client:
            deadline = time.monotonic() + 10
            while not client.call(DESCRIBE_QUOTAS, 1, {**body, "strict": True}).entries:
                assert time.monotonic() < deadline, "the quota never showed"
                time.sleep(0.1)
        time.sleep(1)  # Kafka's acceptors apply it a moment after
        outcomes = [_api_versions_from(either_broker, ip) for _ in range(13)]
        assert [kind for kind, _s in outcomes] == ["answered"] * 10 + ["closed"] * 3
        assert all(0.5 <= seconds <= 3 for _kind, seconds in outcomes[10:]), outcomes
    finally:
        remove_quotas(either_broker, [("ip", ip)], "connection_creation_rate")
