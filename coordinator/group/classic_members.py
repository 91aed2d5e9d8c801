"""Classic-protocol members inside consumer groups, and a group moving between the two
protocols as Kafka's `group.consumer.migration.policy` allows (default bidirectional).

- Upgrade: the first ConsumerGroupHeartbeat to a classic group whose members use the
  consumer's embedded protocol turns it into a consumer group (migration.py). Its
  members stay, keep their partitions and carry on with JoinGroup, SyncGroup and
  Heartbeat.
- A classic member of a consumer group: JoinGroup subscribes it (the topics in its
  subscription) and takes it one step towards its target assignment, as a heartbeat
  does, answering at once with its member epoch as the generation; SyncGroup hands it
  what it owns now; Heartbeat answers REBALANCE_IN_PROGRESS when it must rejoin to go
  on: the group has a newer epoch, it has partitions to give up, or partitions it
  waited for are free. It must rejoin, and then sync, within its rebalance timeout.
- Downgrade: when the last member using the consumer protocol leaves (or is fenced)
  and classic members remain, the group becomes a classic group and rebalances.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from typing import Any

from odradek.coordinator.group import migration
from odradek.coordinator.group.classic import ClassicGroup
from odradek.coordinator.group.classic_protocol import ClassicProtocol
from odradek.coordinator.group.consumer import (
    UNRELEASED_PARTITIONS,
    UNREVOKED_PARTITIONS,
    ConsumerGroup,
    ConsumerMember,
)
from odradek.coordinator.group.consumer_protocol import ConsumerProtocol
from odradek.coordinator.group.consumer_records import ClassicMetadata
from odradek.coordinator.group.heartbeat_errors import HeartbeatError
from odradek.coordinator.group.record_types import emit
from odradek.coordinator.group.shard_state import MAX_GROUP_SIZE
from odradek.coordinator.runtime import Record, Result
from odradek.protocol import embedded_consumer as embedded
from odradek.protocol.codec import RecordFormatError
from odradek.protocol.errors import ErrorCode


class ClassicMembers(ClassicProtocol, ConsumerProtocol):
    # -- the classic requests, sent to a consumer group with members -----------------

    def join_group(self, request: dict[str, Any]) -> Result[Any]:
        group = self.consumer_groups.get(request["group_id"])
        if group is None or not group.members:
            return super().join_group(request)
        records, answer = self._join_consumer_group(group, request)
        return Result(records, _answered(answer))

    def sync_group(self, request: dict[str, Any]) -> Result[Any]:
        group = self.consumer_groups.get(request["group_id"])
        if group is None or not group.members:
            return super().sync_group(request)
        return Result([], _answered(self._sync_consumer_group(group, request)))

    def heartbeat(
        self, group_id: str, member_id: str, instance_id: str | None, generation: int
    ) -> Result[int]:
        group = self.consumer_groups.get(group_id)
        if group is None or not group.members:
            return super().heartbeat(group_id, member_id, instance_id, generation)
        member, code = _classic_member(group, member_id, instance_id)
        if member is None:
            return Result([], code)
        if generation != member.member_epoch:
            return Result([], ErrorCode.illegal_generation)
        self._arm_session_timeout(group_id, member)
        must_rejoin = (
            member.member_epoch < group.group_epoch
            or member.state == UNREVOKED_PARTITIONS
            or (member.state == UNRELEASED_PARTITIONS and not group.waiting_on_unreleased(member))
        )
        if not must_rejoin:
            return Result([], ErrorCode.none)
        if not self._has_timer(f"cjoin:{group_id}:{member.member_id}"):
            self._arm_classic_deadline(group_id, member, "cjoin", "did not rejoin in time")
        return Result([], ErrorCode.rebalance_in_progress)

    def leave_group(
        self, group_id: str, leaving: list[tuple[str, str | None]]
    ) -> Result[tuple[int, list[dict[str, Any]]]]:
        live = self.consumer_groups.get(group_id)
        if live is None or not live.members:
            return super().leave_group(group_id, leaving)
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
                self._cancel_consumer_timers(group_id, member.member_id)
                self._remove(group, member.member_id, records)
            answers.append(
                {"member_id": member_id, "group_instance_id": instance_id, "error_code": code}
            )
        if records:
            self._bump(group, records)
        return Result(records, (ErrorCode.none, answers))

    def _join_consumer_group(
        self, live: ConsumerGroup, request: dict[str, Any]
    ) -> tuple[list[Record], dict[str, Any]]:
        member_id: str = request["member_id"]
        instance_id: str | None = request["group_instance_id"]
        protocols = tuple((p["name"], p["metadata"]) for p in request["protocols"])

        def error(code: int, **extra: Any) -> tuple[list[Record], dict[str, Any]]:
            return [], {"error_code": code, "member_id": member_id, **extra}

        session = request["session_timeout_ms"]
        if not self.config.min_session_timeout_ms <= session <= self.config.max_session_timeout_ms:
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
        topics = self.topics_view()
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
        after = self._update_member(group, updated, owned, records)
        self._cancel(f"cjoin:{group.group_id}:{after.member_id}")
        self._arm_consumer_timers(group, after)
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
                return self._replace_static(group, previous, member_id, records)
            if previous.member_id != member_id:
                raise HeartbeatError(ErrorCode.fenced_instance_id, "another member id")
            return previous
        existing = group.members.get(member_id)
        if existing is not None:
            return existing
        if len(group.members) >= self.config.consumer_max_size:
            raise HeartbeatError(ErrorCode.group_max_size_reached, "the group is full")
        return ConsumerMember(member_id)

    def _sync_consumer_group(self, group: ConsumerGroup, request: dict[str, Any]) -> dict[str, Any]:
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
        self._cancel(f"csync:{group.group_id}:{member.member_id}")
        self._arm_session_timeout(group.group_id, member)
        names = {t.topic_id: t.name for t in group.topics}
        names.update({topic_id: name for name, (topic_id, _) in self.topics_view().items()})
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

        def fence(shard: ConsumerProtocol) -> Result[None]:
            return shard._fence(group_id, member_id, None, reason)

        self._schedule(f"{timer}:{group_id}:{member_id}", member.rebalance_timeout_ms, fence)

    # -- moving between the protocols ------------------------------------------------

    def _upgrade(self, classic: ClassicGroup, records: list[Record]) -> ConsumerGroup:
        refused = None
        if not migration.upgrade_allowed(self.config.consumer_migration_policy):
            refused = "the online upgrade is disabled"
        elif classic.protocol_type != "consumer":
            refused = "its members do not use the consumer's embedded protocol"
        elif len(classic.members) > self.config.consumer_max_size:
            refused = "it has more members than a consumer group may have"
        if refused is None:
            try:
                conversion = migration.upgrade_records(classic, self.topics_view())
            except RecordFormatError:
                refused = "a member's subscription is malformed"
        if refused is not None:
            raise HeartbeatError(
                ErrorCode.group_id_not_found,
                f"Group {classic.group_id} is a classic group and cannot become a consumer "
                f"group: {refused}.",
            )
        group = ConsumerGroup(classic.group_id)
        records.append(self._classic_tombstone(classic.group_id))
        for record in conversion:
            emit(group, records, record)
        return group

    def _retire_classic(self, classic: ClassicGroup, group: ConsumerGroup) -> None:
        """The classic group is gone: its parked answers say rejoin, its timers stop,
        and its members' sessions carry on in the consumer group."""
        for member in classic.members.values():
            for future in (member.join_future, member.sync_future):
                if future is not None and not future.done():
                    future.set_result({"error_code": ErrorCode.rebalance_in_progress})
            self._cancel(f"session:{classic.group_id}:{member.member_id}")
        for member_id in classic.pending_members:
            self._cancel(f"session:{classic.group_id}:{member_id}")
        self._cancel(f"join:{classic.group_id}")
        self._cancel(f"sync:{classic.group_id}")
        for consumer_member in group.classic_members():
            self._arm_session_timeout(group.group_id, consumer_member)

    def _maybe_downgrade(self, group: ConsumerGroup, leaving: str, records: list[Record]) -> bool:
        remaining = [m for m in group.members.values() if m.member_id != leaving]
        if (
            not remaining
            or group.members[leaving].classic is not None
            or any(m.classic is None for m in remaining)
            or not migration.downgrade_allowed(self.config.consumer_migration_policy)
            or len(remaining) > MAX_GROUP_SIZE
        ):
            return False
        topic_names = {t.topic_id: t.name for t in group.topics}
        classic = migration.downgraded(group, leaving, topic_names)
        records += self.consumer_group_tombstones(group)
        for member in group.members.values():
            self._cancel_consumer_timers(group.group_id, member.member_id)
        self.groups[group.group_id] = classic
        records.append(self._group_record(classic))
        for classic_member in classic.members.values():
            self._arm_session(classic, classic_member)
        records += self._prepare_rebalance(classic)
        return True


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


def _answered(answer: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
    future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    future.set_result(answer)
    return future
