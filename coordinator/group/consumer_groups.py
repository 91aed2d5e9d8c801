"""The shard's consumer groups (KIP-848: ConsumerGroupHeartbeat), and their moves to
and from the classic protocol.

A heartbeat works on a copy of its group: every change becomes a record (see
consumer.py) that is applied to the copy at once, so later steps of the same
heartbeat see it, and to the shard's groups by `replay` once the records are written.
Loading after a restart replays the same records, so a group comes back with its
epochs, target assignment and each member's reconciliation state.

A group moves between the two protocols as Kafka's `group.consumer.migration.policy`
allows (default bidirectional). Upgrade: the first ConsumerGroupHeartbeat to a classic
group whose members use the consumer's embedded protocol turns it into a consumer
group (migration.py); its members stay, keep their partitions and carry on with
JoinGroup, SyncGroup and Heartbeat (classic_members.py). Downgrade: when the last
member using the consumer protocol leaves (or is fenced) and classic members remain,
the group becomes a classic group and rebalances.
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from odradek.coordinator.group import consumer, migration
from odradek.coordinator.group import consumer_records as cr
from odradek.coordinator.group.assignors import ASSIGNORS, AssignmentSpec
from odradek.coordinator.group.classic import ClassicGroup, group_record
from odradek.coordinator.group.classic_groups import ClassicGroups
from odradek.coordinator.group.consumer import (
    GROUP_EPOCH,
    MEMBER_STATES,
    PARTITION_METADATA,
    STABLE,
    TARGET_EPOCH,
    UNREVOKED_PARTITIONS,
    ConsumerGroup,
    ConsumerMember,
    current_record,
    member_metadata,
    member_record,
    reconcile,
    target_record,
)
from odradek.coordinator.group.consumer_heartbeat import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    held_by_another,
    preferred_assignor,
    progress,
    subscription_changed,
    subset,
    validate,
    with_request,
)
from odradek.coordinator.group.context import MAX_GROUP_SIZE, ShardContext
from odradek.coordinator.group.heartbeat_errors import (
    HeartbeatError,
    fenced,
    not_of_kind,
    unknown_member,
)
from odradek.coordinator.group.modern_groups import ModernGroups
from odradek.coordinator.group.record_codecs import GroupKey
from odradek.coordinator.group.record_types import emit
from odradek.coordinator.runtime import Record, Result
from odradek.protocol.codec import RecordFormatError
from odradek.protocol.errors import ErrorCode


def _not_consumer(group_id: str) -> HeartbeatError:
    return HeartbeatError(ErrorCode.group_id_not_found, not_of_kind(group_id, "consumer"))


class ConsumerGroups(ModernGroups[ConsumerGroup]):
    kind = "consumer"
    types = consumer.RECORDS
    session_timer = "csession"

    def __init__(self, context: ShardContext, classic: ClassicGroups) -> None:
        super().__init__(context)
        self.classic = classic  # the groups this part's groups may come from and become
        # revocation timer key -> the member epoch whose revocation it times
        self.revocations_armed: dict[str, int] = {}
        # group -> ((group epoch, member count), the topic names its members subscribe
        # to by name), so a heartbeat that changes no subscription does not walk every
        # member
        self.subscribed_names: dict[str, tuple[tuple[int, int], frozenset[str]]] = {}

    def new_group(self, group_id: str) -> ConsumerGroup:
        return ConsumerGroup(group_id)

    def _forget(self, group_id: str) -> None:
        self.subscribed_names.pop(group_id, None)

    # -- ConsumerGroupHeartbeat ----------------------------------------------------

    def _heartbeat(self, request: dict[str, Any]) -> Result[dict[str, Any]]:
        validate(request)
        group_id, epoch = request["group_id"], request["member_epoch"]
        records: list[Record] = []
        if self.context.holds(group_id, "share", "streams"):
            raise _not_consumer(group_id)
        live = self.groups.get(group_id)
        upgraded: ClassicGroup | None = None
        if live is None:
            classic = self.classic.groups.get(group_id)
            if classic is not None and not classic.is_empty():
                if epoch != 0:
                    raise _not_consumer(group_id)
                live = self._upgrade(classic, records)
                upgraded = classic
            elif epoch != 0:
                raise HeartbeatError(
                    ErrorCode.unknown_member_id,
                    f"Group {group_id} has no member {request['member_id']}.",
                )
            elif classic is not None:  # an empty classic group becomes a consumer group
                records += self.classic.tombstones(classic)
        group = live.copy() if live is not None else ConsumerGroup(group_id)
        if epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self._leave(group, request, records)
        member = self._member_for(group, request, records)
        previously_assigned = member.assigned  # records below replace the group's members
        after = self.update_member(
            group, with_request(member, request), request.get("owned"), records
        )
        if upgraded is not None:
            self._retire(upgraded, group)
        self.arm_timers(group, after)
        full = epoch == 0 or (
            request.get("rebalance_timeout_ms", -1) != -1
            and request.get("subscribed_topic_names") is not None
            and request.get("owned") is not None
        )
        timeouts = self.context.config.timeouts(group_id)
        response: dict[str, Any] = {
            "error_code": ErrorCode.none,
            "member_id": after.member_id,
            "member_epoch": after.member_epoch,
            "heartbeat_interval_ms": timeouts.consumer_heartbeat_interval_ms,
            "assignment": None,
        }
        if full or after.assigned != previously_assigned:
            response["assignment"] = after.assigned
        return Result(records, response)

    def update_member(
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
        if progress(group.members[updated.member_id]) != progress(updated):
            emit(group, records, current_record(group_id, updated))
        bump = stored is None or subscription_changed(stored, updated)
        topics = self._subscribed_topics(group, changed=bump)
        if topics != group.topics:
            emit(group, records, PARTITION_METADATA.record(GroupKey(group_id), topics))
            bump = True
        if bump or group.group_epoch == 0:
            self.bump(group, records)
        if group.group_epoch > group.assignment_epoch:
            self._assign(group, records)
        before = group.members[updated.member_id]
        after = reconcile(
            before,
            group.assignment_epoch,
            group.target.get(before.member_id, {}),
            owned,
            held_by_another(group, before.member_id),
        )
        if after != before:
            emit(group, records, current_record(group_id, after))
        return after

    def _member_for(
        self, group: ConsumerGroup, request: dict[str, Any], records: list[Record]
    ) -> ConsumerMember:
        member_id, epoch = request["member_id"], request["member_epoch"]
        instance_id = request.get("instance_id")
        if epoch == 0:
            if len(group.members) >= self.context.config.consumer_max_size and (
                member_id not in group.members
            ):
                raise HeartbeatError(
                    ErrorCode.group_max_size_reached,
                    f"The consumer group has reached its maximum of "
                    f"{self.context.config.consumer_max_size} members.",
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
                    return self.replace_static(group, previous, member_id, records)
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
            raise unknown_member(group.group_id, member_id)
        if instance_id is not None and member.instance_id not in (None, instance_id):
            raise HeartbeatError(
                ErrorCode.fenced_instance_id, f"Member {member_id} has another instance id."
            )
        owned = request.get("owned")
        if epoch > member.member_epoch or (
            epoch < member.member_epoch
            and (epoch != member.previous_member_epoch or not subset(owned, member.assigned))
        ):
            raise fenced("consumer", epoch, member.member_epoch)
        return member

    def replace_static(
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
        self.remove_member(group, previous.member_id, records)
        emit(group, records, target_record(group.group_id, member_id, target))
        return replacement

    def _leave(
        self, group: ConsumerGroup, request: dict[str, Any], records: list[Record]
    ) -> Result[dict[str, Any]]:
        member_id, epoch = request["member_id"], request["member_epoch"]
        member = group.members.get(member_id)
        if member is None:
            raise unknown_member(group.group_id, member_id)
        self.cancel_timers(group.group_id, member_id)
        if epoch == STATIC_LEAVE_EPOCH and member.instance_id is not None:
            # keeps its place and assignment until it returns or its session ends
            parked = ConsumerMember(**{**vars(member), "member_epoch": STATIC_LEAVE_EPOCH})
            emit(group, records, current_record(group.group_id, parked))
            self.arm_session(group.group_id, parked)
        elif not self._maybe_downgrade(group, member_id, records):
            self.remove_member(group, member_id, records)
            self.bump(group, records)
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
                by_name[name].topic_id for name in self.member_topics(m) if name in by_name
            )
            for m in group.members.values()
        }
        spec = AssignmentSpec(
            subscriptions,
            {t.topic_id: t.partitions for t in group.topics},
            group.target,
        )
        assignor = ASSIGNORS[preferred_assignor(group)]
        new_target = {
            member: {topic: frozenset(parts) for topic, parts in owned.items() if parts}
            for member, owned in assignor(spec).items()
        }
        self._write_target(group, new_target, records)
        emit(group, records, TARGET_EPOCH.record(GroupKey(group.group_id), group.group_epoch))

    def _subscribed_topics(
        self, group: ConsumerGroup, changed: bool = True
    ) -> list[cr.TopicMetadata]:
        """The existing topics the members subscribe to. `changed`: a subscription
        changed in this heartbeat (else the names found at this group epoch are kept,
        unless a member subscribes by pattern: its matches follow the topics there are)."""
        existing = self.context.topics_view()
        key = (group.group_epoch, len(group.members))
        cached = self.subscribed_names.get(group.group_id)
        if not changed and cached is not None and cached[0] == key:
            names: Iterable[str] = cached[1]
        else:
            by_pattern = any(m.subscribed_topic_regex for m in group.members.values())
            found: set[str] = set()
            for member in group.members.values():
                found.update(self.member_topics(member, existing))
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

    def member_topics(
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
            topics = existing if existing is not None else self.context.topics_view()
            names += [n for n in topics if pattern.fullmatch(n)]
        return names

    def bump(self, group: ConsumerGroup, records: list[Record]) -> None:
        epoch = group.group_epoch + 1
        emit(group, records, GROUP_EPOCH.record(GroupKey(group.group_id), epoch))

    # -- timers --------------------------------------------------------------------

    def arm_timers(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        self.arm_session(group.group_id, member)
        revoke_key = f"revoke:{group.group_id}:{member.member_id}"
        if member.state != UNREVOKED_PARTITIONS:
            self.context.cancel(revoke_key)
            self.revocations_armed.pop(revoke_key, None)
            return
        group_id, member_id, epoch = group.group_id, member.member_id, member.member_epoch
        # the deadline runs from the start of this revocation, not from each heartbeat
        if self.revocations_armed.get(revoke_key) == epoch and self.context.has_timer(revoke_key):
            return
        self.revocations_armed[revoke_key] = epoch

        def revocation_expired() -> Result[None]:
            return self.fence(group_id, member_id, epoch, "did not revoke in time")

        self.context.schedule(revoke_key, member.rebalance_timeout_ms, revocation_expired)

    def arm_session(self, group_id: str, member: ConsumerMember) -> None:
        timeout = self.context.config.timeouts(group_id).consumer_session_timeout_ms
        if member.classic is not None:  # a classic member's own session timeout
            timeout = member.classic.session_timeout_ms
        self._arm_session(group_id, member.member_id, timeout)

    def _session_expired(self, group_id: str, member_id: str) -> Result[None]:
        return self.fence(group_id, member_id, None, "session timeout")

    def cancel_timers(self, group_id: str, member_id: str) -> None:
        # csession: session; revoke: revocation; cjoin/csync: a classic member's rejoin
        for timer in ("csession", "revoke", "cjoin", "csync"):
            self.context.cancel(f"{timer}:{group_id}:{member_id}")
        self.revocations_armed.pop(f"revoke:{group_id}:{member_id}", None)

    def fence(self, group_id: str, member_id: str, epoch: int | None, reason: str) -> Result[None]:
        live = self.groups.get(group_id)
        if live is None or member_id not in live.members:
            return Result()
        member = live.members[member_id]
        if epoch is not None and (
            member.member_epoch != epoch or member.state != UNREVOKED_PARTITIONS
        ):
            return Result()
        group = live.copy()
        records: list[Record] = []
        self.cancel_timers(group_id, member_id)
        if not self._maybe_downgrade(group, member_id, records):
            self.remove_member(group, member_id, records)
            self.bump(group, records)
        return Result(records)

    # -- moving between the protocols ------------------------------------------------

    def _upgrade(self, classic: ClassicGroup, records: list[Record]) -> ConsumerGroup:
        refused = None
        config = self.context.config
        if not migration.upgrade_allowed(config.consumer_migration_policy):
            refused = "the online upgrade is disabled"
        elif classic.protocol_type != "consumer":
            refused = "its members do not use the consumer's embedded protocol"
        elif len(classic.members) > config.consumer_max_size:
            refused = "it has more members than a consumer group may have"
        if refused is None:
            try:
                conversion = migration.upgrade_records(classic, self.context.topics_view())
            except RecordFormatError:
                refused = "a member's subscription is malformed"
        if refused is not None:
            raise HeartbeatError(
                ErrorCode.group_id_not_found,
                f"Group {classic.group_id} is a classic group and cannot become a consumer "
                f"group: {refused}.",
            )
        group = ConsumerGroup(classic.group_id)
        records += self.classic.tombstones(classic)
        for record in conversion:
            emit(group, records, record)
        return group

    def _retire(self, classic: ClassicGroup, group: ConsumerGroup) -> None:
        """The classic group is gone; its members' sessions carry on in this group."""
        self.classic.retire(classic)
        for member in group.classic_members():
            self.arm_session(group.group_id, member)

    def _maybe_downgrade(self, group: ConsumerGroup, leaving: str, records: list[Record]) -> bool:
        remaining = [m for m in group.members.values() if m.member_id != leaving]
        if (
            not remaining
            or group.members[leaving].classic is not None
            or any(m.classic is None for m in remaining)
            or not migration.downgrade_allowed(self.context.config.consumer_migration_policy)
            or len(remaining) > MAX_GROUP_SIZE
        ):
            return False
        topic_names = {t.topic_id: t.name for t in group.topics}
        classic = migration.downgraded(group, leaving, topic_names)
        records += self.tombstones(group)
        for member in group.members.values():
            self.cancel_timers(group.group_id, member.member_id)
        self.classic.groups[group.group_id] = classic
        records.append(group_record(classic))
        for classic_member in classic.members.values():
            self.classic.arm_session(classic, classic_member)
        records += self.classic.prepare_rebalance(classic)
        return True

    # -- what the other group APIs ask -----------------------------------------------

    def described(self, group: ConsumerGroup) -> dict[str, Any]:
        group_id = group.group_id
        return {
            "group_id": group_id,
            "group_state": group.state,
            "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch,
            "assignor_name": preferred_assignor(group),
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
        }

    def commit_error(self, group: ConsumerGroup, request: dict[str, Any]) -> ErrorCode:
        """Anyone may commit while the group has no members (an admin, a manual
        assignment), else a member at its current epoch."""
        epoch, producer = request["generation"], request.get("producer")
        if epoch < 0 and not group.members:
            return ErrorCode.none
        # a transactional commit hears of a wrong epoch as the classic protocol says
        return _member_error(group, request["member_id"], epoch, producer is not None)

    def fetch_error(self, group: ConsumerGroup, member_id: str | None, epoch: int) -> ErrorCode:
        """Without a member (an admin, an older client) anyone may fetch."""
        if member_id is None and epoch < 0:
            return ErrorCode.none
        return _member_error(group, member_id or "", epoch, False)

    def subscribed_topics(self, group: ConsumerGroup) -> set[str]:
        subscribed: set[str] = set()
        for member in group.members.values():
            subscribed.update(self.member_topics(member))
        return subscribed


def _member_error(group: ConsumerGroup, member_id: str, epoch: int, classic: bool) -> ErrorCode:
    """A member of the group at its current epoch, or what it hears: a classic member
    (or a `classic` request) that its generation is wrong, others that their epoch is
    stale."""
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.unknown_member_id
    if epoch != member.member_epoch:
        classic = classic or member.classic is not None
        return ErrorCode.illegal_generation if classic else ErrorCode.stale_member_epoch
    return ErrorCode.none
