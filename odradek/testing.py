"""Odradek for tests, in this project and in others: a real broker process, or a
cluster of them (their code is in broker/testing/). pytest users get fixtures from the
plugin: ``odradek_broker``, ``odradek_bootstrap_servers``, ``odradek_broker_factory``,
``odradek_faults`` and ``odradek_cluster``. Faults: ``Broker(faults=True).faults``."""

from odradek.broker.testing import *  # noqa: F403 - this module is that package's face
from odradek.broker.testing import __all__ as __all__
