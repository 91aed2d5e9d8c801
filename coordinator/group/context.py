"""What every part of a group coordinator shard uses: the settings (the broker's and
each group's own), the runtime's timers, the topics that exist, and which part holds
a group id."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from odradek.coordinator.runtime import Record, Result, ShardRuntime

MAX_GROUP_SIZE = 10000


@dataclass(frozen=True)
class GroupTimeouts:
    """The settings one group's membership runs with (its group configs over the
    broker's)."""

    consumer_session_timeout_ms: int
    consumer_heartbeat_interval_ms: int
    share_session_timeout_ms: int
    share_heartbeat_interval_ms: int
    streams_session_timeout_ms: int
    streams_heartbeat_interval_ms: int
    streams_num_standby_replicas: int
    streams_initial_rebalance_delay_ms: int
    streams_assignment_interval_ms: int
    streams_task_offset_interval_ms: int
    streams_num_warmup_replicas: int
    streams_acceptable_recovery_lag: int
    streams_rack_aware_assignment_tags: tuple[str, ...]
    streams_assignor_name: str


@dataclass
class GroupConfig:
    """The shards' settings, built from the broker's (shard_config in
    broker/settings/group_configs.py)."""

    min_session_timeout_ms: int
    max_session_timeout_ms: int
    initial_rebalance_delay_ms: int
    offset_metadata_max_bytes: int
    offsets_retention_ms: int
    offsets_retention_check_interval_ms: int
    # the consumer protocol (KIP-848): group.consumer.*
    consumer_max_size: int
    consumer_migration_policy: str
    # share groups (KIP-932): group.share.*
    share_max_size: int
    # streams groups (KIP-1071): group.streams.*
    streams_max_size: int
    # a group's own settings: its group configs over the broker's
    timeouts_of: Callable[[str], GroupTimeouts]

    def timeouts(self, group_id: str) -> GroupTimeouts:
        return self.timeouts_of(group_id)


def now_ms() -> int:
    return int(time.time() * 1000)


def no_topics() -> dict[str, tuple[uuid.UUID, int]]:
    return {}


class GroupKind(Protocol):
    """A part of the shard that holds the groups of one type."""

    kind: str

    @property
    def groups(self) -> Mapping[str, Any]: ...

    def tombstones(self, group: Any) -> list[Record]:
        """The records that delete the group (the last one drops it on replay)."""
        ...

    def described(self, group: Any) -> dict[str, Any]:
        """The group as its type's describe request gives it."""
        ...


@dataclass
class ShardContext:
    """What every part of a group shard uses: its runtime's timers, the settings, the
    topics that exist, and the parts that hold each type of group."""

    runtime: ShardRuntime | None
    config: GroupConfig
    # topic name -> (id, partition count) of the topics that exist now
    topics_view: Callable[[], Mapping[str, tuple[uuid.UUID, int]]] = no_topics
    kinds: dict[str, GroupKind] = field(default_factory=dict)  # "classic", "consumer", ...

    @property
    def loading(self) -> bool:
        """Is the shard replaying its log (records are then the whole truth)?"""
        return self.runtime is None or not self.runtime.loaded

    def holds(self, group_id: str, *kinds: str) -> bool:
        """Does a group of one of these types have this id?"""
        return any(group_id in self.kinds[kind].groups for kind in kinds)

    def held_elsewhere(self, group_id: str, kind: str) -> bool:
        """Does a group of another type than `kind` have this id?"""
        return any(group_id in part.groups for name, part in self.kinds.items() if name != kind)

    def find(self, group_id: str, kind: str) -> Any:
        return self.kinds[kind].groups.get(group_id)

    def tombstones(self, group_id: str, kind: str) -> list[Record]:
        """The records that delete the group of type `kind` with this id, if there is one."""
        part = self.kinds[kind]
        group = part.groups.get(group_id)
        return part.tombstones(group) if group is not None else []

    # A timer fires as an operation of the shard: `fire` makes its result.
    def schedule(self, key: str, delay_ms: float, fire: Callable[[], Result[Any]]) -> None:
        if self.runtime is not None:
            self.runtime.schedule(key, delay_ms, lambda _shard: fire())

    def has_timer(self, key: str) -> bool:
        return self.runtime is not None and self.runtime.has_timer(key)

    def cancel(self, key: str) -> None:
        if self.runtime is not None:
            self.runtime.cancel(key)
