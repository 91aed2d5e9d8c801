"""Group-level configs (GROUP resources of DescribeConfigs / IncrementalAlterConfigs).

A group stores only the configs set on it, in `<data-dir>/group-configs.json`
(written atomically); every other name falls back to the broker's setting. Values
must lie within the broker's bounds, as Kafka checks them (INVALID_CONFIG otherwise).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from odradek.broker.settings.config import BrokerConfig
from odradek.broker.settings.iso_duration import parse_duration_ms
from odradek.coordinator.group.shard_state import GroupTimeouts
from odradek.storage.checkpoint import write_atomic

FILE_NAME = "group-configs.json"
OFFSET_RESET_WORDS = ("earliest", "latest")
ISOLATION_LEVELS = ("read_committed", "read_uncommitted")


class GroupConfigError(ValueError):
    """A config name or value the group may not have (INVALID_CONFIG)."""


@dataclass(frozen=True)
class GroupConfigDef:
    broker_name: str
    default: Callable[[BrokerConfig], str]
    type_name: str  # int, string
    check: Callable[[str, BrokerConfig], str | None]  # the reason a value is refused


def _int_between(low: Callable[[BrokerConfig], int], high: Callable[[BrokerConfig], int]):
    def check(value: str, config: BrokerConfig) -> str | None:
        try:
            number = int(value)
        except ValueError:
            return "not an integer"
        if not low(config) <= number <= high(config):
            return f"must be between {low(config)} and {high(config)}"
        return None

    return check


def _offset_reset(value: str, _config: BrokerConfig) -> str | None:
    if value in OFFSET_RESET_WORDS:
        return None
    if value.startswith("by_duration:"):
        try:
            parse_duration_ms(value.split(":", 1)[1])
        except ValueError as exc:
            return str(exc)
        return None
    return "must be earliest, latest or by_duration:<ISO 8601 duration>"


def _isolation(value: str, _config: BrokerConfig) -> str | None:
    return None if value in ISOLATION_LEVELS else "must be read_committed or read_uncommitted"


DEFINITIONS: dict[str, GroupConfigDef] = {
    "consumer.session.timeout.ms": GroupConfigDef(
        "group.consumer.session.timeout.ms",
        lambda c: str(c.group_consumer_session_timeout_ms),
        "int",
        _int_between(
            lambda c: c.group_consumer_min_session_timeout_ms,
            lambda c: c.group_consumer_max_session_timeout_ms,
        ),
    ),
    "consumer.heartbeat.interval.ms": GroupConfigDef(
        "group.consumer.heartbeat.interval.ms",
        lambda c: str(c.group_consumer_heartbeat_interval_ms),
        "int",
        _int_between(
            lambda c: c.group_consumer_min_heartbeat_interval_ms,
            lambda c: c.group_consumer_max_heartbeat_interval_ms,
        ),
    ),
    "share.session.timeout.ms": GroupConfigDef(
        "group.share.session.timeout.ms",
        lambda c: str(c.group_share_session_timeout_ms),
        "int",
        _int_between(
            lambda c: c.group_share_min_session_timeout_ms,
            lambda c: c.group_share_max_session_timeout_ms,
        ),
    ),
    "share.heartbeat.interval.ms": GroupConfigDef(
        "group.share.heartbeat.interval.ms",
        lambda c: str(c.group_share_heartbeat_interval_ms),
        "int",
        _int_between(
            lambda c: c.group_share_min_heartbeat_interval_ms,
            lambda c: c.group_share_max_heartbeat_interval_ms,
        ),
    ),
    "share.record.lock.duration.ms": GroupConfigDef(
        "group.share.record.lock.duration.ms",
        lambda c: str(c.group_share_record_lock_duration_ms),
        "int",
        _int_between(
            lambda c: c.group_share_min_record_lock_duration_ms,
            lambda c: c.group_share_max_record_lock_duration_ms,
        ),
    ),
    "streams.session.timeout.ms": GroupConfigDef(
        "group.streams.session.timeout.ms",
        lambda c: str(c.group_streams_session_timeout_ms),
        "int",
        _int_between(
            lambda c: c.group_streams_min_session_timeout_ms,
            lambda c: c.group_streams_max_session_timeout_ms,
        ),
    ),
    "streams.heartbeat.interval.ms": GroupConfigDef(
        "group.streams.heartbeat.interval.ms",
        lambda c: str(c.group_streams_heartbeat_interval_ms),
        "int",
        _int_between(
            lambda c: c.group_streams_min_heartbeat_interval_ms,
            lambda c: c.group_streams_max_heartbeat_interval_ms,
        ),
    ),
    "streams.num.standby.replicas": GroupConfigDef(
        "group.streams.num.standby.replicas",
        lambda c: str(c.group_streams_num_standby_replicas),
        "int",
        _int_between(lambda _c: 0, lambda c: c.group_streams_max_standby_replicas),
    ),
    "streams.initial.rebalance.delay.ms": GroupConfigDef(
        "group.streams.initial.rebalance.delay.ms",
        lambda c: str(c.group_streams_initial_rebalance_delay_ms),
        "int",
        _int_between(lambda _c: 0, lambda _c: 2147483647),
    ),
    "streams.assignment.interval.ms": GroupConfigDef(
        "group.streams.assignment.interval.ms",
        lambda c: str(c.group_streams_assignment_interval_ms),
        "int",
        _int_between(lambda _c: 0, lambda _c: 15000),
    ),
    "share.auto.offset.reset": GroupConfigDef(
        "share.auto.offset.reset", lambda _c: "latest", "string", _offset_reset
    ),
    "share.isolation.level": GroupConfigDef(
        "share.isolation.level", lambda _c: "read_uncommitted", "string", _isolation
    ),
}


@dataclass(frozen=True)
class GroupSettings:
    """What one group runs with: its own configs over the broker's."""

    consumer_session_timeout_ms: int
    consumer_heartbeat_interval_ms: int
    share_session_timeout_ms: int
    share_heartbeat_interval_ms: int
    share_record_lock_duration_ms: int
    share_auto_offset_reset: str
    share_read_committed: bool
    streams_session_timeout_ms: int
    streams_heartbeat_interval_ms: int
    streams_num_standby_replicas: int
    streams_initial_rebalance_delay_ms: int
    streams_assignment_interval_ms: int


