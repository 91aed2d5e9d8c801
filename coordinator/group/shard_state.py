"""What a group coordinator shard holds, and the helpers both group protocols use."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from odradek.coordinator.group import consumer
from odradek.coordinator.group import records as rec
from odradek.coordinator.group.classic import GROUP_METADATA, ClassicGroup
from odradek.coordinator.group.consumer import ConsumerGroup
from odradek.coordinator.group.offsets import CommittedOffset
from odradek.coordinator.group.record_codecs import GroupKey, MemberKey
from odradek.coordinator.group.share import ShareGroup
from odradek.coordinator.group.streams import StreamsGroup
from odradek.coordinator.group.streams_configs import MemberTaskOffsets
from odradek.coordinator.group.streams_topics import ConfiguredTopology
from odradek.coordinator.runtime import Record, ShardRuntime

MAX_GROUP_SIZE = 10000


@dataclass(frozen=True)
class GroupTimeouts:
    """The settings one group's membership runs with (its group configs over the
    broker's); the defaults are Kafka's."""

    consumer_session_timeout_ms: int = 45000
    consumer_heartbeat_interval_ms: int = 5000
    share_session_timeout_ms: int = 45000
    share_heartbeat_interval_ms: int = 5000
    streams_session_timeout_ms: int = 45000
    streams_heartbeat_interval_ms: int = 5000
    streams_num_standby_replicas: int = 0
    streams_initial_rebalance_delay_ms: int = 3000
    streams_assignment_interval_ms: int = 1000
    streams_task_offset_interval_ms: int = 60000
    streams_num_warmup_replicas: int = 2
    streams_acceptable_recovery_lag: int = 10000
    streams_rack_aware_assignment_tags: tuple[str, ...] = ()
    streams_assignor_name: str = "sticky"


DEFAULT_TIMEOUTS = GroupTimeouts()


@dataclass
class GroupConfig:
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    initial_rebalance_delay_ms: int = 3000
    offset_metadata_max_bytes: int = 4096
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offsets_retention_check_interval_ms: int = 600000
    # the consumer protocol (KIP-848): group.consumer.*
    consumer_max_size: int = 2147483647
    consumer_migration_policy: str = "bidirectional"
    # share groups (KIP-932): group.share.*
    share_max_size: int = 200
    # streams groups (KIP-1071): group.streams.*
    streams_max_size: int = 2147483647
    # a group's own settings (its group configs over the broker's); None: every group
    # has Kafka's defaults
    timeouts_of: Callable[[str], GroupTimeouts] | None = None

    def timeouts(self, group_id: str) -> GroupTimeouts:
        if self.timeouts_of is not None:
            return self.timeouts_of(group_id)
        return DEFAULT_TIMEOUTS


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
        return GROUP_METADATA.record(GroupKey(group.group_id), value)

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
        gid = group.group_id
        records = [
            record_type.tombstone(MemberKey(gid, m))
            for m in group.members
            for record_type in (consumer.CURRENT_ASSIGNMENT, consumer.MEMBER_METADATA)
        ]
        records += [consumer.TARGET_MEMBER.tombstone(MemberKey(gid, m)) for m in group.target]
        records += [
            record_type.tombstone(GroupKey(gid))
            for record_type in (
                consumer.TARGET_EPOCH,
                consumer.PARTITION_METADATA,
                consumer.GROUP_EPOCH,
            )
        ]
        return records
