"""The real Odradek broker process for Odradek's own tests: the shipped
``odradek.testing.Broker`` plus what only this suite needs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from odradek.testing import (
    START_TIMEOUT,
    STOP_TIMEOUT,
    Broker,
    BrokerStartError,
    free_port,
    normalize_overrides,
    port_accepts,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


class BrokerFactory(Protocol):
    """Type of the ``broker_factory`` fixture."""

    def __call__(
        self, overrides: Mapping[str, object] | None = None, /, *, start: bool = True, **kw: object
    ) -> Broker: ...


def rss_kb(pid: int) -> int:
    """Resident memory of a process, in KiB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


__all__ = [
    "REPO_ROOT",
    "START_TIMEOUT",
    "STOP_TIMEOUT",
    "Broker",
    "BrokerFactory",
    "BrokerStartError",
    "free_port",
    "normalize_overrides",
    "port_accepts",
    "rss_kb",
]