class GroupConfigStore:
    def __init__(self, data_dir: Path, broker: BrokerConfig) -> None:
        self.path = data_dir / FILE_NAME
        self.broker = broker
        self.configs: dict[str, dict[str, str]] = {}
        self._settings: dict[str, GroupSettings] = {}

    def load(self) -> None:
        if self.path.exists():
            self.configs = json.loads(self.path.read_text())

    def of(self, group_id: str) -> dict[str, str]:
        return dict(self.configs.get(group_id, {}))

    def value(self, group_id: str, name: str) -> str:
        own = self.configs.get(group_id, {}).get(name)
        return own if own is not None else DEFINITIONS[name].default(self.broker)

    def settings(self, group_id: str) -> GroupSettings:
        cached = self._settings.get(group_id)
        if cached is None:
            cached = self._settings[group_id] = GroupSettings(
                int(self.value(group_id, "consumer.session.timeout.ms")),
                int(self.value(group_id, "consumer.heartbeat.interval.ms")),
                int(self.value(group_id, "share.session.timeout.ms")),
                int(self.value(group_id, "share.heartbeat.interval.ms")),
                int(self.value(group_id, "share.record.lock.duration.ms")),
                self.value(group_id, "share.auto.offset.reset"),
                self.value(group_id, "share.isolation.level") == "read_committed",
                int(self.value(group_id, "streams.session.timeout.ms")),
                int(self.value(group_id, "streams.heartbeat.interval.ms")),
                int(self.value(group_id, "streams.num.standby.replicas")),
                int(self.value(group_id, "streams.initial.rebalance.delay.ms")),
                int(self.value(group_id, "streams.assignment.interval.ms")),
            )
        return cached

    def timeouts(self, group_id: str) -> GroupTimeouts:
        settings = self.settings(group_id)
        return GroupTimeouts(
            settings.consumer_session_timeout_ms,
            settings.consumer_heartbeat_interval_ms,
            settings.share_session_timeout_ms,
            settings.share_heartbeat_interval_ms,
            settings.streams_session_timeout_ms,
            settings.streams_heartbeat_interval_ms,
            settings.streams_num_standby_replicas,
            settings.streams_initial_rebalance_delay_ms,
            settings.streams_assignment_interval_ms,
        )

    def validate(self, changes: Mapping[str, str | None]) -> None:
        for name, value in changes.items():
            definition = DEFINITIONS.get(name)
            if definition is None:
                raise GroupConfigError(f"Unknown group config name: {name}")
            if value is None:
                continue
            reason = definition.check(value, self.broker)
            if reason is not None:
                raise GroupConfigError(f"Invalid value {value} for configuration {name}: {reason}")

    def replace(self, group_id: str, configs: Mapping[str, str]) -> None:
        """Set the group's configs to exactly `configs` (validated before)."""
        if configs:
            self.configs[group_id] = dict(configs)
        else:
            self.configs.pop(group_id, None)
        self._settings.pop(group_id, None)
        write_atomic(self.path, json.dumps(self.configs, indent=1, sort_keys=True))
