"""Security benchmark: what TLS and SASL cost on one Odradek, in one run.

Run from the repository root:

    .venv/bin/python -m bench.security [--quick]

One broker with three listeners: PLAINTEXT, SSL and SASL_SSL (PLAIN and
SCRAM-SHA-256), a server certificate from a CA made for the run (ECDSA P-256).
The client is confluent-kafka (librdkafka) in this process.

- produce: 1 KB records, acks=1, linger.ms=5, one partition, for a fixed time;
  MB/s of record values, PLAINTEXT vs SSL (ratio SSL / PLAINTEXT).
- consume: the same topic read from the start by assign(), PLAINTEXT vs SSL.
- connection set-up: a new producer's first Metadata answer (TCP, TLS handshake,
  ApiVersions, SASL), median of several, PLAINTEXT vs SSL vs SASL_SSL.

librdkafka's mock cluster has no TLS listener, so the peer here is Odradek's own
PLAINTEXT listener.
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from bench.peers import (
    REPO,
    payloads,
)
from bench.report import (
    Row,
    arg_parser,
    remove_workdir,
    report,
    start_run,
)
from odradek.testing import Broker, free_port

sys.path.insert(0, str(REPO / "tests"))
from helpers.certs import make_certs  # noqa: E402

USER, PASSWORD = "bench", "bench-secret"


@dataclass
class Settings:
    quick: bool
    seconds: float
    setups: int

    @classmethod
    def make(cls, quick: bool) -> Settings:
        return cls(True, 3.0, 5) if quick else cls(False, 10.0, 15)


def produce_rate(config: dict[str, Any], topic: str, seconds: float) -> float:
    producer = Producer({**config, "acks": 1, "linger.ms": 5})
    producer.list_topics(topic, timeout=10)
    values = payloads(1024)
    sent = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        try:
            producer.produce(topic, values[sent & 15])
            sent += 1
        except BufferError:
            producer.poll(0.005)
        if sent & 1023 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    return sent * 1024 / (time.perf_counter() - started) / 1e6


def consume_rate(config: dict[str, Any], topic: str, end: int) -> float:
    consumer = Consumer({**config, "group.id": "bench", "enable.auto.commit": False,
                         "fetch.max.bytes": 52428800})  # fmt: skip
    consumer.assign([TopicPartition(topic, 0, 0)])
    read = size = 0
    started = time.perf_counter()
    while read < end:
        for message in consumer.consume(1000, 1.0):
            if message.error() is None:
                read += 1
                size += len(message.value() or b"")
    elapsed = time.perf_counter() - started
    consumer.close()
    return size / elapsed / 1e6


def end_offset(config: dict[str, Any], topic: str) -> int:
    consumer = Consumer({**config, "group.id": "bench"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])
    finally:
        consumer.close()


def setup_ms(config: dict[str, Any], times: int) -> float:
    samples = []
    for _ in range(times):
        started = time.perf_counter()
        producer = Producer(config)
        producer.list_topics(timeout=10)
        samples.append((time.perf_counter() - started) * 1000)
        del producer
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> int:
    args = arg_parser(__doc__).parse_args(argv)
    settings = Settings.make(args.quick)
    run = start_run(settings, "security", "odradek-bench-security-")
    certs = make_certs(run.workdir / "certs")
    plain_port, ssl_port, sasl_port = free_port(), free_port(), free_port()
    jaas = (f'org.apache.kafka.common.security.plain.PlainLoginModule required '
            f'user_{USER}="{PASSWORD}";')  # fmt: skip
    overrides = {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain_port},SSL://127.0.0.1:{ssl_port},"
        f"SASL_SSL://127.0.0.1:{sasl_port}",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(certs.server.pem),
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas,
    }
    broker = Broker(run.workdir / "data", port=plain_port, overrides=overrides)
    tls = {"security.protocol": "SSL", "ssl.ca.location": str(certs.ca_pem)}
    configs: dict[str, dict[str, Any]] = {
        "PLAINTEXT": {"bootstrap.servers": f"127.0.0.1:{plain_port}"},
        "SSL": {"bootstrap.servers": f"127.0.0.1:{ssl_port}", **tls},
    }
    sasl = {
        "bootstrap.servers": f"127.0.0.1:{sasl_port}",
        **tls,
        "security.protocol": "SASL_SSL",
        "sasl.username": USER,
        "sasl.password": PASSWORD,
    }
    try:
        broker.start()
        admin = AdminClient(configs["PLAINTEXT"])
        admin.create_topics([NewTopic(t, 1, 1) for t in ("plain", "tls")])["tls"].result(15)
        upsert = UserScramCredentialUpsertion(
            USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), PASSWORD.encode()
        )
        admin.alter_user_scram_credentials([upsert])[USER].result(15)
        del admin  # librdkafka would keep reconnecting after the broker stops
        rates: dict[str, dict[str, float]] = {}
        for name, topic in (("PLAINTEXT", "plain"), ("SSL", "tls")):
            print(f"  produce + consume over {name} ...", flush=True)
            produced = produce_rate(configs[name], topic, settings.seconds)
            end = end_offset(configs[name], topic)
            rates[name] = {"produce": produced, "consume": consume_rate(configs[name], topic, end)}
        print("  connection set-up ...", flush=True)
        setups = {
            "PLAINTEXT": setup_ms(configs["PLAINTEXT"], settings.setups),
            "SSL": setup_ms(configs["SSL"], settings.setups),
            "SASL_SSL PLAIN": setup_ms({**sasl, "sasl.mechanism": "PLAIN"}, settings.setups),
            "SASL_SSL SCRAM-SHA-256": setup_ms(
                {**sasl, "sasl.mechanism": "SCRAM-SHA-256"}, settings.setups
            ),
        }
    finally:
        broker.stop()
    for case in ("produce", "consume"):
        secured, plain = rates["SSL"][case], rates["PLAINTEXT"][case]
        title = f"{case} 1 KB records, 1 partition: SSL vs PLAINTEXT"
        run.rows.append(
            Row(title, "MB/s", "higher", secured, plain, f"{secured:.1f}", f"{plain:.1f}")
        )
    for name in ("SSL", "SASL_SSL PLAIN", "SASL_SSL SCRAM-SHA-256"):
        run.rows.append(Row(f"connection set-up to first Metadata: {name} vs PLAINTEXT", "ms",
                            "lower", setups[name], setups["PLAINTEXT"],
                            f"{setups[name]:.1f}", f"{setups['PLAINTEXT']:.1f}"))  # fmt: skip
    notes = [
        "Ratio = secured / PLAINTEXT for rates, PLAINTEXT / secured for times "
        "(1.00 would mean security costs nothing).",
    ]
    report(run, name="security", notes=notes, findings=[], settings=asdict(settings),
           ratio_meaning="secured listener / PLAINTEXT listener of the same broker",
           columns=("secured", "PLAINTEXT"))  # fmt: skip
    remove_workdir(run, args.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
