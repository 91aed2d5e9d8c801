"""Client telemetry (KIP-714) from the Java client 4.4, which pushes its metrics by
default (enable.metrics.push): once a client-metrics subscription matches a producer and
a consumer, what they push shows on Odradek's /metrics, labelled by client."""

from __future__ import annotations

import time
import urllib.request

from helpers import java
from helpers.broker import BrokerFactory, free_port
from helpers.names import unique_name
from helpers.wire import WireClient

INCREMENTAL_ALTER_CONFIGS, CLIENT_METRICS = 44, 16


def _pushed(port: int | None, client_id: str) -> list[str]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return [line for line in text.splitlines() if f'client_id="{client_id}"' in line]


def test_pushed_metrics_show_on_prometheus(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(start=False)
    broker.metrics_port = free_port()
    broker.start()
    topic, producer_id, consumer_id = unique_name("t"), unique_name("p"), unique_name("c")
    body = {
        "resources": [
            {
                "resource_type": CLIENT_METRICS,
                "resource_name": "java-clients",
                "configs": [
                    {
                        "name": "metrics",
                        "config_operation": 0,
                        "value": "org.apache.kafka.producer.,org.apache.kafka.consumer.",
                    },
                    {"name": "interval.ms", "config_operation": 0, "value": "500"},
                    {
                        "name": "match",
                        "config_operation": 0,
                        "value": f"client_id=({producer_id}|{consumer_id})",
                    },
                ],
            }
        ],
        "validate_only": False,
    }
    with WireClient(broker.bootstrap) as client:
        assert client.call(INCREMENTAL_ALTER_CONFIGS, 1, body).responses[0].error_code == 0
    # each runs for a few push intervals (and pushes once more as it closes)
    produced = java.run(
        ["produce", "--bootstrap", broker.bootstrap, "--topic", topic, "--count", "10"]
        + ["--pace-ms", "200", *java.props_args({"client.id": producer_id})]
    )
    assert len(produced.records) == 10
    consumed = java.run(
        ["consume", "--bootstrap", broker.bootstrap, "--topic", topic, "--from", "earliest"]
        + ["--timeout-ms", "2500", *java.props_args({"client.id": consumer_id})]
    )
    assert len(consumed.records) == 10
    deadline = time.monotonic() + 15
    producer_lines: list[str] = []
    consumer_lines: list[str] = []
    while time.monotonic() < deadline and not (producer_lines and consumer_lines):
        producer_lines = _pushed(broker.metrics_port, producer_id)
        consumer_lines = _pushed(broker.metrics_port, consumer_id)
        time.sleep(0.2)
    assert any(line.startswith("org_apache_kafka_producer_") for line in producer_lines), (
        producer_lines
    )
    assert any(line.startswith("org_apache_kafka_consumer_") for line in consumer_lines), (
        consumer_lines
    )
    assert all("client_instance_id=" in line for line in producer_lines + consumer_lines)
