"""Share groups (KIP-932: ShareGroupHeartbeat) on a group coordinator shard.

As for consumer groups, a heartbeat works on a copy of its group and every change is
a record (share.py) applied to the copy at once and to the shard's state by
`replay` once written; loading replays the same records.

A member joins with epoch 0, its own member id and the topics it subscribes to; a new
member, a changed subscription or a change in the subscribed topics' partitions moves
the group to a new epoch, and the share assignor computes the target assignment for
it. Members take their target at once (there is nothing to revoke: partitions are
shared), so a member's epoch is the group's. Epoch -1 leaves. A member that does not
heartbeat within the session timeout is removed.
"""

from __future__ import annotations

import uuid
from typing import Any

from odradek.coordinator.group import share_records as shr
from odradek.coordinator.group.heartbeat_errors import HeartbeatError, fenced_message
from odradek.coordinator.group.record_codecs import GroupKey, MemberKey
from odradek.coordinator.group.record_types import emit
from odradek.coordinator.group.shard_state import ShardState
from odradek.coordinator.group.share import (
    CURRENT_ASSIGNMENT,
    GROUP_EPOCH,
    MEMBER_METADATA,
    STATE_PARTITIONS,
    TARGET_EPOCH,
    TARGET_MEMBER,
    ShareGroup,
    ShareMember,
    topics_hash,
)
from odradek.coordinator.group.share_assignor import assign
from odradek.coordinator.runtime import Record, Result
from odradek.protocol.errors import ErrorCode

LEAVE_EPOCH = -1


def _invalid(message: str) -> HeartbeatError:
    return HeartbeatError(ErrorCode.invalid_request, message)


