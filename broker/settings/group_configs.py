"""Group-level configs (GROUP resources of DescribeConfigs / IncrementalAlterConfigs).

A group stores only the configs set on it, in `<data-dir>/group-configs.json`
(written atomically); every other name falls back to the broker's setting. Values
must lie within the broker's bounds, as Kafka checks them (INVALID_CONFIG otherwise).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from odradek.broker.settings.config import BrokerConfig
from odradek.broker.settings.iso_duration import parse_duration_ms
from odradek.broker.settings.named_configs import NamedConfigs
from odradek.broker.settings.setting import streams_list
from odradek.coordinator.group.context import GroupConfig, GroupTimeouts

FILE_NAME = "group-configs.json"
OFFSET_RESET_WORDS = ("earliest", "latest")
ISOLATION_LEVELS = ("read_committed", "read_uncommitted")


class GroupConfigsFileError(RuntimeError):
    """The group configs file exists but cannot be read; the message names it."""


class GroupConfigError(ValueError):
    """A config name or value the group may not have (INVALID_CONFIG)."""


@dataclass(frozen=True)
class GroupConfigDef:
    """One group config as Kafka 4.4's GroupConfig defines it. `broker_name` is its
    broker synonym; an internal config is described only when the group sets it."""

    broker_name: str
    default: Callable[[BrokerConfig], str]
    type_name: str  # int, long, boolean, string, list
    at_least: int | None = None
    check: Callable[[str], str | None] | None = None  # why a string value is refused
    internal: bool = False
    doc: str = field(kw_only=True)  # what it does in Odradek (DescribeConfigs' documentation)


INT_RANGE = (-(2**31), 2**31 - 1)
LONG_RANGE = (-(2**63), 2**63 - 1)
_WHOLE = re.compile(r"[+-]?[0-9]+")


def _offset_reset(value: str) -> str | None:
    if value in OFFSET_RESET_WORDS:
        return None
    if value.startswith("by_duration:"):
        try:
            parse_duration_ms(value.split(":", 1)[1])
        except ValueError as exc:
            return str(exc)
        return None
    return "must be earliest, latest or by_duration:<ISO 8601 duration>"


def _isolation(value: str) -> str | None:
    return None if value in ISOLATION_LEVELS else "must be read_committed or read_uncommitted"


def _int(
    broker_name: str, default: Callable[[BrokerConfig], int], at_least: int, *, doc: str
) -> GroupConfigDef:
    return GroupConfigDef(broker_name, lambda c: str(default(c)), "int", at_least, doc=doc)


def _internal(definition: GroupConfigDef) -> GroupConfigDef:
    return dataclasses.replace(definition, internal=True)


# In Kafka 4.4's order of definition, which is the order values are parsed in.
DEFINITIONS: dict[str, GroupConfigDef] = {
    "consumer.session.timeout.ms": _int(
        "group.consumer.session.timeout.ms",
        lambda c: c.group_consumer_session_timeout_ms,
        1,
        doc=(
            "How long, in milliseconds, a member of this consumer group may go without a "
            "heartbeat before it is removed from the group."
        ),
    ),
    "consumer.heartbeat.interval.ms": _int(
        "group.consumer.heartbeat.interval.ms",
        lambda c: c.group_consumer_heartbeat_interval_ms,
        1,
        doc=(
            "How often, in milliseconds, the members of this consumer group are told to "
            "heartbeat; shorter than the group's session timeout."
        ),
    ),
    "share.session.timeout.ms": _int(
        "group.share.session.timeout.ms",
        lambda c: c.group_share_session_timeout_ms,
        1,
        doc=(
            "How long, in milliseconds, a member of this share group may go without a "
            "heartbeat before it is removed from the group."
        ),
    ),
    "share.heartbeat.interval.ms": _int(
        "group.share.heartbeat.interval.ms",
        lambda c: c.group_share_heartbeat_interval_ms,
        1,
        doc=(
            "How often, in milliseconds, the members of this share group are told to "
            "heartbeat; shorter than the group's session timeout."
        ),
    ),
    "share.record.lock.duration.ms": _int(
        "group.share.record.lock.duration.ms",
        lambda c: c.group_share_record_lock_duration_ms,
        1000,
        doc=(
            "How long, in milliseconds, a consumer of this share group holds the records it "
            "fetched before they go back to be delivered again."
        ),
    ),
    "share.auto.offset.reset": GroupConfigDef(
        "share.auto.offset.reset",
        lambda _c: "latest",
        "string",
        check=_offset_reset,
        doc=(
            "Where this share group starts in a partition it has no state for yet: "
            "earliest, latest, or by_duration:<ISO 8601 duration> back from now."
        ),
    ),
    "share.isolation.level": GroupConfigDef(
        "share.isolation.level",
        lambda _c: "read_uncommitted",
        "string",
        check=_isolation,
        doc=(
            "Which records this share group's consumers get: read_committed leaves out "
            "those of open and aborted transactions, read_uncommitted gives every one."
        ),
    ),
    "streams.session.timeout.ms": _int(
        "group.streams.session.timeout.ms",
        lambda c: c.group_streams_session_timeout_ms,
        1,
        doc=(
            "How long, in milliseconds, a member of this streams group may go without a "
            "heartbeat before it is removed from the group."
        ),
    ),
    "streams.heartbeat.interval.ms": _int(
        "group.streams.heartbeat.interval.ms",
        lambda c: c.group_streams_heartbeat_interval_ms,
        1,
        doc=(
            "How often, in milliseconds, the members of this streams group are told to "
            "heartbeat; shorter than the group's session timeout."
        ),
    ),
    "streams.num.standby.replicas": _int(
        "group.streams.num.standby.replicas",
        lambda c: c.group_streams_num_standby_replicas,
        0,
        doc=(
            "How many standby copies of each stateful task this streams group's assignment places."
        ),
    ),
    "streams.initial.rebalance.delay.ms": _int(
        "group.streams.initial.rebalance.delay.ms",
        lambda c: c.group_streams_initial_rebalance_delay_ms,
        0,
        doc=(
            "How long, in milliseconds, this streams group, once empty, waits for more "
            "members before it computes its first assignment."
        ),
    ),
    "streams.assignment.interval.ms": _int(
        "group.streams.assignment.interval.ms",
        lambda c: c.group_streams_assignment_interval_ms,
        0,
        doc=(
            "How long, in milliseconds, this streams group waits at least between two new "
            "assignments."
        ),
    ),
    "streams.assignor.offload.enable": GroupConfigDef(
        "group.streams.assignor.offload.enable",
        lambda c: str(c.group_streams_assignor_offload_enable).lower(),
        "boolean",
        internal=True,
        doc=(
            "Whether this streams group's assignment may be computed away from the "
            "heartbeats that need it. Odradek accepts and describes it but does not act on "
            "it."
        ),
    ),
    "streams.task.offset.interval.ms": _internal(
        _int(
            "group.streams.task.offset.interval.ms",
            lambda c: c.group_streams_task_offset_interval_ms,
            1,
            doc=(
                "How often, in milliseconds, the members of this streams group are told to "
                "report the offsets of their tasks' changelogs."
            ),
        )
    ),
    "streams.num.warmup.replicas": _internal(
        _int(
            "group.streams.num.warmup.replicas",
            lambda c: c.group_streams_num_warmup_replicas,
            0,
            doc=(
                "How many warm-up copies of a task this streams group may have. Accepted as "
                "Kafka 4.4 accepts it, and as there no warm-up task is handed out."
            ),
        )
    ),
    "streams.rack.aware.assignment.tags": GroupConfigDef(
        "group.streams.rack.aware.assignment.tags",
        lambda c: ",".join(streams_list(c.group_streams_rack_aware_assignment_tags)),
        "list",
        doc=(
            "The client tags every member of this streams group must send; the assignment "
            "does not place standbys by them (as in Kafka 4.4)."
        ),
    ),
    "streams.acceptable.recovery.lag": GroupConfigDef(
        "group.streams.acceptable.recovery.lag",
        lambda c: str(c.group_streams_acceptable_recovery_lag),
        "long",
        0,
        internal=True,
        doc=(
            "How far, in records, a member's copy of a task's state may lag and still count "
            "as caught up; members are told it in their heartbeats."
        ),
    ),
    "streams.assignor.name": GroupConfigDef(
        "group.streams.assignors",
        lambda c: streams_list(c.group_streams_assignors)[0],
        "string",
        doc=(
            "The task assignor this streams group uses, one of the broker's "
            "group.streams.assignors (Odradek has the sticky assignor only)."
        ),
    ),
}


def _parse_reason(definition: GroupConfigDef, value: str) -> str | None:
    """Why ConfigDef would not parse the value (Kafka's words), or None."""
    trimmed = value.strip()
    if definition.type_name in ("int", "long"):
        low, high = INT_RANGE if definition.type_name == "int" else LONG_RANGE
        if not _WHOLE.fullmatch(trimmed) or not low <= int(trimmed) <= high:
            return f"Not a number of type {definition.type_name.upper()}"
        if definition.at_least is not None and int(trimmed) < definition.at_least:
            return f"Value must be at least {definition.at_least}"
    elif definition.type_name == "boolean":
        if trimmed.lower() not in ("true", "false"):
            return "Expected value to be either true or false"
    elif definition.check is not None:
        return definition.check(value)
    return None


Bound = Callable[[str, int, BrokerConfig], str | None]
Limit = Callable[[BrokerConfig], int]


def _in_range(low: Limit, high: Limit) -> Bound:
    def check(name: str, value: int, c: BrokerConfig) -> str | None:
        if low(c) <= value <= high(c):
            return None
        return f"{name} must be in the range {low(c)} to {high(c)} inclusive."

    return check


def _at_most(high: Limit) -> Bound:
    def check(name: str, value: int, c: BrokerConfig) -> str | None:
        return None if value <= high(c) else f"{name} must be less than or equal to {high(c)}"

    return check


def _at_least(low: Limit) -> Bound:
    def check(name: str, value: int, c: BrokerConfig) -> str | None:
        return None if value >= low(c) else f"{name} must be greater than or equal to {low(c)}"

    return check


# The broker's bounds, checked after parsing, in Kafka 4.4's order.
BOUNDS: tuple[tuple[str, Bound], ...] = (
    (
        "consumer.heartbeat.interval.ms",
        _in_range(
            lambda c: c.group_consumer_min_heartbeat_interval_ms,
            lambda c: c.group_consumer_max_heartbeat_interval_ms,
        ),
    ),
    (
        "consumer.session.timeout.ms",
        _in_range(
            lambda c: c.group_consumer_min_session_timeout_ms,
            lambda c: c.group_consumer_max_session_timeout_ms,
        ),
    ),
    (
        "share.heartbeat.interval.ms",
        _in_range(
            lambda c: c.group_share_min_heartbeat_interval_ms,
            lambda c: c.group_share_max_heartbeat_interval_ms,
        ),
    ),
    (
        "share.session.timeout.ms",
        _in_range(
            lambda c: c.group_share_min_session_timeout_ms,
            lambda c: c.group_share_max_session_timeout_ms,
        ),
    ),
    (
        "share.record.lock.duration.ms",
        _in_range(
            lambda c: c.group_share_min_record_lock_duration_ms,
            lambda c: c.group_share_max_record_lock_duration_ms,
        ),
    ),
    (
        "streams.heartbeat.interval.ms",
        _in_range(
            lambda c: c.group_streams_min_heartbeat_interval_ms,
            lambda c: c.group_streams_max_heartbeat_interval_ms,
        ),
    ),
    (
        "streams.session.timeout.ms",
        _in_range(
            lambda c: c.group_streams_min_session_timeout_ms,
            lambda c: c.group_streams_max_session_timeout_ms,
        ),
    ),
    ("streams.num.standby.replicas", _at_most(lambda c: c.group_streams_max_standby_replicas)),
    (
        "streams.assignment.interval.ms",
        _in_range(
            lambda c: c.group_streams_min_assignment_interval_ms,
            lambda c: c.group_streams_max_assignment_interval_ms,
        ),
    ),
    (
        "streams.task.offset.interval.ms",
        _at_least(lambda c: c.group_streams_min_task_offset_interval_ms),
    ),
    ("streams.num.warmup.replicas", _at_most(lambda c: c.group_streams_max_warmup_replicas)),
)

SESSION_AND_HEARTBEAT = tuple(
    (f"{kind}.session.timeout.ms", f"{kind}.heartbeat.interval.ms")
    for kind in ("consumer", "share", "streams")
)


def described_value(name: str, value: str) -> str:
    """A value as DescribeConfigs shows it (a list's items trimmed)."""
    if DEFINITIONS[name].type_name == "list":
        return ",".join(streams_list(value))
    return value


@dataclass(frozen=True, kw_only=True)
class GroupSettings(GroupTimeouts):
    """What one group runs with: its own configs over the broker's. The coordinator
    shards see the membership part (GroupTimeouts); share fetches the rest."""

    share_record_lock_duration_ms: int
    share_auto_offset_reset: str
    share_read_committed: bool


class GroupConfigStore(NamedConfigs):
    def __init__(self, data_dir: Path, broker: BrokerConfig) -> None:
        super().__init__(data_dir / FILE_NAME, "group configs", GroupConfigsFileError)
        self.broker = broker
        self._settings: dict[str, GroupSettings] = {}

    def value(self, group_id: str, name: str) -> str:
        own = self.configs.get(group_id, {}).get(name)
        return own if own is not None else DEFINITIONS[name].default(self.broker)

    def settings(self, group_id: str) -> GroupSettings:
        cached = self._settings.get(group_id)
        if cached is None:
            value = functools.partial(self.value, group_id)
            cached = self._settings[group_id] = GroupSettings(
                consumer_session_timeout_ms=int(value("consumer.session.timeout.ms")),
                consumer_heartbeat_interval_ms=int(value("consumer.heartbeat.interval.ms")),
                share_session_timeout_ms=int(value("share.session.timeout.ms")),
                share_heartbeat_interval_ms=int(value("share.heartbeat.interval.ms")),
                share_record_lock_duration_ms=int(value("share.record.lock.duration.ms")),
                share_auto_offset_reset=value("share.auto.offset.reset"),
                share_read_committed=value("share.isolation.level") == "read_committed",
                streams_session_timeout_ms=int(value("streams.session.timeout.ms")),
                streams_heartbeat_interval_ms=int(value("streams.heartbeat.interval.ms")),
                streams_num_standby_replicas=int(value("streams.num.standby.replicas")),
                streams_initial_rebalance_delay_ms=int(value("streams.initial.rebalance.delay.ms")),
                streams_assignment_interval_ms=int(value("streams.assignment.interval.ms")),
                streams_task_offset_interval_ms=int(value("streams.task.offset.interval.ms")),
                streams_num_warmup_replicas=int(value("streams.num.warmup.replicas")),
                streams_acceptable_recovery_lag=int(value("streams.acceptable.recovery.lag")),
                streams_rack_aware_assignment_tags=tuple(
                    streams_list(value("streams.rack.aware.assignment.tags"))
                ),
                streams_assignor_name=value("streams.assignor.name"),
            )
        return cached

    def validate(self, configs: Mapping[str, str | None]) -> None:
        """A group's whole set of configs, checked in Kafka 4.4's order: names, duplicate
        tags, each value's type and lower bound, the broker's bounds, session against
        heartbeat."""
        for name in configs:
            if name not in DEFINITIONS:
                raise GroupConfigError(f"Unknown group config name: {name}")
        given = {name: value for name, value in configs.items() if value is not None}
        tags = streams_list(given.get("streams.rack.aware.assignment.tags", ""))
        if len(set(tags)) != len(tags):
            raise GroupConfigError(
                "streams.rack.aware.assignment.tags must not contain duplicate tag keys."
            )
        for name, definition in DEFINITIONS.items():
            value = given.get(name)
            reason = None if value is None else _parse_reason(definition, value)
            if reason is not None:
                raise GroupConfigError(f"Invalid value {value} for configuration {name}: {reason}")
        if "" in tags:
            raise GroupConfigError(
                "Configuration 'streams.rack.aware.assignment.tags' values must not be empty."
            )
        for name, bound in BOUNDS:
            if name in given:
                problem = bound(name, int(given[name]), self.broker)
                if problem is not None:
                    raise GroupConfigError(problem)
        assignor = given.get("streams.assignor.name")
        registered = streams_list(self.broker.group_streams_assignors)
        if assignor is not None and assignor not in registered:
            raise GroupConfigError(
                f"streams.assignor.name '{assignor}' is not a registered task assignor. "
                f"Registered assignors are: [{', '.join(registered)}]."
            )
        for session, heartbeat in SESSION_AND_HEARTBEAT:
            if session in given or heartbeat in given:
                defaults = DEFINITIONS[session].default, DEFINITIONS[heartbeat].default
                values = [
                    int(given[n]) if n in given else int(d(self.broker))
                    for n, d in zip((session, heartbeat), defaults, strict=True)
                ]
                if values[0] <= values[1]:
                    raise GroupConfigError(f"{session} must be greater than {heartbeat}")

    def replace(self, group_id: str, configs: Mapping[str, str]) -> None:
        """Set the group's configs to exactly `configs` (validated before). Raises
        OSError (nothing changed) if the file cannot be written."""
        super().replace(group_id, configs)
        self._settings.pop(group_id, None)


def shard_config(
    broker: BrokerConfig, timeouts_of: Callable[[str], GroupTimeouts] | None = None
) -> GroupConfig:
    """The group coordinator shards' settings. Each group's own (timeouts, assignment)
    come from `timeouts_of`, the group configs over the broker's; without it every
    group has the broker's."""
    if timeouts_of is None:
        timeouts_of = GroupConfigStore(broker.data_dir, broker).settings
    return GroupConfig(
        min_session_timeout_ms=broker.group_min_session_timeout_ms,
        max_session_timeout_ms=broker.group_max_session_timeout_ms,
        initial_rebalance_delay_ms=broker.group_initial_rebalance_delay_ms,
        offset_metadata_max_bytes=broker.offset_metadata_max_bytes,
        offsets_retention_ms=broker.offsets_retention_minutes * 60000,
        offsets_retention_check_interval_ms=broker.offsets_retention_check_interval_ms,
        consumer_max_size=broker.group_consumer_max_size,
        consumer_migration_policy=broker.group_consumer_migration_policy,
        share_max_size=broker.group_share_max_size,
        streams_max_size=broker.group_streams_max_size,
        timeouts_of=timeouts_of,
    )
