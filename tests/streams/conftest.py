"""A broker of a test's own that the test may kill: Odradek, then Apache Kafka 4.4."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from helpers import reference_kafka
from helpers.broker import Broker, BrokerFactory
from helpers.reference_kafka import ReferenceKafka


@dataclass
class KillableBroker:
    name: str
    broker: Broker | ReferenceKafka

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap

    def crash_and_restart(self) -> None:
        """kill -9, then a start on the same data and port."""
        self.broker.kill()
        self.broker.start()


@pytest.fixture(params=["odradek", "kafka44"])
def killable_broker(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KillableBroker]:
    if request.param == "odradek":
        factory: BrokerFactory = request.getfixturevalue("broker_factory")
        yield KillableBroker("odradek", factory())
        return
    reference_kafka.require()
    kafka = ReferenceKafka(tmp_path_factory.mktemp("kafka-killed")).start()
    try:
        yield KillableBroker("kafka44", kafka)
    finally:
        kafka.stop()
