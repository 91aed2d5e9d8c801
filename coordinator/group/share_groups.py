"""The shard's share groups (KIP-932: ShareGroupHeartbeat).

As for consumer groups, a heartbeat works on a copy of its group and every change is
a record (share.py) applied to the copy at once and to the shard's groups by
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

from odradek.coordinator.group import share
from odradek.coordinator.group import share_records as shr
from odradek.coordinator.group.heartbeat_errors import (
    HeartbeatError,
    fenced,
    not_found,
    not_of_kind,
    unknown_member,
)
from odradek.coordinator.group.modern import value_of
from odradek.coordinator.group.modern_groups import ModernGroups
from odradek.coordinator.group.record_codecs import GroupKey, MemberKey
from odradek.coordinator.group.record_types import emit
from odradek.coordinator.group.share import (
    CURRENT_ASSIGNMENT,
    GROUP_EPOCH,
    MEMBER_METADATA,
    STATE_PARTITIONS,
    TARGET_EPOCH,
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


class ShareGroups(ModernGroups[ShareGroup]):
    kind = "share"
    types = share.RECORDS
    session_timer = "ssession"
    # what share groups have read is the share coordinator's, not committed offsets
    has_offsets = False

    def new_group(self, group_id: str) -> ShareGroup:
        return ShareGroup(group_id)

    # -- ShareGroupHeartbeat -------------------------------------------------------

    def _heartbeat(self, request: dict[str, Any]) -> Result[dict[str, Any]]:
        """request: group_id, member_id, member_epoch, rack_id, subscribed_topic_names,
        client_id, client_host."""
        _validate(request)
        group_id, member_id, epoch = (
            request["group_id"],
            request["member_id"],
            request["member_epoch"],
        )
        if self._is_other_group_type(group_id):
            raise HeartbeatError(ErrorCode.group_id_not_found, not_of_kind(group_id, "share"))
        records: list[Record] = []
        live = self.groups.get(group_id)
        group = live.copy() if live is not None else ShareGroup(group_id)
        if epoch == LEAVE_EPOCH:
            if member_id not in group.members:
                raise unknown_member(group_id, member_id)
            self.context.cancel(self._session_key(group_id, member_id))
            self._leave(group, member_id, records)
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
        member = self._member_for(group, request)
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
        metadata = value_of(shr.MemberMetadata, updated)
        if stored is None or value_of(shr.MemberMetadata, stored) != metadata:
            key = MemberKey(group_id, member_id)
            emit(group, records, MEMBER_METADATA.record(key, metadata))
        bump = stored is None or stored.subscribed_topic_names != updated.subscribed_topic_names
        if bump or group.group_epoch == 0 or self._topics_hash(group) != group.metadata_hash:
            self._bump(group, records)
        if group.group_epoch > group.assignment_epoch:
            self._assign(group, records)
        after = group.members[member_id]
        target = group.target.get(member_id, {})
        if after.member_epoch != group.assignment_epoch or after.assigned != target:
            current = shr.CurrentAssignment(group.assignment_epoch, after.member_epoch, 0, target)
            key = MemberKey(group_id, member_id)
            emit(group, records, CURRENT_ASSIGNMENT.record(key, current))
            after = group.members[member_id]
        timeouts = self.context.config.timeouts(group_id)
        self._arm_session(group_id, member_id, timeouts.share_session_timeout_ms)
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
        if self.context.holds(group_id, "consumer", "streams"):
            return True
        classic = self.context.find(group_id, "classic")
        return classic is not None and not classic.is_empty()

    def _member_for(self, group: ShareGroup, request: dict[str, Any]) -> ShareMember:
        member_id, epoch = request["member_id"], request["member_epoch"]
        member = group.members.get(member_id)
        if epoch == 0:
            limit = self.context.config.share_max_size
            if member is None and len(group.members) >= limit:
                raise HeartbeatError(
                    ErrorCode.group_max_size_reached,
                    f"The share group has reached its maximum of {limit} members.",
                )
            return member or ShareMember(member_id)
        if member is None:
            raise unknown_member(group.group_id, member_id)
        if epoch != member.member_epoch:
            raise fenced("share", epoch, member.member_epoch)
        return member

    def _topics(self, group: ShareGroup) -> dict[str, tuple[Any, int]]:
        existing = self.context.topics_view()
        names = {n for m in group.members.values() for n in m.subscribed_topic_names}
        return {n: existing[n] for n in sorted(names) if n in existing}

    def _topics_hash(self, group: ShareGroup) -> int:
        return topics_hash(self._topics(group))

    def _bump(self, group: ShareGroup, records: list[Record]) -> None:
        """The next group epoch, with the hash of the topics it is for: a heartbeat moves the
        epoch again only when the members' subscriptions or those topics change."""
        value = shr.GroupEpoch(group.group_epoch + 1, self._topics_hash(group))
        emit(group, records, GROUP_EPOCH.record(GroupKey(group.group_id), value))

    def _assign(self, group: ShareGroup, records: list[Record]) -> None:
        topics = self._topics(group)
        subscriptions = {
            m.member_id: frozenset(topics[n][0] for n in m.subscribed_topic_names if n in topics)
            for m in group.members.values()
        }
        partitions = {topic_id: count for topic_id, count in topics.values()}
        self._write_target(group, assign(subscriptions, partitions, group.target), records)
        emit(group, records, TARGET_EPOCH.record(GroupKey(group.group_id), group.group_epoch))

    def _leave(self, group: ShareGroup, member_id: str, records: list[Record]) -> None:
        """The member leaves (or is fenced): a new epoch, and a target for the rest."""
        self.remove_member(group, member_id, records)
        self._bump(group, records)
        if group.members:
            self._assign(group, records)

    # -- timers --------------------------------------------------------------------

    def _session_expired(self, group_id: str, member_id: str) -> Result[None]:
        live = self.groups.get(group_id)
        if live is None or member_id not in live.members:
            return Result()
        group = live.copy()
        records: list[Record] = []
        self._leave(group, member_id, records)
        return Result(records)

    def arm_timers(self, group: ShareGroup, member: ShareMember) -> None:
        timeout = self.context.config.timeouts(group.group_id).share_session_timeout_ms
        self._arm_session(group.group_id, member.member_id, timeout)

    # -- describe and delete ----------------------------------------------------------

    def described(self, group: ShareGroup) -> dict[str, Any]:
        return {
            "group_id": group.group_id,
            "group_state": group.state,
            "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch,
            "assignor_name": "simple",
            "members": list(group.members.values()),
            "topic_names": {tid: name for name, (tid, _) in self.context.topics_view().items()},
        }

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
        group = self.groups.get(group_id)
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
            return Result([], (ErrorCode.group_id_not_found, not_of_kind(group_id, "share")))
        if status == "missing" and not may_be_missing:
            return Result([], (ErrorCode.group_id_not_found, not_found(group_id)))
        if status == "share":
            return Result([], (ErrorCode.non_empty_group, "The group is not empty."))
        return Result([], None)

    def _share_group_status(self, group_id: str) -> str:
        """ "share" (with members), "empty" (a share group without any), "missing", or
        "other" (a group of another type)."""
        group = self.groups.get(group_id)
        if group is not None:
            return "share" if group.members else "empty"
        return "other" if self.context.held_elsewhere(group_id, self.kind) else "missing"


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
