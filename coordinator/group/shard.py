"""The group coordinator shard for one `__consumer_offsets` partition: the parts that
hold its state, each the only one to change it, and the operations the broker runs on
the shard, each sent to the part it is about.

    committed        CommittedOffsets  committed offsets, and transactional ones
                                       waiting for their marker (offsets.py)
    classic          ClassicGroups     classic groups and their protocol
                                       (classic_groups.py)
    consumer         ConsumerGroups    consumer groups, KIP-848 (consumer_groups.py)
    classic_members  ClassicMembers    classic members of consumer groups
                                       (classic_members.py)
    share            ShareGroups       share groups, KIP-932 (share_groups.py)
    streams          StreamsGroups     streams groups, KIP-1071 (streams_groups.py)

The consumer, share and streams parts are ModernGroups (modern_groups.py) of groups
with one base, ModernGroup (modern.py). What outlives a restart is records: operations
return them and `replay` applies them through the record registry (record_types.py),
whose record types find their part, both live and when loading. The moment-to-moment
state of a rebalance (who has rejoined, the parked JoinGroup and SyncGroup answers,
session timers) lives only in memory, as in Kafka: after a restart a group comes back
with its members and assignment, and its members either heartbeat on or time out.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from odradek.coordinator.group.classic import DEAD, EMPTY, ClassicGroup, group_record, tombstone
from odradek.coordinator.group.classic_groups import ClassicGroups
from odradek.coordinator.group.classic_members import ClassicMembers
from odradek.coordinator.group.consumer import ConsumerGroup
from odradek.coordinator.group.consumer_groups import ConsumerGroups
from odradek.coordinator.group.context import (
    GroupConfig,
    GroupKind,
    ShardContext,
    no_topics,
    now_ms,
)
from odradek.coordinator.group.heartbeat_errors import not_found, not_of_kind
from odradek.coordinator.group.modern_groups import ModernGroups
from odradek.coordinator.group.offsets import CommittedOffset, CommittedOffsets, Offsets
from odradek.coordinator.group.record_types import REGISTRY
from odradek.coordinator.group.share import ShareGroup
from odradek.coordinator.group.share_groups import ShareGroups
from odradek.coordinator.group.streams import StreamsGroup
from odradek.coordinator.group.streams_groups import StreamsGroups
from odradek.coordinator.runtime import Record, Result, ShardRuntime
from odradek.protocol.errors import ErrorCode

__all__ = ["CommittedOffset", "GroupConfig", "GroupShard"]

TopicPartition = tuple[str, int]
OFFSET_COMMIT_TYPE = b"\x00\x01"  # the key's record type id of an OffsetCommit


class GroupShard:
    def __init__(
        self,
        runtime: ShardRuntime | None,
        config: GroupConfig,
        topics_view: Callable[[], Mapping[str, tuple[uuid.UUID, int]]] = no_topics,
    ) -> None:
        self.context = ShardContext(runtime, config, topics_view)
        self.committed = CommittedOffsets(self.context)
        self.classic = ClassicGroups(self.context)
        self.consumer = ConsumerGroups(self.context, self.classic)
        self.classic_members = ClassicMembers(self.consumer)
        self.share = ShareGroups(self.context)
        self.streams = StreamsGroups(self.context)
        # the order in which a group id is looked up among the modern types
        self.modern: tuple[ModernGroups[Any], ...] = (self.share, self.streams, self.consumer)
        kinds: tuple[GroupKind, ...] = (self.classic, self.consumer, self.share, self.streams)
        self.context.kinds.update((part.kind, part) for part in kinds)
        # the parts' maps, by the names tests read them by (no part replaces its own)
        self.offsets: dict[str, Offsets] = self.committed.offsets
        self.groups: dict[str, ClassicGroup] = self.classic.groups
        self.consumer_groups: dict[str, ConsumerGroup] = self.consumer.groups
        self.share_groups: dict[str, ShareGroup] = self.share.groups
        self.streams_groups: dict[str, StreamsGroup] = self.streams.groups
        # while loading: the last value of each plain offset commit's key read since the
        # last record of another kind, and the groups any of them gave a value
        self._loading = False
        self._unread: dict[bytes, bytes | None] = {}
        self._unread_groups: set[bytes] = set()

    # -- replay ------------------------------------------------------------------

    def begin_load(self) -> None:
        self._loading = True

    def replay(self, offset: int, key: bytes | None, value: bytes | None, producer_id: int) -> None:
        if key is None:
            return  # every record here has a key
        if self._loading and producer_id < 0 and key[:2] == OFFSET_COMMIT_TYPE:
            # most of a large log is offset commits, each replacing the one before of its
            # key: while loading, only the last of a run of them is decoded and applied
            self._unread[key] = value
            if value is not None and len(key) >= 4:
                self._unread_groups.add(key[4 : 4 + int.from_bytes(key[2:4], "big")])
            return
        if self._unread:
            self._read_unread()
        REGISTRY.replay(self, offset, key, value, producer_id)

    def _read_unread(self) -> None:
        """The run of plain offset commits held back: as if each had been replayed, since
        nothing else came between them (a commit with a value makes its group known
        even if a later one of its key removed it)."""
        unread, groups = self._unread, self._unread_groups
        self._unread, self._unread_groups = {}, set()
        for raw_group in groups:
            group_id = raw_group.decode()
            if group_id not in self.classic.groups and not self.context.holds(
                group_id, "consumer", "streams"
            ):
                self.classic.groups[group_id] = ClassicGroup(group_id)
        for key, value in unread.items():
            REGISTRY.replay(self, -1, key, value, -1)

    def replay_control(self, producer_id: int, commit: bool) -> None:
        if self._unread:
            self._read_unread()
        for group_id in self.committed.replay_control(producer_id, commit):
            if not self.context.holds(group_id, "classic", "streams"):
                self.classic.groups[group_id] = ClassicGroup(group_id)

    def on_loaded(self) -> None:
        if self._unread:
            self._read_unread()
        self._loading = False
        self.classic.on_loaded()
        for part in (self.consumer, self.share, self.streams):
            part.on_loaded()
        self._schedule_offset_expiry()

    # -- the classic protocol: to the consumer group if one with members has the id --

    def _with_members(self, group_id: str) -> ConsumerGroup | None:
        group = self.consumer.groups.get(group_id)
        return group if group is not None and group.members else None

    def join_group(self, request: dict[str, Any]) -> Result[Any]:
        """Returns a future: the answer comes when the join phase completes."""
        group = self._with_members(request["group_id"])
        if group is not None:
            return self.classic_members.join_group(group, request)
        return self.classic.join_group(request)

    def sync_group(self, request: dict[str, Any]) -> Result[Any]:
        group = self._with_members(request["group_id"])
        if group is not None:
            return self.classic_members.sync_group(group, request)
        return self.classic.sync_group(request)

    def heartbeat(
        self, group_id: str, member_id: str, instance_id: str | None, generation: int
    ) -> Result[int]:
        group = self._with_members(group_id)
        if group is not None:
            return self.classic_members.heartbeat(group, member_id, instance_id, generation)
        return self.classic.heartbeat(group_id, member_id, instance_id, generation)

    def leave_group(
        self, group_id: str, leaving: list[tuple[str, str | None]]
    ) -> Result[tuple[int, list[dict[str, Any]]]]:
        group = self._with_members(group_id)
        if group is not None:
            return self.classic_members.leave_group(group, leaving)
        return self.classic.leave_group(group_id, leaving)

    # -- the modern protocols ----------------------------------------------------

    def consumer_group_heartbeat(self, request: dict[str, Any]) -> Result[dict[str, Any]]:
        return self.consumer.heartbeat(request)

    def share_group_heartbeat(self, request: dict[str, Any]) -> Result[dict[str, Any]]:
        return self.share.heartbeat(request)

    def streams_group_heartbeat(self, request: dict[str, Any]) -> Result[dict[str, Any]]:
        return self.streams.heartbeat(request)

    def prepare_share_offsets_alter(
        self, group_id: str, topics: dict[uuid.UUID, tuple[str, frozenset[int]]]
    ) -> Result[tuple[int, str | None]]:
        return self.share.prepare_share_offsets_alter(group_id, topics)

    def share_offsets_problem(
        self, group_id: str, may_be_missing: bool = False
    ) -> Result[tuple[int, str | None] | None]:
        return self.share.share_offsets_problem(group_id, may_be_missing)

    # -- offsets: the group's part says who may, the offsets' part does it -----------

    def _modern_group(self, group_id: str) -> tuple[ModernGroups[Any], Any] | None:
        for part in self.modern:
            group = part.groups.get(group_id)
            if group is not None:
                return part, group
        return None

    def commit_offsets(self, request: dict[str, Any]) -> Result[dict[TopicPartition, ErrorCode]]:
        """request: group_id, generation, member_id, group_instance_id, offsets
        {(t,p): (o, epoch, md)}, and for TxnOffsetCommit producer (id, epoch)."""
        group_id = request["group_id"]
        found = self._modern_group(group_id)
        if found is None:
            code = self.classic.commit_error(request)
        elif not found[0].has_offsets:
            code = ErrorCode.group_id_not_found
        else:
            code = found[0].commit_error(found[1], request)
        if code != ErrorCode.none:
            return Result([], {tp: code for tp in request["offsets"]})
        if found is None and group_id not in self.classic.groups:
            self.classic.groups[group_id] = ClassicGroup(group_id)
        return self.committed.commit(group_id, request)

    def fetch_offsets(
        self,
        group_id: str,
        topics: list[tuple[str, list[int]]] | None,
        require_stable: bool,
        member: tuple[str | None, int] = (None, -1),
    ) -> Result[dict[str, Any]]:
        """member: (member id, member epoch) as OffsetFetch v9+ sends them."""
        found = self._modern_group(group_id)
        if found is not None and found[0].has_offsets:
            code = found[0].fetch_error(found[1], *member)
            if code != ErrorCode.none:
                return Result([], {"error_code": code, "offsets": []})
        return Result([], self.committed.fetch(group_id, topics, require_stable))

    def delete_offsets(
        self, group_id: str, partitions: list[TopicPartition]
    ) -> Result[tuple[int, dict[TopicPartition, ErrorCode]]]:
        found = self._modern_group(group_id)
        classic = self.classic.groups.get(group_id)
        if (found is None and classic is None and group_id not in self.committed.offsets) or (
            found is not None and not found[0].has_offsets
        ):
            return Result([], (ErrorCode.group_id_not_found, {}))
        subscribed: set[str] = set()
        if found is not None:
            subscribed = found[0].subscribed_topics(found[1])
        elif classic is not None and classic.members:
            if classic.protocol_type != "consumer":
                return Result([], (ErrorCode.non_empty_group, {}))
            topics = classic.subscribed_topics()
            subscribed = topics if topics is not None else {t for t, _ in partitions}
        answers = {}
        deletable = []
        for tp in partitions:
            if tp[0] in subscribed:
                answers[tp] = ErrorCode.group_subscribed_to_topic
            else:
                answers[tp] = ErrorCode.none
                if tp in self.committed.offsets.get(group_id, {}):
                    deletable.append(tp)
        return Result(self.committed.tombstones(group_id, deletable), (ErrorCode.none, answers))

    def delete_topic_offsets(self, topics: set[str]) -> Result[None]:
        return Result(self.committed.of_topics(topics))

    def _schedule_offset_expiry(self) -> None:
        def expire() -> Result[None]:
            self._schedule_offset_expiry()
            return Result(self.expired_offset_records(now_ms()))

        interval = self.context.config.offsets_retention_check_interval_ms
        self.context.schedule("offset-expiry", interval, expire)

    def expired_offset_records(self, now: int) -> list[Record]:
        """Offsets of groups without members expire retention after their commit; a
        classic group goes with the last of them."""
        records: list[Record] = []
        for group_id, expired, all_of_them in self.committed.expired(now, self._kept_topics):
            records += expired
            classic = self.classic.groups.get(group_id)
            if all_of_them and classic is not None and not classic.members:
                records += self.classic.tombstones(classic)
        return records

    def _kept_topics(self, group_id: str) -> set[str] | None:
        """The topics whose offsets the group's members keep from expiring: all of them
        (None) for a classic group with members; for a consumer or streams group, the
        topics its members read, as Kafka (the others' offsets expire)."""
        classic = self.classic.groups.get(group_id)
        if classic is not None and classic.members:
            return None
        found = self._modern_group(group_id)
        if found is not None and found[0].has_offsets:
            return found[0].subscribed_topics(found[1])
        return set()

    # -- whole groups ------------------------------------------------------------------

    def delete_groups(self, group_ids: list[str]) -> Result[dict[str, ErrorCode]]:
        records: list[Record] = []
        answers = {}
        for group_id in group_ids:
            found = self._modern_group(group_id)
            if found is not None:
                part, group = found
                if group.members:
                    answers[group_id] = ErrorCode.non_empty_group
                    continue
                records += self.committed.tombstones(group_id)
                records += part.tombstones(group)
                answers[group_id] = ErrorCode.none
                continue
            classic = self.classic.groups.get(group_id)
            if classic is None and group_id not in self.committed.offsets:
                answers[group_id] = ErrorCode.group_id_not_found
                continue
            if classic is not None and (classic.members or classic.state == DEAD):
                answers[group_id] = (
                    ErrorCode.non_empty_group if classic.members else ErrorCode.group_id_not_found
                )
                continue
            records += self.committed.tombstones(group_id)
            records.append(tombstone(group_id))
            answers[group_id] = ErrorCode.none
        return Result(records, answers)

    def describe(self, group_id: str) -> Result[dict[str, Any] | str]:
        """The classic group, or why there is none (Kafka's words)."""
        return self._describe(self.classic, group_id)

    def describe_consumer_group(self, group_id: str) -> Result[dict[str, Any] | str]:
        return self._describe(self.consumer, group_id, group_id in self.committed.offsets)

    def describe_share_group(self, group_id: str) -> Result[dict[str, Any] | str]:
        return self._describe(self.share, group_id)

    def describe_streams_group(self, group_id: str) -> Result[dict[str, Any] | str]:
        return self._describe(self.streams, group_id)

    def _describe(
        self, part: GroupKind, group_id: str, known: bool = False
    ) -> Result[dict[str, Any] | str]:
        """The group as its part describes it, or (no group of that type has the id)
        the reason GROUP_ID_NOT_FOUND gives; `known`: the id is known otherwise."""
        group = part.groups.get(group_id)
        if group is not None:
            return Result([], part.described(group))
        other = known or self.context.held_elsewhere(group_id, part.kind)
        return Result([], not_of_kind(group_id, part.kind) if other else not_found(group_id))

    def list_groups(self) -> Result[list[tuple[str, str, str, str]]]:
        """(group id, protocol type, state, group type) of every live group."""
        listed = [
            (g.group_id, g.protocol_type or "", g.state, "classic")
            for g in self.classic.groups.values()
            if g.state != DEAD
        ]
        for part in (self.consumer, self.share, self.streams):
            listed += [(g.group_id, part.kind, g.state, part.kind) for g in part.groups.values()]
        known = {listed_group[0] for listed_group in listed}
        listed += [(g, "", EMPTY, "classic") for g in self.committed.offsets if g not in known]
        return Result([], listed)

    # -- the topics the parts see (tests change them), and what tests call directly -----

    @property
    def topics_view(self) -> Callable[[], Mapping[str, tuple[uuid.UUID, int]]]:
        return self.context.topics_view

    @topics_view.setter
    def topics_view(self, view: Callable[[], Mapping[str, tuple[uuid.UUID, int]]]) -> None:
        self.context.topics_view = view

    def _group_record(self, group: ClassicGroup) -> Record:
        return group_record(group)

    def _fence(self, group_id: str, member_id: str, epoch: int | None, reason: str) -> Result[None]:
        return self.consumer.fence(group_id, member_id, epoch, reason)