class ShareProtocol(ShardState):
    # -- ShareGroupHeartbeat -------------------------------------------------------

    def share_group_heartbeat(self, request: dict[str, Any]) -> Result[dict[str, Any]]:
        """request: group_id, member_id, member_epoch, rack_id, subscribed_topic_names,
        client_id, client_host."""
        try:
            return self._share_heartbeat(request)
        except HeartbeatError as exc:
            return Result([], {"error_code": exc.code, "error_message": str(exc)})

    def _share_heartbeat(self, request: dict[str, Any]) -> Result[dict[str, Any]]:
        _validate(request)
        group_id, member_id, epoch = (
            request["group_id"],
            request["member_id"],
            request["member_epoch"],
        )
        if self._is_other_group_type(group_id):
            raise HeartbeatError(ErrorCode.group_id_not_found, _not_share(group_id))
        records: list[Record] = []
        live = self.share_groups.get(group_id)
        group = live.copy() if live is not None else ShareGroup(group_id)
        if epoch == LEAVE_EPOCH:
            if member_id not in group.members:
                raise HeartbeatError(
                    ErrorCode.unknown_member_id,
                    f"Member {member_id} is not a member of group {group_id}.",
                )
            self._cancel(_session_timer(group_id, member_id))
            self._remove_share_member(group, member_id, records)
            return Result(
                records,
                {
                    "error_code": ErrorCode.none,
                    "member_id": member_id,
                    "member_epoch": LEAVE_EPOCH,
                    "heartbeat_interval_ms": 0,
                    "assignment": None,
                },
            )
        member = self._share_member_for(group, request)
        before = member.assigned
        updated = ShareMember(
            member.member_id,
            member.member_epoch,
            member.previous_member_epoch,
            request.get("rack_id") if request.get("rack_id") is not None else member.rack_id,
            request.get("client_id", member.client_id),
            request.get("client_host", member.client_host),
            tuple(request["subscribed_topic_names"])
            if request.get("subscribed_topic_names") is not None
            else member.subscribed_topic_names,
            member.assigned,
        )
        stored = group.members.get(member_id)
        if stored is None or _metadata(stored) != _metadata(updated):
            emit(group, records, _member_record(group_id, updated))
        bump = stored is None or stored.subscribed_topic_names != updated.subscribed_topic_names
        if bump or group.group_epoch == 0 or self._share_topics_hash(group) != group.metadata_hash:
            self._bump_share_epoch(group, records)
        if group.group_epoch > group.assignment_epoch:
            self._share_assign(group, records)
        after = group.members[member_id]
        target = group.target.get(member_id, {})
        if after.member_epoch != group.assignment_epoch or after.assigned != target:
            current = shr.CurrentAssignment(group.assignment_epoch, after.member_epoch, 0, target)
            key = MemberKey(group_id, member_id)
            emit(group, records, CURRENT_ASSIGNMENT.record(key, current))
            after = group.members[member_id]
        timeouts = self.config.timeouts(group_id)
        self._arm_share_session(group_id, member_id, timeouts.share_session_timeout_ms)
        full = epoch == 0 or request.get("subscribed_topic_names") is not None
        return Result(
            records,
            {
                "error_code": ErrorCode.none,
                "member_id": member_id,
                "member_epoch": after.member_epoch,
                "heartbeat_interval_ms": timeouts.share_heartbeat_interval_ms,
                "assignment": after.assigned if full or after.assigned != before else None,
            },
        )

    def _is_other_group_type(self, group_id: str) -> bool:
        if group_id in self.consumer_groups or group_id in self.streams_groups:
            return True
        classic = self.groups.get(group_id)
        return classic is not None and not classic.is_empty()

    def _share_member_for(self, group: ShareGroup, request: dict[str, Any]) -> ShareMember:
        member_id, epoch = request["member_id"], request["member_epoch"]
        member = group.members.get(member_id)
        if epoch == 0:
            if member is None and len(group.members) >= self.config.share_max_size:
                raise HeartbeatError(
                    ErrorCode.group_max_size_reached,
                    f"The share group has reached its maximum of {self.config.share_max_size} "
                    "members.",
                )
            return member or ShareMember(member_id)
        if member is None:
            raise HeartbeatError(
                ErrorCode.unknown_member_id,
                f"Member {member_id} is not a member of group {group.group_id}.",
            )
        if epoch != member.member_epoch:
            raise HeartbeatError(
                ErrorCode.fenced_member_epoch,
                fenced_message("share", epoch, member.member_epoch),
            )
        return member

    def _share_topics(self, group: ShareGroup) -> dict[str, tuple[Any, int]]:
        existing = self.topics_view()
        names = {n for m in group.members.values() for n in m.subscribed_topic_names}
        return {n: existing[n] for n in sorted(names) if n in existing}

    def _share_topics_hash(self, group: ShareGroup) -> int:
        return topics_hash(self._share_topics(group))

    def _bump_share_epoch(self, group: ShareGroup, records: list[Record]) -> None:
        """The next group epoch, with the hash of the topics it is for: a heartbeat moves the
        epoch again only when the members' subscriptions or those topics change."""
        value = shr.GroupEpoch(group.group_epoch + 1, self._share_topics_hash(group))
        emit(group, records, GROUP_EPOCH.record(GroupKey(group.group_id), value))

    def _share_assign(self, group: ShareGroup, records: list[Record]) -> None:
        topics = self._share_topics(group)
        subscriptions = {
            m.member_id: frozenset(topics[n][0] for n in m.subscribed_topic_names if n in topics)
            for m in group.members.values()
        }
        partitions = {topic_id: count for topic_id, count in topics.values()}
        new_target = assign(subscriptions, partitions, group.target)
        for member_id, target in new_target.items():
            if group.target.get(member_id) != target:
                key = MemberKey(group.group_id, member_id)
                emit(group, records, TARGET_MEMBER.record(key, target))
        emit(group, records, TARGET_EPOCH.record(GroupKey(group.group_id), group.group_epoch))

    def _remove_share_member(
        self, group: ShareGroup, member_id: str, records: list[Record]
    ) -> None:
        for record_type in (TARGET_MEMBER, CURRENT_ASSIGNMENT, MEMBER_METADATA):
            emit(group, records, record_type.tombstone(MemberKey(group.group_id, member_id)))
        self._bump_share_epoch(group, records)
        if group.members:
            self._share_assign(group, records)

    # -- timers --------------------------------------------------------------------

    def _arm_share_session(self, group_id: str, member_id: str, timeout_ms: int) -> None:
        def expire(shard: ShareProtocol) -> Result[None]:
            live = shard.share_groups.get(group_id)
            if live is None or member_id not in live.members:
                return Result()
            group = live.copy()
            records: list[Record] = []
            shard._remove_share_member(group, member_id, records)
            return Result(records)

        self._schedule(_session_timer(group_id, member_id), timeout_ms, expire)

    def on_share_groups_loaded(self) -> None:
        for group in self.share_groups.values():
            for member_id in group.members:
                self._arm_share_session(
                    group.group_id,
                    member_id,
                    self.config.timeouts(group.group_id).share_session_timeout_ms,
                )

    # -- describe and delete ----------------------------------------------------------

    def describe_share_group(self, group_id: str) -> Result[dict[str, Any] | str]:
        """The group, or (no share group of that id) the reason GROUP_ID_NOT_FOUND gives."""
        group = self.share_groups.get(group_id)
        if group is None:
            status = self._share_group_status(group_id)
            return Result([], _not_share(group_id) if status == "other" else _not_found(group_id))
        return Result(
            [],
            {
                "group_id": group_id,
                "group_state": group.state,
                "group_epoch": group.group_epoch,
                "assignment_epoch": group.assignment_epoch,
                "assignor_name": "simple",
                "members": list(group.members.values()),
                "topic_names": {tid: name for name, (tid, _) in self.topics_view().items()},
            },
        )

    def prepare_share_offsets_alter(
        self, group_id: str, topics: dict[uuid.UUID, tuple[str, frozenset[int]]]
    ) -> Result[tuple[int, str | None]]:
        """AlterShareGroupOffsets' turn on the group: (error code, message). A group that
        does not exist yet is created empty, at epoch 1 as on Kafka, with the record of
        the share-partitions whose state is about to be set (`topics`: id -> (name,
        partitions))."""
        problem = self.share_offsets_problem(group_id, may_be_missing=True).response
        if problem is not None:
            return Result([], problem)
        if not topics:
            return Result([], (ErrorCode.none, None))
        group = self.share_groups.get(group_id)
        known = group.state_partitions if group is not None else shr.StatePartitions()
        initialized = {t.topic_id: t for t in known.initialized}
        for topic_id, (name, partitions) in topics.items():
            before = initialized.get(topic_id)
            merged = partitions | (before.partitions if before is not None else frozenset())
            initialized[topic_id] = shr.TopicPartitionsNamed(topic_id, name, merged)
        value = shr.StatePartitions(
            tuple(t for t in known.initializing if t.topic_id not in topics),
            tuple(initialized.values()),
            tuple(d for d in known.deleting if d[0] not in topics),
        )
        records: list[Record] = []
        if group is None:
            records.append(GROUP_EPOCH.record(GroupKey(group_id), shr.GroupEpoch(1)))
            records.append(TARGET_EPOCH.record(GroupKey(group_id), 1))
        records.append(STATE_PARTITIONS.record(GroupKey(group_id), value))
        return Result(records, (ErrorCode.none, None))

    def share_offsets_problem(
        self, group_id: str, may_be_missing: bool = False
    ) -> Result[tuple[int, str | None] | None]:
        """Why a share group's offsets may not be changed now, in Kafka's words (none when
        they may): it does not exist (unless `may_be_missing`), it is of another kind,
        or it has members."""
        status = self._share_group_status(group_id)
        if status == "other":
            return Result([], (ErrorCode.group_id_not_found, _not_share(group_id)))
        if status == "missing" and not may_be_missing:
            return Result([], (ErrorCode.group_id_not_found, _not_found(group_id)))
        if status == "share":
            return Result([], (ErrorCode.non_empty_group, "The group is not empty."))
        return Result([], None)

    def _share_group_status(self, group_id: str) -> str:
        """ "share" (with members), "empty" (a share group without any), "missing", or
        "other" (a group of another type)."""
        group = self.share_groups.get(group_id)
        if group is not None:
            return "share" if group.members else "empty"
        if any(group_id in g for g in (self.groups, self.consumer_groups, self.streams_groups)):
            return "other"
        return "missing"

    def share_group_tombstones(self, group: ShareGroup) -> list[Record]:
        gid = group.group_id
        records = [
            record_type.tombstone(MemberKey(gid, m))
            for m in group.members
            for record_type in (CURRENT_ASSIGNMENT, MEMBER_METADATA)
        ]
        records += [TARGET_MEMBER.tombstone(MemberKey(gid, m)) for m in group.target]
        records += [
            record_type.tombstone(GroupKey(gid))
            for record_type in (TARGET_EPOCH, STATE_PARTITIONS, GROUP_EPOCH)
        ]
        return records


