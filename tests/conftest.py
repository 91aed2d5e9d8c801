"""Fixtures that run the real Odradek broker as a subprocess.

- ``broker``: a fresh broker (own data dir, own port) for one test.
- ``shared_broker``: one broker for the whole session, for tests whose state does not
  matter (they must use unique topic / group names: ``unique_topic``, ``unique_group``).
- ``broker_factory(overrides=None, **kw)``: start more brokers, with Kafka config
  overrides (``num_partitions=3`` or ``{"num.partitions": "3"}``).
- ``kafka44``: Apache Kafka 4.4 (the reference broker), one for the session;
  ``either_broker``: the bootstrap of the shared Odradek, then of Kafka 4.4, so that a
  test runs against both.

Every broker started here is killed at teardown; a broker that died by itself during a
test turns the test into an error, and the broker log is attached to failing tests.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from helpers import reference_kafka
from helpers.broker import Broker, BrokerFactory, free_port, normalize_overrides
from helpers.names import unique_name
from helpers.reference_kafka import ReferenceKafka

_BROKERS_KEY = pytest.StashKey[list[Broker]]()


def pytest_configure(config: pytest.Config) -> None:
    # kafka-python 3.0 loads its schemas with deprecated importlib.resources calls.
    config.addinivalue_line(
        "filterwarnings", "ignore::DeprecationWarning:kafka.protocol.schemas.load_json"
    )
    config.addinivalue_line(
        "filterwarnings", "ignore:.*is deprecated. Use files:DeprecationWarning"
    )


def _remember(request: pytest.FixtureRequest, broker: Broker) -> None:
    node = request.node
    node.stash.setdefault(_BROKERS_KEY, []).append(broker)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        for broker in item.stash.get(_BROKERS_KEY, []):
            report.sections.append((f"broker log {broker.bootstrap}", broker.log_tail(20000)))
    return report


@pytest.fixture
def broker_factory(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BrokerFactory]:
    started: list[Broker] = []

    def make(
        overrides: Mapping[str, object] | None = None, /, *, start: bool = True, **kw: object
    ) -> Broker:
        merged = normalize_overrides(overrides, **kw)
        base = tmp_path_factory.mktemp("broker")
        broker = Broker(base / "data", overrides=merged, log_dir=base)
        started.append(broker)
        _remember(request, broker)
        if start:
            broker.start()
        return broker

    yield make

    died = [b for b in started if b.died_unexpectedly()]
    for broker in started:
        broker.kill()
    if died:
        details = "\n".join(
            f"broker {b.bootstrap} exited with status {b.proc and b.proc.returncode}:\n"
            f"{b.log_tail()}"
            for b in died
        )
        pytest.fail(f"broker process died during the test\n{details}", pytrace=False)


@pytest.fixture
def broker(broker_factory: BrokerFactory) -> Broker:
    """A fresh broker with its own empty data directory."""
    return broker_factory()


@pytest.fixture(scope="session")
def _session_broker(odradek_broker: Broker) -> Broker:
    """The pytest plugin's session broker (ODRADEK_BOOTSTRAP_SERVERS=host:port runs the
    tests against another Kafka instead, a real one say)."""
    return odradek_broker


@pytest.fixture
def shared_broker(request: pytest.FixtureRequest, _session_broker: Broker) -> Iterator[Broker]:
    """The session-wide broker. Tests must not stop it; use unique topic/group names."""
    broker = _session_broker
    if not broker.is_running():
        code = broker.proc.returncode if broker.proc is not None else None
        log = broker.log_tail()
        broker.start()  # so later tests get a broker again
        pytest.fail(
            f"shared broker had died (status {code}) during an earlier test; restarted it.\n{log}",
            pytrace=False,
        )
    _remember(request, broker)
    yield broker
    if not broker.is_running():
        code = broker.proc.returncode if broker.proc is not None else None
        pytest.fail(
            f"shared broker died during this test (status {code})\n{broker.log_tail()}",
            pytrace=False,
        )


@pytest.fixture
def unique_topic(request: pytest.FixtureRequest) -> str:
    return unique_name(f"t-{request.node.name}")


@pytest.fixture
def unique_group(request: pytest.FixtureRequest) -> str:
    return unique_name(f"g-{request.node.name}")


@pytest.fixture
def name_factory(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """Factory for more names in one test: ``name_factory("orders")``."""
    return lambda prefix: unique_name(f"{prefix}-{request.node.name}")


@pytest.fixture
def tmp_data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


_REFERENCE_KEY = pytest.StashKey[ReferenceKafka]()


@pytest.fixture(scope="session")
def kafka44(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ReferenceKafka]:
    """Apache Kafka 4.4, one combined KRaft node shared by the whole session."""
    reference_kafka.require()
    controller = free_port()
    # with a receiver of client telemetry, as Odradek always has one
    plugin, plugin_settings = reference_kafka.telemetry_plugin()
    kafka = ReferenceKafka(
        tmp_path_factory.mktemp("kafka44"),
        controller_port=controller,
        # node 0, as Odradek's own: a broker's config resource is named by its id
        extra={
            "node.id": "0",
            "controller.quorum.voters": f"0@127.0.0.1:{controller}",
            **plugin_settings,
        },
        classpath=[plugin],
    ).start()
    request.config.stash[_REFERENCE_KEY] = kafka
    yield kafka
    kafka.last_rss_kib = kafka.rss_kib()
    kafka.stop()


@pytest.fixture(params=["odradek", "kafka44"])
def either_broker(request: pytest.FixtureRequest) -> str:
    """The bootstrap address of Odradek's shared broker, then of Apache Kafka 4.4: a
    test asking for it runs against both, so that what it asserts holds on Kafka too."""
    if request.param == "kafka44":
        kafka: ReferenceKafka = request.getfixturevalue("kafka44")
        return kafka.bootstrap
    shared: Broker = request.getfixturevalue("shared_broker")
    return shared.bootstrap


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    kafka = config.stash.get(_REFERENCE_KEY, None)
    if kafka is not None and kafka.figures is not None:
        terminalreporter.write_line(
            f"Apache Kafka {reference_kafka.VERSION}: started in {kafka.figures.seconds:.1f} s, "
            f"{kafka.figures.rss_kib // 1024} MiB resident then, "
            f"{kafka.last_rss_kib // 1024} MiB at the end"
        )
