"""Scenarios of client-metrics subscriptions (KIP-714's CLIENT_METRICS config resources)
set with IncrementalAlterConfigs and AlterConfigs and read with DescribeConfigs, and of
ListConfigResources (74) v0 and v1."""

from __future__ import annotations

from typing import Any

from conformance.harness import Run, scenario
from conformance.scenarios_configs import alter, by_name, describe, incremental
from conformance.scenarios_topics import DESCRIBE_CONFIGS, quietly_create

LIST_CONFIG_RESOURCES = 74
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def settled(run: Run, name: str, key: str, value: str | None) -> None:
    """Wait until the broker describes the subscription's `key` as `value` (None: the
    default): Kafka's broker learns of the change from its controller a moment after."""

    def ask() -> Any:
        body = {
            "resources": [
                {
                    "resource_type": CLIENT_METRICS,
                    "resource_name": name,
                    "configuration_keys": [key],
                }
            ],
            "include_synonyms": False,
            "include_documentation": False,
        }
        return run.quiet(DESCRIBE_CONFIGS, 4, body)

    def done(answer: Any) -> bool:
        configs = answer.results[0].configs
        if value is None:
            return bool(configs) and configs[0].config_source == 5
        return bool(configs) and configs[0].value == value

    run.until(ask, done)


def show(run: Run, name: str) -> None:
    describe(run, CLIENT_METRICS, name, None, synonyms=True, view=by_name)


@scenario("client-metrics.configs", "a subscription set, changed, replaced and removed")
def _configs(run: Run) -> None:
    name = run.name("sub")
    show(run, name)  # none yet: the defaults
    changes = [
        ("metrics", SET, "org.apache.kafka.producer., org.apache.kafka.consumer."),
        ("interval.ms", SET, "1000"),
        ("match", SET, "client_id=app-.*,client_software_name=apache-kafka-java"),
    ]
    incremental(run, [(CLIENT_METRICS, name, changes)])
    settled(run, name, "interval.ms", "1000")
    show(run, name)
    incremental(run, [(CLIENT_METRICS, name, [("metrics", APPEND, "org.apache.kafka.x")])])
    incremental(
        run, [(CLIENT_METRICS, name, [("metrics", SUBTRACT, "org.apache.kafka.producer.")])]
    )
    incremental(run, [(CLIENT_METRICS, name, [("interval.ms", DELETE, None)])])
    settled(run, name, "interval.ms", None)
    show(run, name)
    alter(run, [(CLIENT_METRICS, name, {"metrics": "*", "interval.ms": "200"})])
    settled(run, name, "interval.ms", "200")
    show(run, name)
    incremental(
        run, [(CLIENT_METRICS, name, [("metrics", DELETE, None), ("interval.ms", DELETE, None)])]
    )
    settled(run, name, "interval.ms", None)
    show(run, name)


@scenario("client-metrics.invalid", "subscriptions Kafka refuses: names, values, operations")
def _invalid(run: Run) -> None:
    name = run.name("bad")
    for configs in (
        [("interval.ms", SET, "50")],
        [("interval.ms", SET, "3600001")],
        [("interval.ms", SET, "soon")],
        [("match", SET, "client_id")],
        [("match", SET, "owner=me")],
        [("match", SET, "client_id=[")],
        [("metrics", SET, "a, a")],
        [("no.such.config", SET, "1")],
        [("interval.ms", APPEND, "5")],
    ):
        incremental(run, [(CLIENT_METRICS, name, configs)])
    incremental(run, [(CLIENT_METRICS, "", [("interval.ms", SET, "1000")])])
    alter(run, [(CLIENT_METRICS, name, {"interval.ms": "10"})])
    incremental(run, [(CLIENT_METRICS, name, [("interval.ms", SET, "1000")])], validate_only=True)
    describe(run, CLIENT_METRICS, "", None)
    settled(run, name, "metrics", "a")
    show(run, name)  # (Kafka keeps a list's items once)
    # gone again: it would match every client of the telemetry scenarios
    incremental(run, [(CLIENT_METRICS, name, [("metrics", DELETE, None)])])


def listed(run: Run, version: int, types: list[int]) -> None:
    """This run's resources among those listed, in name order (Kafka lists them in the
    order of Java hash sets), and how many brokers there are."""
    body = {"resource_types": types} if version else {}
    answer = run.quiet(LIST_CONFIG_RESOURCES, version, body)
    mine = sorted(
        (r.resource_name.replace(run.prefix, "<run>"), getattr(r, "resource_type", None))
        for r in answer.config_resources
        if r.resource_name.startswith(run.prefix)
    )
    nodes = sorted(
        getattr(r, "resource_type", None)
        for r in answer.config_resources
        if r.resource_name.isdigit()
    )
    run.answered(
        LIST_CONFIG_RESOURCES,
        version,
        {"error_code": answer.error_code, "mine": mine, "nodes": nodes},
    )


@scenario("list-config-resources.valid", "subscriptions, groups, brokers and topics listed")
def _list_valid(run: Run) -> None:
    sub, group, topic = run.name("sub"), run.name("group"), run.name("topic")
    quietly_create(run, topic)
    incremental(run, [(CLIENT_METRICS, sub, [("interval.ms", SET, "1000")])])
    incremental(run, [(GROUP, group, [("consumer.session.timeout.ms", SET, "50000")])])
    settled(run, sub, "interval.ms", "1000")
    run.until(
        lambda: run.quiet(LIST_CONFIG_RESOURCES, 1, {"resource_types": [GROUP]}),
        lambda answer: any(r.resource_name == group for r in answer.config_resources),
    )
    listed(run, 0, [])
    for types in ([], [CLIENT_METRICS], [GROUP], [BROKER, BROKER_LOGGER], [TOPIC]):
        listed(run, 1, types)
    # gone again: it would match every client of the telemetry scenarios
    run.quiet(
        44,
        1,
        {
            "resources": [
                {
                    "resource_type": CLIENT_METRICS,
                    "resource_name": sub,
                    "configs": [{"name": "interval.ms", "config_operation": DELETE, "value": None}],
                }
            ],
            "validate_only": False,
        },
    )


@scenario("list-config-resources.invalid", "resource types Kafka does not list")
def _list_invalid(run: Run) -> None:
    run.call(LIST_CONFIG_RESOURCES, 1, {"resource_types": [1]})
    run.call(LIST_CONFIG_RESOURCES, 1, {"resource_types": [TOPIC, 64]})
