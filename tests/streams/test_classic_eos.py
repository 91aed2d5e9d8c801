"""The orders application (Kafka Streams 4.4, exactly_once_v2, the classic group
protocol) against Odradek and against Apache Kafka 4.4: each scenario runs on both
(`either_broker`), and the committed output must be exactly what the input makes: no
update lost, none applied twice."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import streams_app
from helpers.names import unique_name
from helpers.streams_app import Orders, StreamsInstance

from streams.scenarios import check, kill_one_of_two

pytestmark = pytest.mark.timeout(600)


def setup(bootstrap: str, tmp_path: Path, count: int) -> tuple[str, Orders]:
    prefix = unique_name("orders")
    streams_app.create_topics(bootstrap, prefix)
    return prefix, Orders(count)


def instance(
    bootstrap: str, prefix: str, tmp_path: Path, name: str, threads: int = 1, standbys: int = 0
) -> StreamsInstance:
    return StreamsInstance(
        bootstrap, f"{prefix}-app", prefix, tmp_path / name, threads=threads, standbys=standbys
    )


def test_one_instance(either_broker: str, tmp_path: Path) -> None:
    prefix, orders = setup(either_broker, tmp_path, 3000)
    streams_app.produce(either_broker, prefix, orders, 0, 1500)
    app = instance(either_broker, prefix, tmp_path, "a", threads=2).start()
    try:
        app.wait_state("RUNNING")
        streams_app.produce(either_broker, prefix, orders, 1500, 3000)
        check(streams_app.read_output(either_broker, prefix, orders.expected()), orders)
        assert app.errors() == []
    finally:
        app.stop()


def test_three_instances_started_one_after_another(either_broker: str, tmp_path: Path) -> None:
    """Rebalances move tasks to each new instance; one standby replica each."""
    prefix, orders = setup(either_broker, tmp_path, 3000)
    apps = []
    try:
        for n, name in enumerate("abc"):
            app = instance(either_broker, prefix, tmp_path, name, standbys=1).start()
            apps.append(app)
            streams_app.produce(either_broker, prefix, orders, n * 1000, (n + 1) * 1000)
            app.wait_state("RUNNING")
        check(streams_app.read_output(either_broker, prefix, orders.expected()), orders)
        assert all(app.alive() for app in apps)
        assert [app.errors() for app in apps] == [[], [], []]
    finally:
        for app in apps:
            app.stop()


def test_an_instance_killed_and_started_again(either_broker: str, tmp_path: Path) -> None:
    """kill -9 of one of two instances while input arrives: its tasks move, its open
    transaction is fenced and aborted, its stores come back from their changelogs."""
    prefix, _ = setup(either_broker, tmp_path, 0)
    # the rebalance waits for the dead member until its session ends: 10 s, not 45
    short_session = {"session.timeout.ms": "10000"}

    def make(name: str) -> StreamsInstance:
        return StreamsInstance(
            either_broker, f"{prefix}-app", prefix, tmp_path / name, configs=short_session
        )

    kill_one_of_two(either_broker, prefix, make)
