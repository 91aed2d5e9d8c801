"""Client-metrics subscriptions through Kafka 4.4's own tools, kafka-client-metrics and
kafka-configs --entity-type client-metrics (the Java Admin client 4.4: ListConfigResources,
DescribeConfigs, IncrementalAlterConfigs), the same on Odradek and Apache Kafka 4.4; and
on an Odradek of its own, that they survive a restart."""

from __future__ import annotations

from helpers import kafka_tools
from helpers.both_brokers import on_both
from helpers.broker import Broker
from helpers.names import unique_name
from helpers.reference_kafka import ReferenceKafka
from helpers.wire import WireClient

DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS, LIST_CONFIG_RESOURCES = 32, 44, 74
CLIENT_METRICS = 16


def test_client_metrics_tools(shared_broker: Broker, kafka44: ReferenceKafka) -> None:
    def scenario(bootstrap: str) -> dict[str, list[str]]:
        name = unique_name("cli-sub")
        seen: dict[str, list[str]] = {}
        for step, tool, args in (
            (
                "alter",
                "kafka-client-metrics",
                [
                    "--alter",
                    "--name",
                    name,
                    "--metrics",
                    "org.apache.kafka.producer.,org.apache.kafka.consumer.",
                    "--interval",
                    "1000",
                    "--match",
                    "client_id=app-.*",
                ],
            ),
            ("list", "kafka-client-metrics", ["--list"]),
            (
                "alter with kafka-configs",
                "kafka-configs",
                [
                    "--alter",
                    "--entity-type",
                    "client-metrics",
                    "--entity-name",
                    name,
                    "--add-config",
                    "interval.ms=2000",
                ],
            ),
            ("describe", "kafka-client-metrics", ["--describe", "--name", name]),
            (
                "describe with kafka-configs",
                "kafka-configs",
                ["--describe", "--entity-type", "client-metrics", "--entity-name", name],
            ),
            ("delete", "kafka-client-metrics", ["--delete", "--name", name]),
        ):
            ran = kafka_tools.run(tool, bootstrap, args)
            lines = [line.replace(name, "<name>") for line in ran.lines()]
            if step == "list":
                lines = [line for line in lines if "<name>" in line]
            seen[step] = [str(ran.returncode), *lines]
        return seen

    outcomes = on_both(scenario, shared_broker, kafka44)
    odradek, kafka = outcomes["odradek"], outcomes["kafka44"]
    assert odradek == kafka
    assert {lines[0] for lines in odradek.values()} == {"0"}  # every step succeeded
    assert odradek["list"][1:] == ["<name>"]
    assert any("interval.ms=2000" in line for line in odradek["describe with kafka-configs"])


def test_subscriptions_survive_a_restart(broker: Broker) -> None:
    name = unique_name("kept")
    body = {
        "resources": [
            {
                "resource_type": CLIENT_METRICS,
                "resource_name": name,
                "configs": [
                    {"name": "interval.ms", "config_operation": 0, "value": "1500"},
                    {"name": "metrics", "config_operation": 0, "value": "*"},
                ],
            }
        ],
        "validate_only": False,
    }
    with WireClient(broker.bootstrap) as client:
        answer = client.call(INCREMENTAL_ALTER_CONFIGS, 1, body)
        assert answer.responses[0].error_code == 0
    broker.restart()
    with WireClient(broker.bootstrap) as client:
        listed = client.call(LIST_CONFIG_RESOURCES, 1, {"resource_types": [CLIENT_METRICS]})
        described = client.call(
            DESCRIBE_CONFIGS,
            4,
            {
                "resources": [
                    {
                        "resource_type": CLIENT_METRICS,
                        "resource_name": name,
                        "configuration_keys": None,
                    }
                ],
                "include_synonyms": False,
                "include_documentation": False,
            },
        )
    assert [r.resource_name for r in listed.config_resources] == [name]
    values = {c.name: (c.value, c.config_source) for c in described.results[0].configs}
    assert values == {"interval.ms": ("1500", 7), "metrics": ("*", 7), "match": ("", 5)}
