"""pytest fixtures for projects that test against Odradek (registered as the ``odradek``
pytest plugin when the package is installed):

    def test_round_trip(odradek_bootstrap_servers):
        producer = Producer({"bootstrap.servers": odradek_bootstrap_servers})

    def test_with_settings(odradek_broker_factory):
        broker = odradek_broker_factory({"auto.create.topics.enable": False})
        broker.kill()      # SIGKILL, as a crash
        broker.restart()   # same data, same port

- ``odradek_broker``: one broker for the whole session, on a temporary data directory;
- ``odradek_bootstrap_servers``: its address, ``host:port``;
- ``odradek_broker_factory``: more brokers with their own settings, killed and their
  data removed when the test ends;
- ``odradek_faults``: the session broker's fault injection (``odradek.testing.FaultControl``),
  every fault ended when the test ends: ``odradek_faults.error("Produce",
  "NOT_LEADER_OR_FOLLOWER", count=3)``;
- ``odradek_cluster``: three brokers and a controller (``odradek.testing.Cluster``),
  to kill a partition's leader: ``odradek_cluster.kill(odradek_cluster.leader_of(t, 0))``.

Set ODRADEK_BOOTSTRAP_SERVERS to run the same tests against a broker started elsewhere
(a container, say): the session fixtures then use it and start nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping

import pytest

from odradek.broker.testing.broker import Broker
from odradek.broker.testing.cluster import Cluster
from odradek.broker.testing.faults import FaultControl

BrokerMaker = Callable[..., Broker]


@pytest.fixture(scope="session")
def odradek_broker() -> Iterator[Broker]:
    """One broker for the session (or the one ODRADEK_BOOTSTRAP_SERVERS names)."""
    elsewhere = os.environ.get("ODRADEK_BOOTSTRAP_SERVERS")
    if elsewhere:
        host, _, port = elsewhere.split(",")[0].rpartition(":")
        broker = Broker(host=host, port=int(port), external=True)
    else:
        broker = Broker(faults=True).start()  # a test broker: odradek_faults may use it
    try:
        yield broker
    finally:
        broker.close()


@pytest.fixture(scope="session")
def odradek_bootstrap_servers(odradek_broker: Broker) -> str:
    """The session broker's ``host:port``, for a client's bootstrap.servers."""
    return odradek_broker.bootstrap_servers


@pytest.fixture
def odradek_faults(odradek_broker: Broker) -> Iterator[FaultControl]:
    """Faults on the session broker, all ended when the test ends."""
    control = odradek_broker.faults
    yield control
    control.clear()


@pytest.fixture
def odradek_broker_factory() -> Iterator[BrokerMaker]:
    """``make(settings=None, *, start=True, **settings)``: a broker of the test's own."""
    made: list[Broker] = []

    def make(
        overrides: Mapping[str, object] | None = None, /, *, start: bool = True, **kw: object
    ) -> Broker:
        """A broker with Kafka settings (``{"num.partitions": 3}`` or ``num_partitions=3``)."""
        settings = dict(overrides or {})
        settings.update({key.replace("_", "."): value for key, value in kw.items()})
        broker = Broker(overrides=settings, faults=True)
        made.append(broker)
        return broker.start() if start else broker

    yield make
    for broker in made:
        broker.close()


@pytest.fixture
def odradek_cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """Three brokers and a controller of their own (``odradek.testing.Cluster``), started;
    ``@pytest.mark.odradek_cluster(brokers=5, overrides={...})`` changes them."""
    marker = request.node.get_closest_marker("odradek_cluster")
    options = dict(marker.kwargs) if marker is not None else {}
    cluster = Cluster(**options)
    try:
        yield cluster.start()
    finally:
        cluster.close()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "odradek_cluster(brokers=3, controllers=1, proxied=False, overrides=None): the "
        "odradek_cluster fixture's nodes",
    )