def _not_found(group_id: str) -> str:
    return f"Group {group_id} not found."


def _not_share(group_id: str) -> str:
    return f"Group {group_id} is not a share group."


def _session_timer(group_id: str, member_id: str) -> str:
    return f"ssession:{group_id}:{member_id}"


def _metadata(member: ShareMember) -> tuple[Any, ...]:
    return (member.rack_id, member.client_id, member.client_host, member.subscribed_topic_names)


def _member_record(group_id: str, member: ShareMember) -> Record:
    value = shr.MemberMetadata(
        member.rack_id, member.client_id, member.client_host, member.subscribed_topic_names
    )
    return MEMBER_METADATA.record(MemberKey(group_id, member.member_id), value)


def _validate(request: dict[str, Any]) -> None:
    if not request["group_id"]:
        raise _invalid("GroupId can't be empty.")
    if not request["member_id"]:
        raise _invalid("MemberId can't be empty.")
    if request.get("rack_id") == "":
        raise _invalid("RackId can't be empty.")
    epoch = request["member_epoch"]
    if epoch == 0:
        if not request.get("subscribed_topic_names"):
            raise _invalid("SubscribedTopicNames must be set in first request.")
    elif epoch < LEAVE_EPOCH:
        raise _invalid("MemberEpoch is invalid.")
