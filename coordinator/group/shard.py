"""The group coordinator shard for one `__consumer_offsets` partition.

Committed offsets and each group's metadata (generation, protocol, leader,
members and their assignments) are persistent: operations return them as
records and `replay` applies them through the record registry (record_types.py),
both live and when loading. The moment-to-
moment state of a rebalance (who has rejoined, the parked JoinGroup and
SyncGroup answers, session timers) lives only in memory, as in Kafka: after a
restart a group comes back with its members and assignment, and its members
either heartbeat on or time out.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from odradek.coordinator.group import records as rec
from odradek.coordinator.group.classic import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    GROUP_METADATA,
    STABLE,
    ClassicGroup,
)
from odradek.coordinator.group.classic_members import ClassicMembers
from odradek.coordinator.group.consumer import ConsumerGroup
from odradek.coordinator.group.offsets import OFFSET_COMMIT, CommittedOffset
from odradek.coordinator.group.record_codecs import GroupKey, OffsetKey
from odradek.coordinator.group.record_types import REGISTRY
from odradek.coordinator.group.shard_state import GroupConfig, now_ms
from odradek.coordinator.group.share_protocol import ShareProtocol
from odradek.coordinator.group.streams import group_tombstones
from odradek.coordinator.group.streams_admin import StreamsGroups
from odradek.coordinator.runtime import Record, Result
from odradek.protocol.errors import ErrorCode

__all__ = ["CommittedOffset", "GroupConfig", "GroupShard"]


class GroupShard(ClassicMembers, ShareProtocol, StreamsGroups):
    """Replay of the shard's records, offsets, and the requests about whole groups."""

    # -- replay ------------------------------------------------------------------

    def replay(self, offset: int, key: bytes, value: bytes | None, producer_id: int) -> None:
        REGISTRY.replay(self, offset, key, value, producer_id)

    def replay_control(self, producer_id: int, commit: bool) -> None:
        pending = self.pending_txn_offsets.pop(producer_id, None)
        if not pending or not commit:
            return
        for group_id, offsets in pending.items():
            self.offsets.setdefault(group_id, {}).update(offsets)
            if group_id not in self.groups and group_id not in self.streams_groups:
                self.groups[group_id] = ClassicGroup(group_id)

    def on_loaded(self) -> None:
        for group in self.groups.values():
            for member in group.members.values():
                self._arm_session(group, member)
        self.on_consumer_groups_loaded()
        self.on_share_groups_loaded()
        self.on_streams_groups_loaded()
        self._schedule_offset_expiry()

    # -- offsets -------------------------------------------------------------------

    def commit_offsets(self, request: dict[str, Any]) -> Result[dict[tuple[str, int], ErrorCode]]:
        """request: group_id, generation, member_id, instance_id, offsets {(t,p): (o, epoch, md)}"""
        group_id = request["group_id"]
        group = self.groups.get(group_id)
        generation = request["generation"]
        producer = request.get("producer")  # (id, epoch) for TxnOffsetCommit
        member_id = request["member_id"]
        code = ErrorCode.none
        consumer_group = self.consumer_groups.get(group_id)
        if group_id in self.share_groups:
            return Result([], {tp: ErrorCode.group_id_not_found for tp in request["offsets"]})
        streams_group = self.streams_groups.get(group_id)
        if streams_group is not None:
            code = self.streams_commit_error(streams_group, request)
            if code != ErrorCode.none:
                return Result([], {tp: code for tp in request["offsets"]})
        elif consumer_group is not None:
            code = _consumer_commit_error(consumer_group, member_id, generation, producer)
            if code != ErrorCode.none:
                return Result([], {tp: code for tp in request["offsets"]})
        elif group is None:
            if generation >= 0:
                code = ErrorCode.illegal_generation
        elif generation < 0 and not member_id and (group.is_empty() or producer is not None):
            pass  # a simple commit: an admin, an assign()-only consumer, an old EOS client
        elif group.state == DEAD:
            code = ErrorCode.coordinator_not_available
        else:
            code = self._validate_member(group, member_id, request["group_instance_id"])
            if code == ErrorCode.none:
                if generation != group.generation:
                    code = ErrorCode.illegal_generation
                elif group.state == COMPLETING_REBALANCE:
                    code = ErrorCode.rebalance_in_progress
                elif producer is None:
                    # an OffsetCommit keeps the member's session alive, as a heartbeat
                    # does; a transactional one does not (as on Kafka 4.4)
                    self._arm_session(group, group.members[member_id])
        if code != ErrorCode.none:
            return Result([], {tp: code for tp in request["offsets"]})
        if group is None and consumer_group is None and streams_group is None:
            self.groups[group_id] = ClassicGroup(group_id)
        now = now_ms()
        records: list[Record] = []
        answers = {}
        for (topic, partition), (offset, epoch, metadata) in request["offsets"].items():
            # Kafka measures the metadata in Java chars (UTF-16 units), not bytes
            if (
                metadata is not None
                and len(metadata.encode("utf-16-le")) // 2 > self.config.offset_metadata_max_bytes
            ):
                answers[(topic, partition)] = ErrorCode.offset_metadata_too_large
                continue
            answers[(topic, partition)] = ErrorCode.none
            records.append(
                self._offset_record(group_id, topic, partition, offset, epoch, metadata or "", now)
            )
        return Result(records, answers, producer=producer)

    def _offset_record(
        self,
        group_id: str,
        topic: str,
        partition: int,
        offset: int,
        epoch: int,
        metadata: str,
        now: int,
    ) -> Record:
        value = rec.OffsetValue(offset, epoch, metadata, now)
        return OFFSET_COMMIT.record(OffsetKey(group_id, topic, partition), value)

    def fetch_offsets(
        self,
        group_id: str,
        topics: list[tuple[str, list[int]]] | None,
        require_stable: bool,
        member: tuple[str | None, int] = (None, -1),
    ) -> Result[dict[str, Any]]:
        """member: (member id, member epoch) as OffsetFetch v9+ sends them."""
        consumer_group = self.consumer_groups.get(group_id)
        if consumer_group is not None:
            code = _consumer_fetch_error(consumer_group, *member)
            if code != ErrorCode.none:
                return Result([], {"error_code": code, "offsets": []})
        streams_group = self.streams_groups.get(group_id)
        if streams_group is not None:
            code = self.streams_fetch_error(streams_group, *member)
            if code != ErrorCode.none:
                return Result([], {"error_code": code, "offsets": []})
        committed = self.offsets.get(group_id, {})
        pending = {
            tp
            for by_group in self.pending_txn_offsets.values()
            for tp in by_group.get(group_id, {})
        }
        if topics is None:
            wanted: Iterable[tuple[str, int]] = sorted(committed)
        else:
            wanted = [(t, p) for t, parts in topics for p in parts]
        answers: list[tuple[tuple[str, int], CommittedOffset | None, int]] = []
        for tp in wanted:
            if require_stable and tp in pending:
                answers.append((tp, None, ErrorCode.unstable_offset_commit))
            else:
                answers.append((tp, committed.get(tp), ErrorCode.none))
        return Result([], {"error_code": ErrorCode.none, "offsets": answers})

    def _offset_tombstones(self, group_id: str, which: Iterable[tuple[str, int]]) -> list[Record]:
        return [OFFSET_COMMIT.tombstone(OffsetKey(group_id, t, p)) for t, p in which]

    def delete_groups(self, group_ids: list[str]) -> Result[dict[str, ErrorCode]]:
        records: list[Record] = []
        answers = {}
        for group_id in group_ids:
            share_group = self.share_groups.get(group_id)
            if share_group is not None:
                if share_group.members:
                    answers[group_id] = ErrorCode.non_empty_group
                    continue
                records += self._offset_tombstones(group_id, self.offsets.get(group_id, {}))
                records += self.share_group_tombstones(share_group)
                answers[group_id] = ErrorCode.none
                continue
            streams_group = self.streams_groups.get(group_id)
            if streams_group is not None:
                if streams_group.members:
                    answers[group_id] = ErrorCode.non_empty_group
                    continue
                records += self._offset_tombstones(group_id, self.offsets.get(group_id, {}))
                records += group_tombstones(streams_group)
                answers[group_id] = ErrorCode.none
                continue
            consumer_group = self.consumer_groups.get(group_id)
            if consumer_group is not None:
                if consumer_group.members:
                    answers[group_id] = ErrorCode.non_empty_group
                    continue
                records += self._offset_tombstones(group_id, self.offsets.get(group_id, {}))
                records += self.consumer_group_tombstones(consumer_group)
                answers[group_id] = ErrorCode.none
                continue
            group = self.groups.get(group_id)
            if group is None and group_id not in self.offsets:
                answers[group_id] = ErrorCode.group_id_not_found
                continue
            if group is not None and (group.members or group.state == DEAD):
                answers[group_id] = (
                    ErrorCode.non_empty_group if group.members else ErrorCode.group_id_not_found
                )
                continue
            records += self._offset_tombstones(group_id, self.offsets.get(group_id, {}))
            records.append(GROUP_METADATA.tombstone(GroupKey(group_id)))
            answers[group_id] = ErrorCode.none
        return Result(records, answers)

    def delete_offsets(
        self, group_id: str, partitions: list[tuple[str, int]]
    ) -> Result[tuple[int, dict[tuple[str, int], ErrorCode]]]:
        group = self.groups.get(group_id)
        consumer_group = self.consumer_groups.get(group_id)
        streams_group = self.streams_groups.get(group_id)
        unknown = group is None and consumer_group is None and group_id not in self.offsets
        if (unknown and streams_group is None) or group_id in self.share_groups:
            return Result([], (ErrorCode.group_id_not_found, {}))
        subscribed: set[str] = set()
        if streams_group is not None:
            subscribed = self.streams_subscribed(streams_group)
        elif consumer_group is not None:
            for member in consumer_group.members.values():
                subscribed.update(self._member_topics(member))
        elif group is not None and group.members:
            if group.protocol_type != "consumer":
                return Result([], (ErrorCode.non_empty_group, {}))
            topics = group.subscribed_topics()
            subscribed = topics if topics is not None else {t for t, _ in partitions}
        answers = {}
        deletable = []
        for tp in partitions:
            if tp[0] in subscribed:
                answers[tp] = ErrorCode.group_subscribed_to_topic
            else:
                answers[tp] = ErrorCode.none
                if tp in self.offsets.get(group_id, {}):
                    deletable.append(tp)
        return Result(self._offset_tombstones(group_id, deletable), (ErrorCode.none, answers))

    def delete_topic_offsets(self, topics: set[str]) -> Result[None]:
        records: list[Record] = []
        for group_id, offsets in self.offsets.items():
            records += self._offset_tombstones(group_id, [tp for tp in offsets if tp[0] in topics])
        return Result(records)

    # -- offset expiry -------------------------------------------------------------

    def _schedule_offset_expiry(self) -> None:
        def expire(shard: GroupShard) -> Result[None]:
            shard._schedule_offset_expiry()
            return Result(shard.expired_offset_records(now_ms()))

        self._schedule("offset-expiry", self.config.offsets_retention_check_interval_ms, expire)

    def expired_offset_records(self, now: int) -> list[Record]:
        """Offsets of groups without members expire retention after their commit."""
        records: list[Record] = []
        for group_id, offsets in self.offsets.items():
            group = self.groups.get(group_id)
            if group is not None and group.members:
                continue
            streams_group = self.streams_groups.get(group_id)
            if streams_group is not None and streams_group.members:
                continue
            expired = [
                tp
                for tp, committed in offsets.items()
                if (committed.expire_timestamp > 0 and now >= committed.expire_timestamp)
                or now - committed.commit_timestamp >= self.config.offsets_retention_ms
            ]
            records += self._offset_tombstones(group_id, expired)
            if len(expired) == len(offsets) and group is not None and not group.members:
                records.append(GROUP_METADATA.tombstone(GroupKey(group_id)))
        return records

    # -- describe and list ------------------------------------------------------------

    def describe(self, group_id: str) -> Result[dict[str, Any] | str]:
        """The classic group, or why there is none (Kafka's words)."""
        group = self.groups.get(group_id)
        if group is None:
            other_types = (self.consumer_groups, self.share_groups, self.streams_groups)
            if any(group_id in groups for groups in other_types):
                return Result([], f"Group {group_id} is not a classic group.")
            return Result([], f"Group {group_id} not found.")
        # as Kafka: protocol, metadata and assignments only once the group is stable
        stable = group.state == STABLE
        return Result(
            [],
            {
                "group_id": group_id,
                "group_state": group.state,
                "protocol_type": group.protocol_type or "",
                "protocol_data": (group.protocol or "") if stable else "",
                "members": [
                    {
                        "member_id": m.member_id,
                        "group_instance_id": m.group_instance_id,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "member_metadata": m.metadata_for(group.protocol) if stable else b"",
                        "member_assignment": m.assignment if stable else b"",
                    }
                    for m in group.members.values()
                ],
            },
        )

    def list_groups(self) -> Result[list[tuple[str, str, str, str]]]:
        """(group id, protocol type, state, group type) of every live group."""
        listed = [
            (g.group_id, g.protocol_type or "", g.state, "classic")
            for g in self.groups.values()
            if g.state != DEAD
        ]
        listed += [
            (g.group_id, "consumer", g.state, "consumer") for g in self.consumer_groups.values()
        ]
        listed += [(g.group_id, "share", g.state, "share") for g in self.share_groups.values()]
        listed += [
            (g.group_id, "streams", g.state, "streams") for g in self.streams_groups.values()
        ]
        known = {listed_group[0] for listed_group in listed}
        listed += [(g, "", EMPTY, "classic") for g in self.offsets if g not in known]
        return Result([], listed)


def _consumer_commit_error(
    group: ConsumerGroup, member_id: str, epoch: int, producer: Any
) -> ErrorCode:
    """Who may commit offsets of a consumer-protocol group: anyone while it has no
    members (an admin, a manual assignment), else a member at its current epoch."""
    if epoch < 0 and not group.members:
        return ErrorCode.none
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.unknown_member_id
    if epoch != member.member_epoch:
        # a classic member, and any transactional commit, hear it as the classic protocol says
        classic = member.classic is not None or producer is not None
        return ErrorCode.illegal_generation if classic else ErrorCode.stale_member_epoch
    return ErrorCode.none


def _consumer_fetch_error(group: ConsumerGroup, member_id: str | None, epoch: int) -> ErrorCode:
    """OffsetFetch v9+ names its member: it must be one, at its current epoch. Without a
    member (an admin, an older client) anyone may fetch."""
    if member_id is None and epoch < 0:
        return ErrorCode.none
    member = group.members.get(member_id or "")
    if member is None:
        return ErrorCode.unknown_member_id
    if epoch != member.member_epoch:
        classic = member.classic is not None
        return ErrorCode.illegal_generation if classic else ErrorCode.stale_member_epoch
    return ErrorCode.none
