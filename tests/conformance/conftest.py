"""Prints what ApiVersions showed of the two brokers at the end of the run; the pair of
brokers with an authorizer and a SASL listener (secure_pair.py), for the scenarios
that ask for it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from helpers import reference_kafka

from conformance.secure_pair import SecureBroker, start_kafka, start_odradek
from conformance.test_conformance import API_VERSIONS_KEY


@pytest.fixture(scope="session")
def secure_pair(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[SecureBroker, SecureBroker]]:
    """(Kafka 4.4, Odradek), each with the ACL authorizer and a SASL_PLAINTEXT listener."""
    reference_kafka.require()
    kafka, kafka_listeners = start_kafka(tmp_path_factory.mktemp("kafka44-secure"))
    try:
        odradek, odradek_listeners = start_odradek(tmp_path_factory.mktemp("odradek-secure"))
        try:
            yield kafka_listeners, odradek_listeners
        finally:
            odradek.kill()
    finally:
        kafka.stop()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    lines = config.stash.get(API_VERSIONS_KEY, None)
    if lines:
        terminalreporter.write_line("ApiVersions, where Apache Kafka 4.4 and Odradek differ:")
        for line in lines:
            terminalreporter.write_line(line)
