"""Group configs and client-metrics subscriptions are the cluster's: set through one
broker, every broker describes them (and a group's coordinator, wherever it is, runs on
them)."""

from __future__ import annotations

import time

from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from helpers import kafka_tools

from odradek.testing import Cluster

GROUP = ConfigResource.Type.GROUP


def describe(broker_bootstrap: str, kind: ConfigResource.Type, name: str) -> dict[str, str]:
    admin = AdminClient({"bootstrap.servers": broker_bootstrap})
    resource = ConfigResource(kind, name)
    found = admin.describe_configs([resource])[resource].result(15)
    return {key: entry.value for key, entry in found.items()}


def alter(broker_bootstrap: str, kind: ConfigResource.Type, name: str, **values: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker_bootstrap})
    entries = [
        ConfigEntry(key.replace("_", "."), value, incremental_operation=AlterConfigOpType.SET)
        for key, value in values.items()
    ]
    resource = ConfigResource(kind, name, incremental_configs=entries)
    admin.incremental_alter_configs([resource])[resource].result(15)


def wait_for(check: object, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_a_group_config_set_through_one_broker_is_every_brokers(cluster: Cluster) -> None:
    first, *others = [broker.bootstrap for broker in cluster.nodes.values()]
    assert describe(others[0], GROUP, "gx")["consumer.session.timeout.ms"] == "45000"
    alter(first, GROUP, "gx", consumer_session_timeout_ms="50000")
    for bootstrap in [first, *others]:
        wait_for(
            lambda b=bootstrap: describe(b, GROUP, "gx")["consumer.session.timeout.ms"] == "50000"
        )
    # a restarted broker reads it from the cluster's metadata again
    cluster.restart(3)
    assert (
        describe(cluster.nodes[3].bootstrap, GROUP, "gx")["consumer.session.timeout.ms"] == "50000"
    )


def test_a_client_metrics_subscription_set_through_one_broker_is_every_brokers(
    cluster: Cluster,
) -> None:
    first, *others = [broker.bootstrap for broker in cluster.nodes.values()]
    made = kafka_tools.run(
        "kafka-client-metrics",
        first,
        [
            "--alter",
            "--name",
            "cpu",
            "--metrics",
            "org.apache.kafka.producer.",
            "--interval",
            "5000",
        ],
    )
    assert made.returncode == 0, made.stderr
    for bootstrap in others:
        shown = kafka_tools.run("kafka-client-metrics", bootstrap, ["--describe", "--name", "cpu"])
        assert shown.returncode == 0, shown.stderr
        assert "interval.ms=5000" in shown.stdout.replace(" ", "") or "5000" in shown.stdout, (
            shown.stdout
        )
        assert "org.apache.kafka.producer." in shown.stdout, shown.stdout
