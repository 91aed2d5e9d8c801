"""The consumer group protocol (KIP-848: ConsumerGroupHeartbeat) on a shard.

A heartbeat works on a copy of its group: every change becomes a record (see
consumer.py) that is applied to the copy at once, so later steps of the same
heartbeat see it, and to the shard's state by `replay` once the records are written.
Loading after a restart replays the same records, so a group comes back with its
epochs, target assignment and each member's reconciliation state.
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from odradek.coordinator.group import consumer_records as cr
from odradek.coordinator.group.assignors import ASSIGNORS, DEFAULT_ASSIGNOR, AssignmentSpec
from odradek.coordinator.group.classic import GROUP_METADATA, ClassicGroup
from odradek.coordinator.group.consumer import (
    CURRENT_ASSIGNMENT,
    GROUP_EPOCH,
    MEMBER_METADATA,
    MEMBER_STATES,
    PARTITION_METADATA,
    STABLE,
    TARGET_EPOCH,
    TARGET_MEMBER,
    UNREVOKED_PARTITIONS,
    ConsumerGroup,
    ConsumerMember,
    current_record,
    member_metadata,
    member_record,
    reconcile,
    target_record,
)
from odradek.coordinator.group.heartbeat_errors import (
    HeartbeatError,
    fenced_message,
)
from odradek.coordinator.group.record_codecs import GroupKey, MemberKey, TopicPartitions
from odradek.coordinator.group.record_types import emit
from odradek.coordinator.group.regex import invalid_regex_message
from odradek.coordinator.group.shard_state import ShardState
from odradek.coordinator.runtime import Record, Result
from odradek.protocol.errors import ErrorCode

LEAVE_EPOCH, STATIC_LEAVE_EPOCH = -1, -2
# topic name -> (topic id, partition count), of the topics that exist now
TopicsView = Callable[[], Mapping[str, tuple[uuid.UUID, int]]]


def _invalid(message: str) -> HeartbeatError:
    return HeartbeatError(ErrorCode.invalid_request, message)


class ConsumerProtocol(ShardState):
    # -- ConsumerGroupHeartbeat ----------------------------------------------------

    def consumer_group_heartbeat(self, request: dict[str, Any]) -> Result[dict[str, Any]]:
        try:
            return self._heartbeat(request)
        except HeartbeatError as exc:
            return Result([], {"error_code": exc.code, "error_message": str(exc)})

    def _heartbeat(self, request: dict[str, Any]) -> Result[dict[str, Any]]:
        _validate(request)
        group_id, epoch = request["group_id"], request["member_epoch"]
        records: list[Record] = []
        if group_id in self.share_groups or group_id in self.streams_groups:
            raise HeartbeatError(
                ErrorCode.group_id_not_found, f"Group {group_id} is not a consumer group."
            )
        live = self.consumer_groups.get(group_id)
        upgraded: ClassicGroup | None = None
        if live is None:
            classic = self.groups.get(group_id)
            if classic is not None and not classic.is_empty():
                if epoch != 0:
                    raise HeartbeatError(
                        ErrorCode.group_id_not_found, f"Group {group_id} is not a consumer group."
                    )
                live = self._upgrade(classic, records)
                upgraded = classic
            elif epoch != 0:
                raise HeartbeatError(
                    ErrorCode.unknown_member_id,
                    f"Group {group_id} has no member {request['member_id']}.",
                )
            elif classic is not None:  # an empty classic group becomes a consumer group
                records.append(self._classic_tombstone(group_id))
        group = live.copy() if live is not None else ConsumerGroup(group_id)
        if epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self._leave(group, request, records)
        member = self._member_for(group, request, records)
        previously_assigned = member.assigned  # records below replace the group's members
        after = self._update_member(
            group, _with_request(member, request), request.get("owned"), records
        )
        if upgraded is not None:
            self._retire_classic(upgraded, group)
        self._arm_consumer_timers(group, after)
        full = epoch == 0 or (
            request.get("rebalance_timeout_ms", -1) != -1
            and request.get("subscribed_topic_names") is not None
            and request.get("owned") is not None
        )
        response: dict[str, Any] = {
            "error_code": ErrorCode.none,
            "member_id": after.member_id,
            "member_epoch": after.member_epoch,
            "heartbeat_interval_ms": self.config.timeouts(group_id).consumer_heartbeat_interval_ms,
            "assignment": None,
        }
        if full or after.assigned != previously_assigned:
            response["assignment"] = after.assigned
        return Result(records, response)

    def _update_member(
        self,
        group: ConsumerGroup,
        updated: ConsumerMember,
        owned: Mapping[uuid.UUID, frozenset[int]] | None,
        records: list[Record],
    ) -> ConsumerMember:
        """Store the member's new subscription and settings, move the group to a new
        epoch and target assignment if they changed what the group consumes, and take
        the member one step towards its target. Returns the member as it now is."""
        group_id = group.group_id
        stored = group.members.get(updated.member_id)
        if stored is None or member_metadata(stored) != member_metadata(updated):
            emit(group, records, member_record(group_id, updated))
        if _progress(group.members[updated.member_id]) != _progress(updated):
            emit(group, records, current_record(group_id, updated))
        bump = stored is None or _subscription_changed(stored, updated)
        topics = self._subscribed_topics(group, changed=bump)
        if topics != group.topics:
            emit(group, records, PARTITION_METADATA.record(GroupKey(group_id), topics))
            bump = True
        if bump or group.group_epoch == 0:
            self._bump(group, records)
        if group.group_epoch > group.assignment_epoch:
            self._assign(group, records)
        before = group.members[updated.member_id]
        after = reconcile(
            before,
            group.assignment_epoch,
            group.target.get(before.member_id, {}),
            owned,
            _held_by_another(group, before.member_id),
        )
        if after != before:
            emit(group, records, current_record(group_id, after))
        return after

    # Moving between the classic protocol and this one (group.consumer.migration.policy):
    # ClassicMembers (classic_members.py) gives these their meaning.
    def _upgrade(self, classic: ClassicGroup, records: list[Record]) -> ConsumerGroup:
        raise HeartbeatError(
            ErrorCode.group_id_not_found, f"Group {classic.group_id} is not a consumer group."
        )

    def _retire_classic(self, classic: ClassicGroup, group: ConsumerGroup) -> None:
        pass

    def _maybe_downgrade(self, group: ConsumerGroup, leaving: str, records: list[Record]) -> bool:
        return False

    def _member_for(
        self, group: ConsumerGroup, request: dict[str, Any], records: list[Record]
    ) -> ConsumerMember:
        member_id, epoch = request["member_id"], request["member_epoch"]
        instance_id = request.get("instance_id")
        if epoch == 0:
            if len(group.members) >= self.config.consumer_max_size and (
                member_id not in group.members
            ):
                raise HeartbeatError(
                    ErrorCode.group_max_size_reached,
                    f"The consumer group has reached its maximum of "
                    f"{self.config.consumer_max_size} members.",
                )
            member_id = member_id or str(uuid.uuid4())
            if instance_id is not None:
                previous = group.static_member(instance_id)
                if previous is not None and previous.member_id != member_id:
                    if previous.member_epoch != STATIC_LEAVE_EPOCH:
                        raise HeartbeatError(
                            ErrorCode.unreleased_instance_id,
                            f"Static member {member_id} with instance id {instance_id} cannot "
                            "join the group because the instance id is owned by "
                            f"{previous.member_id} member.",
                        )
                    return self._replace_static(group, previous, member_id, records)
            existing = group.members.get(member_id)
            if existing is not None:
                # a member that lost its epoch rejoins: it holds nothing any more
                return ConsumerMember(
                    **{
                        **vars(existing),
                        "member_epoch": 0,
                        "previous_member_epoch": 0,
                        "state": STABLE,
                        "assigned": {},
                        "pending_revocation": {},
                    }  # fmt: skip
                )
            return ConsumerMember(member_id)
        member = group.members.get(member_id)
        if member is None:
            raise HeartbeatError(
                ErrorCode.unknown_member_id,
                f"Member {member_id} is not a member of group {group.group_id}.",
            )
        if instance_id is not None and member.instance_id not in (None, instance_id):
            raise HeartbeatError(
                ErrorCode.fenced_instance_id, f"Member {member_id} has another instance id."
            )
        owned = request.get("owned")
        if epoch > member.member_epoch or (
            epoch < member.member_epoch
            and (epoch != member.previous_member_epoch or not _subset(owned, member.assigned))
        ):
            raise HeartbeatError(
                ErrorCode.fenced_member_epoch,
                fenced_message("consumer", epoch, member.member_epoch),
            )
        return member

    def _replace_static(
        self,
        group: ConsumerGroup,
        previous: ConsumerMember,
        member_id: str,
        records: list[Record],
    ) -> ConsumerMember:
        """A static member's instance comes back under a new member id: it keeps its
        place and its target assignment."""
        replacement = dataclasses.replace(
            previous, member_id=member_id, member_epoch=0, previous_member_epoch=0
        )
        target = group.target.get(previous.member_id, {})
        self._remove(group, previous.member_id, records)
        emit(group, records, target_record(group.group_id, member_id, target))
        return replacement

    def _leave(
        self, group: ConsumerGroup, request: dict[str, Any], records: list[Record]
    ) -> Result[dict[str, Any]]:
        member_id, epoch = request["member_id"], request["member_epoch"]
        member = group.members.get(member_id)
        if member is None:
            raise HeartbeatError(
                ErrorCode.unknown_member_id,
                f"Member {member_id} is not a member of group {group.group_id}.",
            )
        self._cancel_consumer_timers(group.group_id, member_id)
        if epoch == STATIC_LEAVE_EPOCH and member.instance_id is not None:
            # keeps its place and assignment until it returns or its session ends
            parked = ConsumerMember(**{**vars(member), "member_epoch": STATIC_LEAVE_EPOCH})
            emit(group, records, current_record(group.group_id, parked))
            self._arm_session_timeout(group.group_id, parked)
        elif not self._maybe_downgrade(group, member_id, records):
            self._remove(group, member_id, records)
            self._bump(group, records)
        return Result(
            records,
            {
                "error_code": ErrorCode.none,
                "member_id": member_id,
                "member_epoch": epoch,
                "heartbeat_interval_ms": 0,
                "assignment": None,
            },
        )

    # -- target assignment ---------------------------------------------------------

    def _assign(self, group: ConsumerGroup, records: list[Record]) -> None:
        by_name = {t.name: t for t in group.topics}
        subscriptions = {
            m.member_id: frozenset(
                by_name[name].topic_id for name in self._member_topics(m) if name in by_name
            )
            for m in group.members.values()
        }
        spec = AssignmentSpec(
            subscriptions,
            {t.topic_id: t.partitions for t in group.topics},
            group.target,
        )
        assignor = ASSIGNORS[_preferred_assignor(group)]
        new_target = {
            member: {topic: frozenset(parts) for topic, parts in owned.items() if parts}
            for member, owned in assignor(spec).items()
        }
        for member_id, target in new_target.items():
            if group.target.get(member_id) != target:
                emit(group, records, target_record(group.group_id, member_id, target))
        emit(group, records, TARGET_EPOCH.record(GroupKey(group.group_id), group.group_epoch))

    def _subscribed_topics(
        self, group: ConsumerGroup, changed: bool = True
    ) -> list[cr.TopicMetadata]:
        """The existing topics the members subscribe to. `changed`: a subscription
        changed in this heartbeat (else the names found at this group epoch are kept,
        unless a member subscribes by pattern: its matches follow the topics there are)."""
        existing = self.topics_view()
        key = (group.group_epoch, len(group.members))
        cached = self.subscribed_names.get(group.group_id)
        if not changed and cached is not None and cached[0] == key:
            names: Iterable[str] = cached[1]
        else:
            by_pattern = any(m.subscribed_topic_regex for m in group.members.values())
            found: set[str] = set()
            for member in group.members.values():
                found.update(self._member_topics(member, existing))
            names = found
            if by_pattern:
                self.subscribed_names.pop(group.group_id, None)
            else:
                self.subscribed_names[group.group_id] = (key, frozenset(found))
        return [
            cr.TopicMetadata(existing[n][0], n, existing[n][1])
            for n in sorted(names)
            if n in existing
        ]

    def _member_topics(
        self, member: ConsumerMember, existing: Mapping[str, Any] | None = None
    ) -> list[str]:
        """The topic names a member subscribes to, its regular expression matched
        against ``existing`` (the topics now, when not given)."""
        names = list(member.subscribed_topic_names)
        if member.subscribed_topic_regex:
            try:
                pattern = re.compile(member.subscribed_topic_regex)
            except re.error:
                return names
            topics = existing if existing is not None else self.topics_view()
            names += [n for n in topics if pattern.fullmatch(n)]
        return names

    def _remove(self, group: ConsumerGroup, member_id: str, records: list[Record]) -> None:
        for record_type in (TARGET_MEMBER, CURRENT_ASSIGNMENT, MEMBER_METADATA):
            emit(group, records, record_type.tombstone(MemberKey(group.group_id, member_id)))

    def _bump(self, group: ConsumerGroup, records: list[Record]) -> None:
        epoch = group.group_epoch + 1
        emit(group, records, GROUP_EPOCH.record(GroupKey(group.group_id), epoch))

    # -- timers --------------------------------------------------------------------

    def _arm_consumer_timers(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        self._arm_session_timeout(group.group_id, member)
        revoke_key = f"revoke:{group.group_id}:{member.member_id}"
        if member.state != UNREVOKED_PARTITIONS:
            self._cancel(revoke_key)
            self.revocations_armed.pop(revoke_key, None)
            return
        group_id, member_id, epoch = group.group_id, member.member_id, member.member_epoch
        # the deadline runs from the start of this revocation, not from each heartbeat
        if self.revocations_armed.get(revoke_key) == epoch and self._has_timer(revoke_key):
            return
        self.revocations_armed[revoke_key] = epoch

        def fence(shard: ConsumerProtocol) -> Result[None]:
            return shard._fence(group_id, member_id, epoch, "did not revoke in time")

        self._schedule(revoke_key, member.rebalance_timeout_ms, fence)

    def _arm_session_timeout(self, group_id: str, member: ConsumerMember) -> None:
        member_id = member.member_id

        def expire(shard: ConsumerProtocol) -> Result[None]:
            return shard._fence(group_id, member_id, None, "session timeout")

        timeout = self.config.timeouts(group_id).consumer_session_timeout_ms
        if member.classic is not None:  # a classic member's own session timeout
            timeout = member.classic.session_timeout_ms
        self._schedule(f"csession:{group_id}:{member_id}", timeout, expire)

    def _cancel_consumer_timers(self, group_id: str, member_id: str) -> None:
        # csession: session; revoke: revocation; cjoin/csync: a classic member's rejoin
        for timer in ("csession", "revoke", "cjoin", "csync"):
            self._cancel(f"{timer}:{group_id}:{member_id}")
        self.revocations_armed.pop(f"revoke:{group_id}:{member_id}", None)

    def _fence(self, group_id: str, member_id: str, epoch: int | None, reason: str) -> Result[None]:
        live = self.consumer_groups.get(group_id)
        if live is None or member_id not in live.members:
            return Result()
        member = live.members[member_id]
        if epoch is not None and (
            member.member_epoch != epoch or member.state != UNREVOKED_PARTITIONS
        ):
            return Result()
        group = live.copy()
        records: list[Record] = []
        self._cancel_consumer_timers(group_id, member_id)
        if not self._maybe_downgrade(group, member_id, records):
            self._remove(group, member_id, records)
            self._bump(group, records)
        return Result(records)

    def on_consumer_groups_loaded(self) -> None:
        for group in self.consumer_groups.values():
            for member in group.members.values():
                self._arm_consumer_timers(group, member)

    # -- describe --------------------------------------------------------------------

    def describe_consumer_group(self, group_id: str) -> Result[dict[str, Any] | str]:
        """The group, or (no consumer group of that id) the reason GROUP_ID_NOT_FOUND
        gives."""
        group = self.consumer_groups.get(group_id)
        if group is None:
            other = any(
                group_id in g
                for g in (self.share_groups, self.streams_groups, self.groups, self.offsets)
            )
            return Result(
                [],
                f"Group {group_id} is not a consumer group."
                if other
                else f"Group {group_id} not found.",
            )
        return Result(
            [],
            {
                "group_id": group_id,
                "group_state": group.state,
                "group_epoch": group.group_epoch,
                "assignment_epoch": group.assignment_epoch,
                "assignor_name": _preferred_assignor(group),
                "members": [
                    {
                        "member_id": m.member_id,
                        "instance_id": m.instance_id,
                        "rack_id": m.rack_id,
                        "member_epoch": m.member_epoch,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "subscribed_topic_names": m.subscribed_topic_names,
                        "subscribed_topic_regex": m.subscribed_topic_regex,
                        "assignment": m.assigned,
                        "target_assignment": group.target.get(m.member_id, {}),
                        "state": MEMBER_STATES.get(m.state, "Unknown"),
                        "classic": m.classic is not None,
                    }
                    for m in group.members.values()
                ],
                "topic_names": {t.topic_id: t.name for t in group.topics},
            },
        )

    def _classic_tombstone(self, group_id: str) -> Record:
        return GROUP_METADATA.tombstone(GroupKey(group_id))


def _validate(request: dict[str, Any]) -> None:
    if not request["group_id"]:
        raise _invalid("GroupId can't be empty.")
    if request.get("instance_id") == "":
        raise _invalid("InstanceId can't be empty.")
    if request.get("rack_id") == "":
        raise _invalid("RackId can't be empty.")
    epoch = request["member_epoch"]
    if epoch > 0 or epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
        if not request["member_id"]:
            raise _invalid("MemberId can't be empty.")
        if epoch == STATIC_LEAVE_EPOCH and request.get("instance_id") is None:
            raise _invalid("InstanceId can't be null.")
    elif epoch == 0:
        if request.get("rebalance_timeout_ms", -1) == -1:
            raise _invalid("RebalanceTimeoutMs must be provided in first request.")
        if request.get("owned") is None or request["owned"]:
            raise _invalid("TopicPartitions must be empty when (re-)joining.")
        if not request.get("subscribed_topic_names") and not request.get("subscribed_topic_regex"):
            raise _invalid("SubscribedTopicNames must be set in first request.")
    else:
        raise _invalid("MemberEpoch is invalid.")
    assignor = request.get("server_assignor")
    if assignor is not None and assignor not in ASSIGNORS:
        raise HeartbeatError(
            ErrorCode.unsupported_assignor,
            f"ServerAssignor {assignor} is not supported. Supported assignors: "
            f"{', '.join(ASSIGNORS)}.",
        )
    if bad_regex := invalid_regex_message(request.get("subscribed_topic_regex") or ""):
        raise HeartbeatError(ErrorCode.invalid_regular_expression, bad_regex)


def _with_request(member: ConsumerMember, request: dict[str, Any]) -> ConsumerMember:
    """The member with what the request changes (null fields change nothing)."""
    changes: dict[str, Any] = {
        "classic": None,  # it speaks the consumer protocol now
        "client_id": request.get("client_id", member.client_id),
        "client_host": request.get("client_host", member.client_host),
    }
    for field_name, request_name in (
        ("instance_id", "instance_id"),
        ("rack_id", "rack_id"),
        ("server_assignor", "server_assignor"),
        ("subscribed_topic_regex", "subscribed_topic_regex"),
    ):
        if request.get(request_name) is not None:
            changes[field_name] = request[request_name]
    if request.get("subscribed_topic_names") is not None:
        changes["subscribed_topic_names"] = tuple(request["subscribed_topic_names"])
    if request.get("rebalance_timeout_ms", -1) != -1:
        changes["rebalance_timeout_ms"] = request["rebalance_timeout_ms"]
    return ConsumerMember(**{**vars(member), **changes})


def _progress(member: ConsumerMember) -> tuple[Any, ...]:
    return (
        member.member_epoch,
        member.previous_member_epoch,
        member.state,
        member.assigned,
        member.pending_revocation,
    )


def _subscription_changed(before: ConsumerMember, after: ConsumerMember) -> bool:
    return (
        before.subscribed_topic_names != after.subscribed_topic_names
        or before.subscribed_topic_regex != after.subscribed_topic_regex
        or before.server_assignor != after.server_assignor
    )


def _subset(owned: Mapping[uuid.UUID, frozenset[int]] | None, assigned: TopicPartitions) -> bool:
    if owned is None:
        return False
    return all(parts <= assigned.get(topic, frozenset()) for topic, parts in owned.items())


def _held_by_another(group: ConsumerGroup, member_id: str) -> Callable[[uuid.UUID, int], bool]:
    """Whether another member owns (or still has to revoke) a partition. The set is made
    on the first question: most heartbeats of a settled group ask none."""
    held: dict[uuid.UUID, set[int]] | None = None

    def is_held(topic: uuid.UUID, partition: int) -> bool:
        nonlocal held
        if held is None:
            held = {}
            for other in group.members.values():
                if other.member_id == member_id:
                    continue
                for owned in (other.assigned, other.pending_revocation):
                    for t, parts in owned.items():
                        held.setdefault(t, set()).update(parts)
        return partition in held.get(topic, ())

    return is_held


def _preferred_assignor(group: ConsumerGroup) -> str:
    asked = Counter(m.server_assignor for m in group.members.values() if m.server_assignor)
    return asked.most_common(1)[0][0] if asked else DEFAULT_ASSIGNOR
