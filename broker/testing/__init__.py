"""Test support other projects import (as odradek.testing, and through the pytest
plugin): the real broker as a subprocess (broker.py), a cluster of them (cluster.py),
fault injection from a test (faults.py), proxies to cut the network between nodes
(netsplit.py) and the fixtures (pytest_plugin.py). It
starts `python -m odradek` and talks to it over the network; of the broker's insides
it uses only the inter-broker client. May use: cluster/ (its node client)."""

from odradek.broker.testing.broker import (
    START_TIMEOUT,
    STOP_TIMEOUT,
    Broker,
    BrokerStartError,
    free_port,
    normalize_overrides,
    port_accepts,
)
from odradek.broker.testing.cluster import Cluster
from odradek.broker.testing.faults import Fault, FaultControl, FaultRefused
from odradek.broker.testing.netsplit import Link, Netsplit

__all__ = [
    "START_TIMEOUT",
    "STOP_TIMEOUT",
    "Broker",
    "BrokerStartError",
    "Cluster",
    "Fault",
    "FaultControl",
    "FaultRefused",
    "Link",
    "Netsplit",
    "free_port",
    "normalize_overrides",
    "port_accepts",
]
