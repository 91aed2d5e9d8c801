"""The shard's classic groups and the classic group protocol (JoinGroup, SyncGroup,
Heartbeat, LeaveGroup): members join, the leader assigns, everyone syncs; a rebalance
starts when membership or subscriptions change, and the session timer of each member
removes it when it stops heartbeating. (Classic members of a consumer group are the
consumer groups' part's: classic_members.py.)"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from odradek.coordinator.group.classic import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroup,
    Member,
    described,
    group_record,
    tombstone,
)
from odradek.coordinator.group.context import MAX_GROUP_SIZE, ShardContext
from odradek.coordinator.runtime import Record, Result
from odradek.protocol.errors import ErrorCode


def answered(answer: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
    """A JoinGroup or SyncGroup answer given at once."""
    future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    future.set_result(answer)
    return future


class ClassicGroups:
    kind = "classic"

    def __init__(self, context: ShardContext) -> None:
        self.context = context
        self.groups: dict[str, ClassicGroup] = {}

    def tombstones(self, group: ClassicGroup) -> list[Record]:
        return [tombstone(group.group_id)]

    def described(self, group: ClassicGroup) -> dict[str, Any]:
        return described(group)

    def on_loaded(self) -> None:
        for group in self.groups.values():
            for member in group.members.values():
                self.arm_session(group, member)

    def commit_error(self, request: dict[str, Any]) -> ErrorCode:
        """Why these offsets may not be committed to a classic group, or to a group of
        no type yet (none: they may). `request` as GroupShard.commit_offsets takes it."""
        group = self.groups.get(request["group_id"])
        generation, member_id = request["generation"], request["member_id"]
        producer = request.get("producer")  # (id, epoch) for TxnOffsetCommit
        if group is None:
            return ErrorCode.illegal_generation if generation >= 0 else ErrorCode.none
        if generation < 0 and not member_id and (group.is_empty() or producer is not None):
            # a simple commit: an admin, an assign()-only consumer, an old EOS client
            return ErrorCode.none
        if group.state == DEAD:
            return ErrorCode.coordinator_not_available
        code = self._validate_member(group, member_id, request["group_instance_id"])
        if code != ErrorCode.none:
            return code
        if generation != group.generation:
            return ErrorCode.illegal_generation
        if group.state == COMPLETING_REBALANCE:
            return ErrorCode.rebalance_in_progress
        if producer is None:
            # an OffsetCommit keeps the member's session alive, as a heartbeat does; a
            # transactional one does not (as on Kafka 4.4)
            self.arm_session(group, group.members[member_id])
        return ErrorCode.none

    def retire(self, group: ClassicGroup) -> None:
        """The group became a consumer group: its parked answers say rejoin and its
        timers stop (its members' sessions go on in the consumer group)."""
        for member in group.members.values():
            for future in (member.join_future, member.sync_future):
                if future is not None and not future.done():
                    future.set_result({"error_code": ErrorCode.rebalance_in_progress})
            self.context.cancel(f"session:{group.group_id}:{member.member_id}")
        for member_id in group.pending_members:
            self.context.cancel(f"session:{group.group_id}:{member_id}")
        self.context.cancel(f"join:{group.group_id}")
        self.context.cancel(f"sync:{group.group_id}")

    def arm_session(self, group: ClassicGroup, member: Member) -> None:
        key = f"session:{group.group_id}:{member.member_id}"
        group_id, member_id = group.group_id, member.member_id

        def expire() -> Result[None]:
            return self._expire_member(group_id, member_id)

        self.context.schedule(key, member.session_timeout_ms, expire)

    def _expire_member(self, group_id: str, member_id: str) -> Result[None]:
        group = self.groups.get(group_id)
        if group is None:
            return Result()
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            return Result(self._maybe_complete_join(group))
        if member_id not in group.members:
            return Result()
        return Result(self._remove_member(group, member_id, "session timeout"))

    def _remove_member(self, group: ClassicGroup, member_id: str, reason: str) -> list[Record]:
        member = group.remove(member_id)
        self.context.cancel(f"session:{group.group_id}:{member_id}")
        if member is not None:
            for future in (member.join_future, member.sync_future):
                if future is not None and not future.done():
                    future.set_result({"error_code": ErrorCode.unknown_member_id})
        if group.state in (STABLE, COMPLETING_REBALANCE):
            return self.prepare_rebalance(group)
        if group.state == PREPARING_REBALANCE:
            return self._maybe_complete_join(group)
        return []

    def prepare_rebalance(self, group: ClassicGroup) -> list[Record]:
        """Start a rebalance; members learn of it through their heartbeats."""
        for member in group.members.values():
            if member.sync_future is not None and not member.sync_future.done():
                member.sync_future.set_result({"error_code": ErrorCode.rebalance_in_progress})
            member.sync_future = None
        self.context.cancel(f"sync:{group.group_id}")
        was_empty = group.state == EMPTY
        group.state = PREPARING_REBALANCE
        timeout = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        if was_empty:
            delay = self.context.config.initial_rebalance_delay_ms
            group.initial_delay_until = time.monotonic() + delay / 1000
            if delay > 0:
                timeout = max(min(delay, timeout or delay), 0)
        self._arm_join_timeout(group, timeout)
        return self._maybe_complete_join(group)

    def _arm_join_timeout(self, group: ClassicGroup, timeout_ms: int) -> None:
        """The join phase ends when this timer fires, if it has not ended before."""
        group_id, generation = group.group_id, group.generation

        def join_timeout() -> Result[None]:
            g = self.groups.get(group_id)
            if g is None or g.state != PREPARING_REBALANCE or g.generation != generation:
                return Result()
            return Result(self._complete_join(g))

        self.context.schedule(f"join:{group_id}", timeout_ms, join_timeout)

    def _join_or_rebalance(self, group: ClassicGroup) -> list[Record]:
        """A member now waits to join: end the join phase if it can, or start one."""
        if group.state == PREPARING_REBALANCE:
            return self._maybe_complete_join(group)
        return self.prepare_rebalance(group)

    def _maybe_complete_join(self, group: ClassicGroup) -> list[Record]:
        if group.state != PREPARING_REBALANCE or not group.all_joined():
            return []
        if time.monotonic() < group.initial_delay_until:
            return []  # the timer completes it when the initial delay is over
        return self._complete_join(group)

    def _complete_join(self, group: ClassicGroup) -> list[Record]:
        """End the join phase: drop dynamic members that did not rejoin, start a generation.

        Static members that did not rejoin stay (KIP-345): they keep their place and get
        an assignment, and only their session timeout removes them."""
        self.context.cancel(f"join:{group.group_id}")
        group.initial_delay_until = 0.0
        for member_id in [
            m.member_id
            for m in group.members.values()
            if m.join_future is None and m.group_instance_id is None
        ]:
            group.remove(member_id)
            self.context.cancel(f"session:{group.group_id}:{member_id}")
        group.pending_members.clear()
        joined = [m for m in group.members.values() if m.join_future is not None]
        if group.members and not joined:
            # Only absent static members: wait another rebalance timeout (their sessions
            # expire meanwhile) instead of starting a generation nobody would sync.
            timeout = max(m.rebalance_timeout_ms for m in group.members.values())
            self._arm_join_timeout(group, timeout)
            return []
        group.generation += 1
        if not group.members:
            group.state = EMPTY
            group.protocol = None
            group.leader = None
            return [group_record(group)]
        group.state = COMPLETING_REBALANCE
        group.protocol = group.select_protocol()
        leader = group.members.get(group.leader or "")
        if leader is None or leader.join_future is None:
            # the leader must be a member that rejoined: it computes the assignment
            group.leader = joined[0].member_id
        for member in group.members.values():
            future, member.join_future = member.join_future, None
            if future is not None:
                if not future.done():
                    future.set_result(self._join_answer(group, member))
                self.arm_session(group, member)
        group_id, generation = group.group_id, group.generation
        timeout = max(m.rebalance_timeout_ms for m in group.members.values())

        def sync_timeout() -> Result[None]:
            g = self.groups.get(group_id)
            if g is None or g.state != COMPLETING_REBALANCE or g.generation != generation:
                return Result()
            stragglers = [m.member_id for m in g.members.values() if m.sync_future is None]
            records: list[Record] = []
            for member_id in stragglers:
                records += self._remove_member(g, member_id, "no SyncGroup in time")
            return Result(records)

        self.context.schedule(f"sync:{group.group_id}", timeout, sync_timeout)
        return []

    def _join_answer(self, group: ClassicGroup, member: Member) -> dict[str, Any]:
        is_leader = member.member_id == group.leader
        members = []
        if is_leader:
            members = [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "metadata": m.metadata_for(group.protocol),
                }
                for m in group.members.values()
            ]
        return {
            "error_code": ErrorCode.none,
            "generation_id": group.generation,
            "protocol_type": group.protocol_type,
            "protocol_name": group.protocol,
            "leader": group.leader or "",
            "skip_assignment": False,
            "member_id": member.member_id,
            "members": members,
        }

    # -- JoinGroup ---------------------------------------------------------------

    def join_group(self, request: dict[str, Any]) -> Result[Any]:
        """Returns a future: the answer comes when the join phase completes."""
        group_id: str = request["group_id"]
        member_id: str = request["member_id"]
        instance_id: str | None = request["group_instance_id"]
        session = request["session_timeout_ms"]
        config = self.context.config
        if not group_id:
            return _refused(request, ErrorCode.invalid_group_id)
        if not config.min_session_timeout_ms <= session <= config.max_session_timeout_ms:
            return _refused(request, ErrorCode.invalid_session_timeout)
        if self.context.holds(group_id, "share", "streams"):
            return _refused(request, ErrorCode.inconsistent_group_protocol)
        # an empty consumer-protocol group becomes a classic one (its offsets stay); one
        # with members takes classic members itself (classic_members.py)
        replaced = self.context.tombstones(group_id, "consumer")
        result = self._join(group_id, member_id, instance_id, request)
        result.records[:0] = replaced
        return result

    def _join(
        self, group_id: str, member_id: str, instance_id: str | None, request: dict[str, Any]
    ) -> Result[Any]:
        group = self.groups.get(group_id)
        if group is None:
            if member_id:
                return _refused(request, ErrorCode.unknown_member_id)
            group = ClassicGroup(group_id)
            self.groups[group_id] = group
        if group.state == DEAD:
            return _refused(request, ErrorCode.coordinator_not_available)
        protocols = _protocols(request)
        if not group.supports(request["protocol_type"], [n for n, _ in protocols]):
            return _refused(request, ErrorCode.inconsistent_group_protocol)
        if not member_id:
            return self._join_unknown(group, request)
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            return self._add_and_rebalance(group, member_id, request)
        member = group.members.get(member_id)
        if instance_id is not None:
            known = group.static_members.get(instance_id)
            if known is not None and known != member_id:
                return _refused(request, ErrorCode.fenced_instance_id)
        if member is None:
            return _refused(request, ErrorCode.unknown_member_id)
        return self._join_known(group, member, request)

    def _join_unknown(self, group: ClassicGroup, request: dict[str, Any]) -> Result[Any]:
        instance_id = request["group_instance_id"]
        new_id = f"{request['client_id']}-{uuid.uuid4()}"
        if instance_id is not None and instance_id in group.static_members:
            return self._replace_static_member(group, new_id, request)
        if len(group.members) + len(group.pending_members) >= MAX_GROUP_SIZE:
            return _refused(request, ErrorCode.group_max_size_reached)
        if instance_id is None and request["require_known_member_id"]:
            group.pending_members.add(new_id)
            group_id = group.group_id

            def pending_expired() -> Result[None]:
                return self._expire_member(group_id, new_id)

            timeout = request["session_timeout_ms"]
            self.context.schedule(f"session:{group_id}:{new_id}", timeout, pending_expired)
            answer = {"error_code": ErrorCode.member_id_required, "member_id": new_id}
            return Result([], answered({**answer, "generation_id": -1}))
        return self._add_and_rebalance(group, new_id, request)

    def _replace_static_member(
        self, group: ClassicGroup, new_id: str, request: dict[str, Any]
    ) -> Result[Any]:
        """A static member restarting: it takes the old member's place and assignment."""
        instance_id = request["group_instance_id"]
        old_id = group.static_members[instance_id]
        old = group.members[old_id]
        group.remove(old_id)
        self.context.cancel(f"session:{group.group_id}:{old_id}")
        for parked in (old.join_future, old.sync_future):
            if parked is not None and not parked.done():
                parked.set_result({"error_code": ErrorCode.fenced_instance_id})
        member = _new_member(new_id, request)
        member.assignment = old.assignment
        was_leader = group.leader is None or group.leader == old_id
        group.add(member)
        if was_leader:
            group.leader = new_id
        unchanged = set(member.protocol_names) == set(old.protocol_names)
        if group.state in (STABLE, COMPLETING_REBALANCE) and unchanged:
            # No rebalance: persist the new member id, answer with the current generation.
            self.arm_session(group, member)
            current = self._join_answer(group, member)
            # KIP-814: a static leader rejoining a stable group keeps the assignment as is
            current["skip_assignment"] = group.state == STABLE and new_id == group.leader
            records = [group_record(group)] if group.state == STABLE else []
            return Result(records, answered(current))
        return self._wait_for_join(group, member)

    def _add_and_rebalance(
        self, group: ClassicGroup, member_id: str, request: dict[str, Any]
    ) -> Result[Any]:
        member = _new_member(member_id, request)
        group.add(member)
        self.arm_session(group, member)
        return self._wait_for_join(group, member)

    def _join_known(
        self, group: ClassicGroup, member: Member, request: dict[str, Any]
    ) -> Result[Any]:
        protocols = _protocols(request)
        changed = protocols != member.protocols
        member.protocols = protocols
        member.rebalance_timeout_ms = request["rebalance_timeout_ms"]
        member.session_timeout_ms = request["session_timeout_ms"]
        self.arm_session(group, member)
        if group.state == COMPLETING_REBALANCE and not changed:
            return Result([], answered(self._join_answer(group, member)))
        if group.state == STABLE and not changed and member.member_id != group.leader:
            return Result([], answered(self._join_answer(group, member)))
        if member.join_future is not None and not member.join_future.done():
            member.join_future.set_result({"error_code": ErrorCode.rebalance_in_progress})
        return self._wait_for_join(group, member)

    def _wait_for_join(self, group: ClassicGroup, member: Member) -> Result[Any]:
        """The member's answer waits for the join phase, which ends now if it can."""
        answer = member.join_future = asyncio.get_running_loop().create_future()
        return Result(self._join_or_rebalance(group), answer)

    # -- SyncGroup -----------------------------------------------------------------

    def sync_group(self, request: dict[str, Any]) -> Result[Any]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        if not request["group_id"]:
            future.set_result({"error_code": ErrorCode.invalid_group_id})
            return Result([], future)
        group = self.groups.get(request["group_id"])
        code = self._validate_member(group, request["member_id"], request["group_instance_id"])
        if code == ErrorCode.none and group is not None:
            if request["generation_id"] != group.generation:
                code = ErrorCode.illegal_generation
            elif request.get("protocol_type") not in (None, group.protocol_type) or request.get(
                "protocol_name"
            ) not in (None, group.protocol):
                code = ErrorCode.inconsistent_group_protocol
        if code != ErrorCode.none or group is None:
            future.set_result({"error_code": code})
            return Result([], future)
        member = group.members[request["member_id"]]
        if group.state == PREPARING_REBALANCE:
            future.set_result({"error_code": ErrorCode.rebalance_in_progress})
            return Result([], future)
        if group.state == STABLE:
            future.set_result(self._sync_answer(group, member))
            return Result([], future)
        if group.state != COMPLETING_REBALANCE:
            future.set_result({"error_code": ErrorCode.unknown_member_id})
            return Result([], future)
        member.sync_future = future
        self.arm_session(group, member)
        if member.member_id != group.leader:
            return Result([], future)
        assignments = {a["member_id"]: a["assignment"] for a in request["assignments"]}
        for m in group.members.values():
            m.assignment = assignments.get(m.member_id, b"")
        self.context.cancel(f"sync:{group.group_id}")
        group.state = STABLE
        records = [group_record(group)]
        for m in group.members.values():
            if m.sync_future is not None and not m.sync_future.done():
                m.sync_future.set_result(self._sync_answer(group, m))
            m.sync_future = None
        return Result(records, future)

    def _sync_answer(self, group: ClassicGroup, member: Member) -> dict[str, Any]:
        return {
            "error_code": ErrorCode.none,
            "protocol_type": group.protocol_type,
            "protocol_name": group.protocol,
            "assignment": member.assignment,
        }

    def _validate_member(
        self, group: ClassicGroup | None, member_id: str, instance_id: str | None
    ) -> ErrorCode:
        if group is None or group.state == DEAD:
            return ErrorCode.unknown_member_id
        if instance_id is not None:
            known = group.static_members.get(instance_id)
            if known is not None and known != member_id:
                return ErrorCode.fenced_instance_id
        if member_id not in group.members:
            return ErrorCode.unknown_member_id
        return ErrorCode.none

    # -- Heartbeat and LeaveGroup ----------------------------------------------------

    def heartbeat(
        self, group_id: str, member_id: str, instance_id: str | None, generation: int
    ) -> Result[int]:
        if not group_id:
            return Result([], ErrorCode.invalid_group_id)
        group = self.groups.get(group_id)
        code = self._validate_member(group, member_id, instance_id)
        if code != ErrorCode.none or group is None:
            return Result([], code)
        # Kafka's order: a wrong generation is ErrorCode.illegal_generation even mid-rebalance
        if generation != group.generation:
            return Result([], ErrorCode.illegal_generation)
        self.arm_session(group, group.members[member_id])
        if group.state == PREPARING_REBALANCE:
            return Result([], ErrorCode.rebalance_in_progress)
        return Result([], ErrorCode.none)

    def leave_group(
        self, group_id: str, leaving: list[tuple[str, str | None]]
    ) -> Result[tuple[int, list[dict[str, Any]]]]:
        if not group_id:
            return Result([], (ErrorCode.invalid_group_id, []))
        group = self.groups.get(group_id)
        if group is None or group.state == DEAD:  # as Kafka: each member is unknown
            unknown = [
                {"member_id": m, "group_instance_id": i, "error_code": ErrorCode.unknown_member_id}
                for m, i in leaving
            ]
            return Result([], (ErrorCode.none, unknown))
        answers = []
        records: list[Record] = []
        for member_id, instance_id in leaving:
            code = ErrorCode.none
            target = member_id
            if instance_id is not None:
                known = group.static_members.get(instance_id)
                if known is None:
                    code = ErrorCode.unknown_member_id
                elif member_id and member_id != known:
                    code = ErrorCode.fenced_instance_id
                else:
                    target = known
            elif member_id in group.pending_members:
                group.pending_members.discard(member_id)
                self.context.cancel(f"session:{group_id}:{member_id}")
                records += self._maybe_complete_join(group)
                target = ""
            elif member_id not in group.members:
                code = ErrorCode.unknown_member_id
            if code == ErrorCode.none and target:
                records += self._remove_member(group, target, "left the group")
            answers.append(
                {"member_id": member_id, "group_instance_id": instance_id, "error_code": code}
            )
        return Result(records, (ErrorCode.none, answers))


def _protocols(request: dict[str, Any]) -> list[tuple[str, bytes]]:
    return [(p["name"], p["metadata"]) for p in request["protocols"]]


def _new_member(member_id: str, request: dict[str, Any]) -> Member:
    return Member(
        member_id=member_id,
        group_instance_id=request["group_instance_id"],
        client_id=request["client_id"],
        client_host=request["client_host"],
        rebalance_timeout_ms=request["rebalance_timeout_ms"],
        session_timeout_ms=request["session_timeout_ms"],
        protocol_type=request["protocol_type"],
        protocols=_protocols(request),
    )


def _refused(request: dict[str, Any], code: int) -> Result[Any]:
    answer = {"error_code": code, "member_id": request["member_id"], "generation_id": -1}
    return Result([], answered(answer))
