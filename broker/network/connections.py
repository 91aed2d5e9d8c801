"""The broker's open connections and Kafka's limits on them.

- `max.connections` (the whole broker, or one listener with
  `listener.name.<listener>.max.connections`), `max.connections.per.ip` and
  `max.connections.per.ip.overrides` (`host:count,...`): a connection over a limit
  is closed as soon as it is accepted. Refusals are logged at most once per
  REFUSAL_LOG_INTERVAL_S, with how many there were since the last line.
- `connections.max.idle.ms`: a connection with no bytes in or out for that long is
  closed.
- `sweep`, called about once a second, closes idle connections, shrinks the
  receive buffers of quiet ones, and hands freed memory back to the system after
  connections have closed.
"""

from __future__ import annotations

import gc
import socket
import time
from collections import Counter
from dataclasses import dataclass

import structlog

from odradek.broker.network import memory
from odradek.broker.network.connection import Connection
from odradek.broker.settings.config import BrokerConfig, ConfigError

log = structlog.get_logger("broker")

REFUSAL_LOG_INTERVAL_S = 10.0
COLLECT_AFTER_CLOSES = 100


@dataclass(frozen=True)
class Limits:
    total: int
    per_listener: dict[str, int]
    per_ip: int
    per_ip_overrides: dict[str, int]
    idle_ms: int

    @classmethod
    def from_config(cls, config: BrokerConfig, listener_names: list[str]) -> Limits:
        per_listener = {}
        for name in listener_names:
            own = config.raw.get(f"listener.name.{name.lower()}.max.connections")
            if own is not None:
                per_listener[name] = _whole_number(
                    f"listener.name.{name.lower()}.max.connections", own
                )
        return cls(
            config.max_connections,
            per_listener,
            config.max_connections_per_ip,
            parse_overrides(config.max_connections_per_ip_overrides),
            config.connections_max_idle_ms,
        )


def parse_overrides(text: str) -> dict[str, int]:
    """`host:count,host:count` with host names resolved to addresses."""
    overrides: dict[str, int] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        host, separator, count = item.rpartition(":")
        if not separator or not host:
            raise ConfigError(f"max.connections.per.ip.overrides: {item!r} is not host:count")
        try:
            address = socket.gethostbyname(host.strip("[]"))
        except OSError:
            raise ConfigError(
                f"max.connections.per.ip.overrides: cannot resolve host {host!r}"
            ) from None
        overrides[address] = _whole_number("max.connections.per.ip.overrides", count)
    return overrides


def _whole_number(setting: str, raw: str) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(f"{setting}: {raw!r} is not a whole number") from None
    if value < 0:
        raise ConfigError(f"{setting}: {value} is negative")
    return value


class ConnectionTable:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.open: set[Connection] = set()
        self._per_ip: Counter[str] = Counter()
        self._per_listener: Counter[str] = Counter()
        self._refused_since_log = 0
        self._last_refusal_log = 0.0
        self._closed_since_trim = 0

    def admit(self, connection: Connection, listener: str, ip: str) -> bool:
        """Count the new connection in, or say why it must be closed (False)."""
        reason = self._over_limit(listener, ip)
        if reason is not None:
            self._refused(reason, listener, ip)
            return False
        self.open.add(connection)
        self._per_ip[ip] += 1
        self._per_listener[listener] += 1
        connection.counted_as = (listener, ip)
        return True

    def remove(self, connection: Connection) -> None:
        if connection not in self.open:
            return
        self.open.discard(connection)
        listener, ip = connection.counted_as
        for counts, key in ((self._per_ip, ip), (self._per_listener, listener)):
            counts[key] -= 1
            if counts[key] <= 0:
                del counts[key]
        self._closed_since_trim += 1

    def _over_limit(self, listener: str, ip: str) -> str | None:
        limits = self.limits
        if len(self.open) >= limits.total:
            return f"max.connections={limits.total} reached"
        listener_limit = limits.per_listener.get(listener)
        if listener_limit is not None and self._per_listener[listener] >= listener_limit:
            return f"max.connections={listener_limit} of listener {listener} reached"
        ip_limit = limits.per_ip_overrides.get(ip, limits.per_ip)
        if self._per_ip[ip] >= ip_limit:
            return f"max.connections.per.ip={ip_limit} reached for {ip}"
        return None

    def _refused(self, reason: str, listener: str, ip: str) -> None:
        self._refused_since_log += 1
        now = time.monotonic()
        if now - self._last_refusal_log < REFUSAL_LOG_INTERVAL_S:
            return
        log.warning(
            "connection refused",
            reason=reason,
            listener=listener,
            client=ip,
            refused_since_last_report=self._refused_since_log,
        )
        self._refused_since_log = 0
        self._last_refusal_log = now

    def sweep(self) -> int:
        """Close idle connections, shrink quiet buffers, trim the heap after closes.
        Returns how many connections it closed."""
        now = time.monotonic()
        idle_s = self.limits.idle_ms / 1000
        closed = 0
        for connection in list(self.open):
            if now - connection.last_active >= idle_s:
                connection.log.info("closing idle connection", idle_ms=self.limits.idle_ms)
                connection.close()
                closed += 1
            else:
                connection.shrink_if_idle(now)
        if self._closed_since_trim:
            if self._closed_since_trim >= COLLECT_AFTER_CLOSES:
                # a set keeps the table of its largest size: 10,000 connections leave
                # half a megabyte behind unless it is made anew
                self.open = set(self.open)
                gc.collect()  # what reference cycles of closed connections still hold
            self._closed_since_trim = 0
            memory.release_free_memory()
        return closed
