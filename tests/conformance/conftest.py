"""Prints what ApiVersions showed of the two brokers at the end of the run."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.test_conformance import API_VERSIONS_KEY


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    lines = config.stash.get(API_VERSIONS_KEY, None)
    if lines:
        terminalreporter.write_line("ApiVersions, where Apache Kafka 4.4 and Odradek differ:")
        for line in lines:
            terminalreporter.write_line(line)
