"""Odradek for tests, in this project and in others: a real broker process, or a
cluster of them (odradek.broker.testing). pytest users get fixtures from the plugin:
``odradek_broker``, ``odradek_bootstrap_servers``, ``odradek_broker_factory`` and
``odradek_cluster``."""

from odradek.broker.testing import (
    START_TIMEOUT,
    STOP_TIMEOUT,
    Broker,
    BrokerStartError,
    Cluster,
    free_port,
    normalize_overrides,
    port_accepts,
)

__all__ = [
    "START_TIMEOUT",
    "STOP_TIMEOUT",
    "Broker",
    "BrokerStartError",
    "Cluster",
    "free_port",
    "normalize_overrides",
    "port_accepts",
]
