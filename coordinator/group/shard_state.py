"""What a group coordinator shard holds, and the helpers both group protocols use."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from odradek.coordinator.group import consumer_records as cr
from odradek.coordinator.group import records as rec
from odradek.coordinator.group.classic import ClassicGroup
from odradek.coordinator.group.consumer import ConsumerGroup
from odradek.coordinator.group.share import ShareGroup
from odradek.coordinator.group.streams import StreamsGroup
from odradek.coordinator.group.streams_configs import MemberTaskOffsets
from odradek.coordinator.group.streams_topics import ConfiguredTopology
from odradek.coordinator.runtime import Record, ShardRuntime

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


@dataclass(slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1
    record_offset: int = -1  # where it sits in the partition log


def now_ms() -> int:
    return int(time.time() * 1000)


def no_topics() -> dict[str, tuple[uuid.UUID, int]]:
    return {}


class ShardState:
    def __init__(
        self,
        runtime: ShardRuntime | None,
        config: GroupConfig,
        topics_view: Callable[[], Mapping[str, tuple[uuid.UUID, int]]] = no_topics,
    ) -> None:
        self.runtime = runtime
        self.config = config
        # topic name -> (id, partition count) of the topics that exist now
        self.topics_view = topics_view
        self.groups: dict[str, ClassicGroup] = {}
        self.consumer_groups: dict[str, ConsumerGroup] = {}
        self.share_groups: dict[str, ShareGroup] = {}
        self.streams_groups: dict[str, StreamsGroup] = {}
        # streams group -> its topology set against the topics (kept in memory)
        self.streams_configured: dict[str, ConfiguredTopology] = {}
        # streams group -> member -> the changelog offsets it reported (kept in memory)
        self.streams_task_offsets: dict[str, dict[str, MemberTaskOffsets]] = {}
        self.offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        # transactional offsets waiting for their marker: producer id -> group -> offsets
        self.pending_txn_offsets: dict[int, dict[str, dict[tuple[str, int], CommittedOffset]]] = {}
        # revocation timer key -> the member epoch whose revocation it times
        self.revocations_armed: dict[str, int] = {}
        # consumer group -> ((group epoch, member count), the topic names its members
        # subscribe to by name), so a heartbeat that changes no subscription does not
        # walk every member
        self.subscribed_names: dict[str, tuple[tuple[int, int], frozenset[str]]] = {}

    # -- helpers -----------------------------------------------------------------

    def _group_record(self, group: ClassicGroup) -> Record:
        value = rec.GroupValue(
            protocol_type=group.protocol_type or "",
            generation=group.generation,
            protocol=group.protocol,
            leader=group.leader,
            state_timestamp=now_ms(),
            members=[
                rec.MemberValue(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout_ms,
                    m.session_timeout_ms,
                    m.metadata_for(group.protocol),
                    m.assignment,
                )
                for m in group.members.values()
            ],
        )
        return rec.encode_key(rec.GroupKey(group.group_id)), rec.encode_group(value)

    def _schedule(self, key: str, delay_ms: float, operation: Any) -> None:
        if self.runtime is not None:
            self.runtime.schedule(key, delay_ms, operation)

    def _has_timer(self, key: str) -> bool:
        return self.runtime is not None and self.runtime.has_timer(key)

    def _cancel(self, key: str) -> None:
        if self.runtime is not None:
            self.runtime.cancel(key)

    def consumer_group_tombstones(self, group: ConsumerGroup) -> list[Record]:
        """Records that delete a group (the epoch last: replay drops the group)."""
        keys = [
            cr.ConsumerKey(kind, group.group_id, m)
            for m in group.members
            for kind in (cr.CURRENT_ASSIGNMENT, cr.MEMBER_METADATA)
        ]
        keys += [cr.ConsumerKey(cr.TARGET_MEMBER, group.group_id, m) for m in group.target]
        keys += [
            cr.ConsumerKey(cr.TARGET_EPOCH, group.group_id),
            cr.ConsumerKey(cr.PARTITION_METADATA, group.group_id),
            cr.ConsumerKey(cr.GROUP_EPOCH, group.group_id),
        ]
        return [(cr.encode_key(key), None) for key in keys]
