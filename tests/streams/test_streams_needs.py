"""What a Kafka Streams application asks of a broker beyond its records: the broker
killed under a running application, internal topics and their configs, repartition
records purged with DeleteRecords, and the reset of an application through the Admin
client. Run against Odradek and, where the scenario does not kill the broker, Apache
Kafka 4.4 (`either_broker`)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType
from helpers import streams_app
from helpers.names import unique_name
from helpers.streams_app import Orders, StreamsInstance

from streams.conftest import KillableBroker
from streams.scenarios import check

pytestmark = pytest.mark.timeout(600)


def internal_topics(admin: AdminClient, application_id: str) -> list[str]:
    return sorted(t for t in admin.list_topics(timeout=15).topics if t.startswith(application_id))


def test_the_broker_killed_under_a_running_application(
    killable_broker: KillableBroker, tmp_path: Path
) -> None:
    """kill -9 of the broker while the application runs, then a start on the same data:
    the application carries on, and its output is still exactly once."""
    bootstrap = killable_broker.bootstrap
    prefix, orders = unique_name("orders"), Orders(3000)
    streams_app.create_topics(bootstrap, prefix)
    streams_app.produce(bootstrap, prefix, orders, 0, 1500)
    app = StreamsInstance(bootstrap, f"{prefix}-app", prefix, tmp_path / "a").start()
    try:
        app.wait_state("RUNNING")
        time.sleep(2)  # part of the input processed, a transaction likely open
        killable_broker.crash_and_restart()
        streams_app.produce(bootstrap, prefix, orders, 1500, 3000)
        check(streams_app.read_output(bootstrap, prefix, orders.expected()), orders)
        assert app.alive(), app.log_tail()
    finally:
        app.stop()


def test_internal_topics_and_purged_repartition_records(either_broker: str, tmp_path: Path) -> None:
    prefix, orders = unique_name("orders"), Orders(2000)
    application_id = f"{prefix}-app"
    streams_app.create_topics(either_broker, prefix)
    streams_app.produce(either_broker, prefix, orders, 0, 2000)
    app = StreamsInstance(
        either_broker,
        application_id,
        prefix,
        tmp_path / "a",
        configs={"repartition.purge.interval.ms": "200", "commit.interval.ms": "200"},
    ).start()
    admin = AdminClient({"bootstrap.servers": either_broker})
    try:
        app.wait_state("RUNNING")
        check(streams_app.read_output(either_broker, prefix, orders.expected()), orders)
        topics = internal_topics(admin, application_id)
        assert topics == [
            f"{application_id}-by-customer-repartition",
            f"{application_id}-regions-changelog",
            f"{application_id}-totals-changelog",
            f"{application_id}-window-counts-changelog",
        ]
        resources = [ConfigResource(ResourceType.TOPIC, name) for name in topics]
        configs = {
            resource.name: future.result(15)
            for resource, future in admin.describe_configs(resources).items()
        }
        policy = {name: found["cleanup.policy"].value for name, found in configs.items()}
        assert policy == {
            topics[0]: "delete",
            topics[1]: "compact",
            topics[2]: "compact",
            topics[3]: "compact,delete",
        }
        assert configs[topics[0]]["retention.ms"].value == "-1"
        assert configs[topics[3]]["retention.ms"].value == str(86_400_000 + 10_000 + 86_400_000)
        repartition = topics[0]
        partitions = len(admin.list_topics(repartition, timeout=15).topics[repartition].partitions)
        assert partitions == streams_app.PARTITIONS

        # Streams deletes what its commits have made needless from the repartition topic
        reader = Consumer({"bootstrap.servers": either_broker, "group.id": f"{prefix}-look"})
        try:
            deadline = time.monotonic() + 60
            while True:
                starts = [
                    reader.get_watermark_offsets(TopicPartition(repartition, p), timeout=10)[0]
                    for p in range(partitions)
                ]
                if sum(starts) > 0 or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
        finally:
            reader.close()
        assert sum(starts) > 0, f"no repartition record deleted: log starts {starts}"
    finally:
        app.stop()


def test_reset_through_the_admin_client(either_broker: str, tmp_path: Path) -> None:
    """As the reset tool does: the group and the internal topics deleted, the local state
    wiped; the application then starts from the beginning of its input again."""
    prefix, orders = unique_name("orders"), Orders(1500)
    application_id = f"{prefix}-app"
    streams_app.create_topics(either_broker, prefix)
    streams_app.produce(either_broker, prefix, orders, 0, 1500)
    app = StreamsInstance(either_broker, application_id, prefix, tmp_path / "a", leave=True)
    app.start()
    admin = AdminClient({"bootstrap.servers": either_broker})
    app.wait_state("RUNNING")
    check(streams_app.read_output(either_broker, prefix, orders.expected()), orders)
    app.stop()

    admin.delete_consumer_groups([application_id], request_timeout=15)[application_id].result(15)
    for future in admin.delete_topics(internal_topics(admin, application_id)).values():
        future.result(15)
    deadline = time.monotonic() + 30
    while internal_topics(admin, application_id) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert internal_topics(admin, application_id) == []
    app.wipe_state()

    again = StreamsInstance(either_broker, application_id, prefix, tmp_path / "a").start()
    try:
        again.wait_state("RUNNING")
        output = streams_app.read_output(either_broker, prefix, orders.expected())
        deadline = time.monotonic() + 120
        while len(output.records["enriched"]) < 2 * orders.count and time.monotonic() < deadline:
            output = streams_app.read_output(either_broker, prefix, orders.expected(), timeout=5)
        check(output, orders, copies=2)
    finally:
        again.stop()
