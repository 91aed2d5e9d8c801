"""Classic-protocol members inside consumer groups: JoinGroup, SyncGroup, Heartbeat and
LeaveGroup to a consumer group with members, on the consumer groups' part (see
consumer_groups.py for how a group moves between the protocols).

A classic member of a consumer group: JoinGroup subscribes it (the topics in its
subscription) and takes it one step towards its target assignment, as a heartbeat
does, answering at once with its member epoch as the generation; SyncGroup hands it
what it owns now; Heartbeat answers REBALANCE_IN_PROGRESS when it must rejoin to go
on: the group has a newer epoch, it has partitions to give up, or partitions it
waited for are free. It must rejoin, and then sync, within its rebalance timeout.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from odradek.coordinator.group import migration
from odradek.coordinator.group.classic_groups import answered
from odradek.coordinator.group.consumer import (
    UNRELEASED_PARTITIONS,
    UNREVOKED_PARTITIONS,
    ConsumerGroup,
    ConsumerMember,
)
from odradek.coordinator.group.consumer_groups import ConsumerGroups
from odradek.coordinator.group.consumer_records import ClassicMetadata
from odradek.coordinator.group.heartbeat_errors import HeartbeatError
from odradek.coordinator.runtime import Record, Result
from odradek.protocol import embedded_consumer as embedded
from odradek.protocol.codec import RecordFormatError
from odradek.protocol.errors import ErrorCode


class ClassicMembers:
    """The classic requests to a consumer group with members (GroupShard sends them
    here, the others to the classic groups' part)."""

    def __init__(self, consumer: ConsumerGroups) -> None:
        self.consumer = consumer
        self.context = consumer.context

    def join_group(self, group: ConsumerGroup, request: dict[str, Any]) -> Result[Any]:
        records, answer = self._join(group, request)
        return Result(records, answered(answer))

    def sync_group(self, group: ConsumerGroup, request: dict[str, Any]) -> Result[Any]:
        return Result([], answered(self._sync(group, request)))

    def heartbeat(
        self, group: ConsumerGroup, member_id: str, instance_id: str | None, generation: int
    ) -> Result[int]:
        group_id = group.group_id
        member, code = _classic_member(group, member_id, instance_id)
        if member is None:
            return Result([], code)
        if generation != member.member_epoch:
            return Result([], ErrorCode.illegal_generation)
        self.consumer.arm_session(group_id, member)
        must_rejoin = (
            member.member_epoch < group.group_epoch
            or member.state == UNREVOKED_PARTITIONS
            or (member.state == UNRELEASED_PARTITIONS and not group.waiting_on_unreleased(member))
        )
        if not must_rejoin:
            return Result([], ErrorCode.none)
        if not self.context.has_timer(f"cjoin:{group_id}:{member.member_id}"):
            self._arm_classic_deadline(group_id, member, "cjoin", "did not rejoin in time")
        return Result([], ErrorCode.rebalance_in_progress)

    def leave_group(
        self, live: ConsumerGroup, leaving: list[tuple[str, str | None]]
    ) -> Result[tuple[int, list[dict[str, Any]]]]:
        group_id = live.group_id
        group = live.copy()
        records: list[Record] = []
        answers = []
        for member_id, instance_id in leaving:
            if instance_id is not None and not member_id:
                # an admin removing a static member by its instance id
                found = group.static_member(instance_id)
                member_id = found.member_id if found is not None else member_id
            member, code = _classic_member(group, member_id, instance_id)
            if member is not None:
                self.consumer.cancel_timers(group_id, member.member_id)
                self.consumer.remove_member(group, member.member_id, records)
            answers.append(
                {"member_id": member_id, "group_instance_id": instance_id, "error_code": code}
            )
        if records:
            self.consumer.bump(group, records)
        return Result(records, (ErrorCode.none, answers))

    def _join(
        self, live: ConsumerGroup, request: dict[str, Any]
    ) -> tuple[list[Record], dict[str, Any]]:
        member_id: str = request["member_id"]
        instance_id: str | None = request["group_instance_id"]
        protocols = tuple((p["name"], p["metadata"]) for p in request["protocols"])

        def error(code: int, **extra: Any) -> tuple[list[Record], dict[str, Any]]:
            return [], {"error_code": code, "member_id": member_id, **extra}

        session = request["session_timeout_ms"]
        config = self.context.config
        if not config.min_session_timeout_ms <= session <= config.max_session_timeout_ms:
            return error(ErrorCode.invalid_session_timeout)
        if not live.supports_classic(request["protocol_type"], [n for n, _ in protocols]):
            return error(ErrorCode.inconsistent_group_protocol)
        try:
            subscription = embedded.decode_subscription(protocols[0][1])
        except RecordFormatError:
            return error(ErrorCode.inconsistent_group_protocol)
        if not member_id and instance_id is None and request["require_known_member_id"]:
            return error(ErrorCode.member_id_required, member_id=str(uuid.uuid4()))
        group = live.copy()
        records: list[Record] = []
        try:
            member = self._classic_joiner(group, member_id, instance_id, records)
        except HeartbeatError as exc:
            return error(exc.code)
        topics = self.context.topics_view()
        updated = dataclasses.replace(
            member,
            instance_id=instance_id,
            rack_id=subscription.rack_id or member.rack_id,
            client_id=request["client_id"],
            client_host=request["client_host"],
            subscribed_topic_names=subscription.topics,
            subscribed_topic_regex=None,
            rebalance_timeout_ms=request["rebalance_timeout_ms"],
            server_assignor=None,
            classic=ClassicMetadata(session, protocols),
        )
        owned = migration.by_topic_id(subscription.owned, topics)
        after = self.consumer.update_member(group, updated, owned, records)
        self.context.cancel(f"cjoin:{group.group_id}:{after.member_id}")
        self.consumer.arm_timers(group, after)
        self._arm_classic_deadline(group.group_id, after, "csync", "did not sync in time")
        answer = {
            "error_code": ErrorCode.none,
            "generation_id": after.member_epoch,
            "protocol_type": "consumer",
            "protocol_name": protocols[0][0],
            "leader": "",
            "skip_assignment": False,
            "member_id": after.member_id,
            "members": [],
        }
        return records, answer

    def _classic_joiner(
        self,
        group: ConsumerGroup,
        member_id: str,
        instance_id: str | None,
        records: list[Record],
    ) -> ConsumerMember:
        """The member a JoinGroup is about, created if it is new."""
        known = member_id
        member_id = member_id or str(uuid.uuid4())
        previous = group.static_member(instance_id) if instance_id is not None else None
        if previous is not None:
            if not known:  # the instance restarted: it takes the old member's place
                return self.consumer.replace_static(group, previous, member_id, records)
            if previous.member_id != member_id:
                raise HeartbeatError(ErrorCode.fenced_instance_id, "another member id")
            return previous
        existing = group.members.get(member_id)
        if existing is not None:
            return existing
        if len(group.members) >= self.context.config.consumer_max_size:
            raise HeartbeatError(ErrorCode.group_max_size_reached, "the group is full")
        return ConsumerMember(member_id)

    def _sync(self, group: ConsumerGroup, request: dict[str, Any]) -> dict[str, Any]:
        member, code = _classic_member(group, request["member_id"], request["group_instance_id"])
        if member is None or member.classic is None:
            return {"error_code": code}
        protocol_name = member.classic.protocols[0][0]
        if request["generation_id"] != member.member_epoch:
            return {"error_code": ErrorCode.illegal_generation}
        if request.get("protocol_type") not in (None, "consumer") or request.get(
            "protocol_name"
        ) not in (None, protocol_name):
            return {"error_code": ErrorCode.inconsistent_group_protocol}
        if group.group_epoch > member.member_epoch and member.state != UNREVOKED_PARTITIONS:
            return {"error_code": ErrorCode.rebalance_in_progress}
        self.context.cancel(f"csync:{group.group_id}:{member.member_id}")
        self.consumer.arm_session(group.group_id, member)
        names = {t.topic_id: t.name for t in group.topics}
        names.update({topic_id: name for name, (topic_id, _) in self.context.topics_view().items()})
        version = embedded.subscription_version(member.classic.protocols[0][1])
        owned = {names[t]: parts for t, parts in member.assigned.items() if t in names}
        return {
            "error_code": ErrorCode.none,
            "protocol_type": "consumer",
            "protocol_name": protocol_name,
            "assignment": embedded.encode_assignment(version, owned),
        }

    def _arm_classic_deadline(
        self, group_id: str, member: ConsumerMember, timer: str, reason: str
    ) -> None:
        member_id = member.member_id

        def deadline() -> Result[None]:
            return self.consumer.fence(group_id, member_id, None, reason)

        self.context.schedule(
            f"{timer}:{group_id}:{member_id}", member.rebalance_timeout_ms, deadline
        )


def _classic_member(
    group: ConsumerGroup, member_id: str, instance_id: str | None
) -> tuple[ConsumerMember | None, int]:
    """The classic member a SyncGroup, Heartbeat or LeaveGroup names, or why not."""
    if instance_id is not None:
        member = group.static_member(instance_id)
        if member is not None and member.member_id != member_id:
            return None, ErrorCode.fenced_instance_id
    else:
        member = group.members.get(member_id)
    if member is None or member.classic is None:
        return None, ErrorCode.unknown_member_id
    return member, ErrorCode.none
