"""The group coordinator shard for one `__consumer_offsets` partition.

Committed offsets and each group's metadata (generation, protocol, leader,
members and their assignments) are persistent: operations return them as
records and `replay` applies them, both live and when loading. The moment-to-
moment state of a rebalance (who has rejoined, the parked JoinGroup and
SyncGroup answers, session timers) lives only in memory, as in Kafka: after a
restart a group comes back with its members and assignment, and its members
either heartbeat on or time out.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from coordinator.group import records as rec
from coordinator.group.classic import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroup,
    Member,
)
from coordinator.runtime import Record, Result, ShardRuntime

# Error codes
NONE = 0
UNKNOWN_SERVER_ERROR = -1
OFFSET_METADATA_TOO_LARGE = 12
COORDINATOR_NOT_AVAILABLE = 15
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
GROUP_MAX_SIZE_REACHED = 81
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
MEMBER_ID_REQUIRED = 79
FENCED_INSTANCE_ID = 82
GROUP_SUBSCRIBED_TO_TOPIC = 86
UNSTABLE_OFFSET_COMMIT = 88

MAX_GROUP_SIZE = 10000


@dataclass
class GroupConfig:
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    initial_rebalance_delay_ms: int = 3000
    offset_metadata_max_bytes: int = 4096
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offsets_retention_check_interval_ms: int = 600000


@dataclass(slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1
    record_offset: int = -1  # where it sits in the partition log


def _now_ms() -> int:
    return int(time.time() * 1000)


class GroupShard:
    def __init__(self, runtime: ShardRuntime | None, config: GroupConfig) -> None:
        self.runtime = runtime
        self.config = config
        self.groups: dict[str, ClassicGroup] = {}
        self.offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        # transactional offsets waiting for their marker: producer id -> group -> offsets
        self.pending_txn_offsets: dict[int, dict[str, dict[tuple[str, int], CommittedOffset]]] = {}

    # -- replay ------------------------------------------------------------------

    def replay(self, offset: int, key: bytes, value: bytes | None, producer_id: int) -> None:
        decoded = rec.decode_key(key)
        if isinstance(decoded, rec.OffsetKey):
            self._replay_offset(offset, decoded, value, producer_id)
        elif isinstance(decoded, rec.GroupKey):
            self._replay_group(decoded.group, value)

    def _replay_offset(
        self, offset: int, key: rec.OffsetKey, value: bytes | None, producer_id: int
    ) -> None:
        tp = (key.topic, key.partition)
        if producer_id >= 0:
            pending = self.pending_txn_offsets.setdefault(producer_id, {})
            target = pending.setdefault(key.group, {})
        else:
            target = self.offsets.setdefault(key.group, {})
            if value is not None and key.group not in self.groups:
                # a group known only by its offsets (simple commits) is an Empty group
                self.groups[key.group] = ClassicGroup(key.group)
        if value is None:
            target.pop(tp, None)
            if not target and producer_id < 0:
                self.offsets.pop(key.group, None)
            return
        v = rec.decode_offset(value)
        target[tp] = CommittedOffset(
            v.offset, v.leader_epoch, v.metadata, v.commit_timestamp, v.expire_timestamp, offset
        )

    def replay_control(self, producer_id: int, commit: bool) -> None:
        pending = self.pending_txn_offsets.pop(producer_id, None)
        if not pending or not commit:
            return
        for group_id, offsets in pending.items():
            self.offsets.setdefault(group_id, {}).update(offsets)
            if group_id not in self.groups:
                self.groups[group_id] = ClassicGroup(group_id)

    def _replay_group(self, group_id: str, value: bytes | None) -> None:
        if value is None:
            group = self.groups.pop(group_id, None)
            if group is not None:
                group.state = DEAD
            return
        v = rec.decode_group(value)
        group = self.groups.get(group_id)
        if group is None:
            group = ClassicGroup(group_id)
            self.groups[group_id] = group
        group.generation = v.generation
        group.protocol_type = v.protocol_type or None
        group.protocol = v.protocol
        group.leader = v.leader
        group.state_timestamp = v.state_timestamp
        persisted = {m.member_id for m in v.members}
        for m in v.members:
            member = group.members.get(m.member_id)
            if member is None:
                member = Member(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout,
                    m.session_timeout,
                    v.protocol_type,
                    [(v.protocol or "", m.subscription)],
                )
                group.add(member)
            member.assignment = m.assignment
        if self.runtime is None or not self.runtime.loaded:
            # loading: the record is the whole truth about the group
            for member_id in [mid for mid in group.members if mid not in persisted]:
                group.remove(member_id)
            group.leader = v.leader
            group.state = STABLE if group.members else EMPTY

    def on_loaded(self) -> None:
        for group in self.groups.values():
            for member in group.members.values():
                self._arm_session(group, member)
        self._schedule_offset_expiry()

    # -- helpers -----------------------------------------------------------------

    def _group_record(self, group: ClassicGroup) -> Record:
        value = rec.GroupValue(
            protocol_type=group.protocol_type or "",
            generation=group.generation,
            protocol=group.protocol,
            leader=group.leader,
            state_timestamp=_now_ms(),
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
        return rec.encode_key(rec.GroupKey(group.group_id)), rec.encode_group(value)

    def _schedule(self, key: str, delay_ms: float, operation: Any) -> None:
        if self.runtime is not None:
            self.runtime.schedule(key, delay_ms, operation)

    def _cancel(self, key: str) -> None:
        if self.runtime is not None:
            self.runtime.cancel(key)

    def _arm_session(self, group: ClassicGroup, member: Member) -> None:
        key = f"session:{group.group_id}:{member.member_id}"
        group_id, member_id = group.group_id, member.member_id

        def expire(shard: GroupShard) -> Result[None]:
            return shard._expire_member(group_id, member_id)

        self._schedule(key, member.session_timeout_ms, expire)

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
        self._cancel(f"session:{group.group_id}:{member_id}")
        if member is not None:
            for future in (member.join_future, member.sync_future):
                if future is not None and not future.done():
                    future.set_result({"error_code": UNKNOWN_MEMBER_ID})
        if group.state in (STABLE, COMPLETING_REBALANCE):
            return self._prepare_rebalance(group)
        if group.state == PREPARING_REBALANCE:
            return self._maybe_complete_join(group)
        return []

    def _prepare_rebalance(self, group: ClassicGroup) -> list[Record]:
        """Start a rebalance; members learn of it through their heartbeats."""
        for member in group.members.values():
            if member.sync_future is not None and not member.sync_future.done():
                member.sync_future.set_result({"error_code": REBALANCE_IN_PROGRESS})
            member.sync_future = None
        self._cancel(f"sync:{group.group_id}")
        was_empty = group.state == EMPTY
        group.state = PREPARING_REBALANCE
        timeout = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        if was_empty:
            delay = self.config.initial_rebalance_delay_ms
            group.initial_delay_until = time.monotonic() + delay / 1000
            if delay > 0:
                timeout = max(min(delay, timeout or delay), 0)
        group_id, generation = group.group_id, group.generation

        def rebalance_timeout(shard: GroupShard) -> Result[None]:
            g = shard.groups.get(group_id)
            if g is None or g.state != PREPARING_REBALANCE or g.generation != generation:
                return Result()
            return Result(shard._complete_join(g))

        self._schedule(f"join:{group.group_id}", timeout, rebalance_timeout)
        return self._maybe_complete_join(group)

    def _join_or_rebalance(self, group: ClassicGroup) -> list[Record]:
        """A member now waits to join: end the join phase if it can, or start one."""
        if group.state == PREPARING_REBALANCE:
            return self._maybe_complete_join(group)
        return self._prepare_rebalance(group)

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
        self._cancel(f"join:{group.group_id}")
        group.initial_delay_until = 0.0
        for member_id in [
            m.member_id
            for m in group.members.values()
            if m.join_future is None and m.group_instance_id is None
        ]:
            group.remove(member_id)
            self._cancel(f"session:{group.group_id}:{member_id}")
        group.pending_members.clear()
        joined = [m for m in group.members.values() if m.join_future is not None]
        if group.members and not joined:
            # Only absent static members: wait another rebalance timeout (their sessions
            # expire meanwhile) instead of starting a generation nobody would sync.
            group_id, generation = group.group_id, group.generation

            def retry(shard: GroupShard) -> Result[None]:
                g = shard.groups.get(group_id)
                if g is None or g.state != PREPARING_REBALANCE or g.generation != generation:
                    return Result()
                return Result(shard._complete_join(g))

            timeout = max(m.rebalance_timeout_ms for m in group.members.values())
            self._schedule(f"join:{group.group_id}", timeout, retry)
            return []
        group.generation += 1
        if not group.members:
            group.state = EMPTY
            group.protocol = None
            group.leader = None
            return [self._group_record(group)]
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
                self._arm_session(group, member)
        group_id, generation = group.group_id, group.generation
        timeout = max(m.rebalance_timeout_ms for m in group.members.values())

        def sync_timeout(shard: GroupShard) -> Result[None]:
            g = shard.groups.get(group_id)
            if g is None or g.state != COMPLETING_REBALANCE or g.generation != generation:
                return Result()
            stragglers = [m.member_id for m in g.members.values() if m.sync_future is None]
            records: list[Record] = []
            for member_id in stragglers:
                records += shard._remove_member(g, member_id, "no SyncGroup in time")
            return Result(records)

        self._schedule(f"sync:{group.group_id}", timeout, sync_timeout)
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
            "error_code": NONE,
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
        loop = asyncio.get_running_loop()
        group_id: str = request["group_id"]
        member_id: str = request["member_id"]
        instance_id: str | None = request["group_instance_id"]
        session = request["session_timeout_ms"]

        def now(answer: dict[str, Any]) -> Result[Any]:
            future: asyncio.Future[dict[str, Any]] = loop.create_future()
            future.set_result(answer)
            return Result([], future)

        def error(code: int) -> Result[Any]:
            return now({"error_code": code, "member_id": member_id, "generation_id": -1})

        if not group_id:
            return error(INVALID_GROUP_ID)
        if not self.config.min_session_timeout_ms <= session <= self.config.max_session_timeout_ms:
            return error(INVALID_SESSION_TIMEOUT)
        group = self.groups.get(group_id)
        if group is None:
            if member_id:
                return error(UNKNOWN_MEMBER_ID)
            group = ClassicGroup(group_id)
            self.groups[group_id] = group
        if group.state == DEAD:
            return error(COORDINATOR_NOT_AVAILABLE)
        protocols = [(p["name"], p["metadata"]) for p in request["protocols"]]
        if not group.supports(request["protocol_type"], [n for n, _ in protocols]):
            return error(INCONSISTENT_GROUP_PROTOCOL)

        if not member_id:
            return self._join_unknown(group, request, protocols, now, error)
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            return self._add_and_rebalance(group, member_id, request, protocols)
        member = group.members.get(member_id)
        if instance_id is not None:
            known = group.static_members.get(instance_id)
            if known is not None and known != member_id:
                return error(FENCED_INSTANCE_ID)
        if member is None:
            return error(UNKNOWN_MEMBER_ID)
        return self._join_known(group, member, request, protocols, now)

    def _new_member(
        self, member_id: str, request: dict[str, Any], protocols: list[tuple[str, bytes]]
    ) -> Member:
        return Member(
            member_id=member_id,
            group_instance_id=request["group_instance_id"],
            client_id=request["client_id"],
            client_host=request["client_host"],
            rebalance_timeout_ms=request["rebalance_timeout_ms"],
            session_timeout_ms=request["session_timeout_ms"],
            protocol_type=request["protocol_type"],
            protocols=protocols,
        )

    def _join_unknown(
        self,
        group: ClassicGroup,
        request: dict[str, Any],
        protocols: list[tuple[str, bytes]],
        now: Any,
        error: Any,
    ) -> Result[Any]:
        instance_id = request["group_instance_id"]
        new_id = f"{request['client_id']}-{uuid.uuid4()}"
        if instance_id is not None and instance_id in group.static_members:
            return self._replace_static_member(group, new_id, request, protocols)
        if len(group.members) + len(group.pending_members) >= MAX_GROUP_SIZE:
            return error(GROUP_MAX_SIZE_REACHED)
        if instance_id is None and request["require_known_member_id"]:
            group.pending_members.add(new_id)
            group_id = group.group_id

            def pending_expired(shard: GroupShard) -> Result[None]:
                return shard._expire_member(group_id, new_id)

            self._schedule(
                f"session:{group.group_id}:{new_id}", request["session_timeout_ms"], pending_expired
            )
            return now({"error_code": MEMBER_ID_REQUIRED, "member_id": new_id, "generation_id": -1})
        return self._add_and_rebalance(group, new_id, request, protocols)

    def _replace_static_member(
        self,
        group: ClassicGroup,
        new_id: str,
        request: dict[str, Any],
        protocols: list[tuple[str, bytes]],
    ) -> Result[Any]:
        """A static member restarting: it takes the old member's place and assignment."""
        instance_id = request["group_instance_id"]
        old_id = group.static_members[instance_id]
        old = group.members[old_id]
        group.remove(old_id)
        self._cancel(f"session:{group.group_id}:{old_id}")
        for parked in (old.join_future, old.sync_future):
            if parked is not None and not parked.done():
                parked.set_result({"error_code": FENCED_INSTANCE_ID})
        member = self._new_member(new_id, request, protocols)
        member.assignment = old.assignment
        was_leader = group.leader is None or group.leader == old_id
        group.add(member)
        if was_leader:
            group.leader = new_id
        loop = asyncio.get_running_loop()
        unchanged = set(member.protocol_names) == set(old.protocol_names)
        if group.state in (STABLE, COMPLETING_REBALANCE) and unchanged:
            # No rebalance: persist the new member id, answer with the current generation.
            self._arm_session(group, member)
            current = self._join_answer(group, member)
            # KIP-814: a static leader rejoining a stable group keeps the assignment as is
            current["skip_assignment"] = group.state == STABLE and new_id == group.leader
            future: asyncio.Future[dict[str, Any]] = loop.create_future()
            future.set_result(current)
            return Result([self._group_record(group)] if group.state == STABLE else [], future)
        answer = member.join_future = loop.create_future()
        return Result(self._join_or_rebalance(group), answer)

    def _add_and_rebalance(
        self,
        group: ClassicGroup,
        member_id: str,
        request: dict[str, Any],
        protocols: list[tuple[str, bytes]],
    ) -> Result[Any]:
        member = self._new_member(member_id, request, protocols)
        answer = member.join_future = asyncio.get_running_loop().create_future()
        group.add(member)
        self._arm_session(group, member)
        return Result(self._join_or_rebalance(group), answer)

    def _join_known(
        self,
        group: ClassicGroup,
        member: Member,
        request: dict[str, Any],
        protocols: list[tuple[str, bytes]],
        now: Any,
    ) -> Result[Any]:
        loop = asyncio.get_running_loop()
        changed = protocols != member.protocols
        member.protocols = protocols
        member.rebalance_timeout_ms = request["rebalance_timeout_ms"]
        member.session_timeout_ms = request["session_timeout_ms"]
        self._arm_session(group, member)
        if group.state == COMPLETING_REBALANCE and not changed:
            return now(self._join_answer(group, member))
        if group.state == STABLE and not changed and member.member_id != group.leader:
            return now(self._join_answer(group, member))
        if member.join_future is not None and not member.join_future.done():
            member.join_future.set_result({"error_code": REBALANCE_IN_PROGRESS})
        answer = member.join_future = loop.create_future()
        return Result(self._join_or_rebalance(group), answer)

    # -- SyncGroup -----------------------------------------------------------------

    def sync_group(self, request: dict[str, Any]) -> Result[Any]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        if not request["group_id"]:
            future.set_result({"error_code": INVALID_GROUP_ID})
            return Result([], future)
        group = self.groups.get(request["group_id"])
        code = self._validate_member(group, request["member_id"], request["group_instance_id"])
        if code == NONE and group is not None:
            if request["generation_id"] != group.generation:
                code = ILLEGAL_GENERATION
            elif request.get("protocol_type") not in (None, group.protocol_type) or request.get(
                "protocol_name"
            ) not in (None, group.protocol):
                code = INCONSISTENT_GROUP_PROTOCOL
        if code != NONE or group is None:
            future.set_result({"error_code": code})
            return Result([], future)
        member = group.members[request["member_id"]]
        if group.state == PREPARING_REBALANCE:
            future.set_result({"error_code": REBALANCE_IN_PROGRESS})
            return Result([], future)
        if group.state == STABLE:
            future.set_result(self._sync_answer(group, member))
            return Result([], future)
        if group.state != COMPLETING_REBALANCE:
            future.set_result({"error_code": UNKNOWN_MEMBER_ID})
            return Result([], future)
        member.sync_future = future
        self._arm_session(group, member)
        if member.member_id != group.leader:
            return Result([], future)
        assignments = {a["member_id"]: a["assignment"] for a in request["assignments"]}
        for m in group.members.values():
            m.assignment = assignments.get(m.member_id, b"")
        self._cancel(f"sync:{group.group_id}")
        group.state = STABLE
        records = [self._group_record(group)]
        for m in group.members.values():
            if m.sync_future is not None and not m.sync_future.done():
                m.sync_future.set_result(self._sync_answer(group, m))
            m.sync_future = None
        return Result(records, future)

    def _sync_answer(self, group: ClassicGroup, member: Member) -> dict[str, Any]:
        return {
            "error_code": NONE,
            "protocol_type": group.protocol_type,
            "protocol_name": group.protocol,
            "assignment": member.assignment,
        }

    def _validate_member(
        self, group: ClassicGroup | None, member_id: str, instance_id: str | None
    ) -> int:
        if group is None or group.state == DEAD:
            return UNKNOWN_MEMBER_ID
        if instance_id is not None:
            known = group.static_members.get(instance_id)
            if known is not None and known != member_id:
                return FENCED_INSTANCE_ID
        if member_id not in group.members:
            return UNKNOWN_MEMBER_ID
        return NONE

    # -- Heartbeat and LeaveGroup ----------------------------------------------------

    def heartbeat(
        self, group_id: str, member_id: str, instance_id: str | None, generation: int
    ) -> Result[int]:
        if not group_id:
            return Result([], INVALID_GROUP_ID)
        group = self.groups.get(group_id)
        code = self._validate_member(group, member_id, instance_id)
        if code != NONE or group is None:
            return Result([], code)
        # Kafka's order: a wrong generation is ILLEGAL_GENERATION even mid-rebalance
        if generation != group.generation:
            return Result([], ILLEGAL_GENERATION)
        self._arm_session(group, group.members[member_id])
        if group.state == PREPARING_REBALANCE:
            return Result([], REBALANCE_IN_PROGRESS)
        return Result([], NONE)

    def leave_group(
        self, group_id: str, leaving: list[tuple[str, str | None]]
    ) -> Result[tuple[int, list[dict[str, Any]]]]:
        if not group_id:
            return Result([], (INVALID_GROUP_ID, []))
        group = self.groups.get(group_id)
        if group is None or group.state == DEAD:
            return Result([], (UNKNOWN_MEMBER_ID, []))
        answers = []
        records: list[Record] = []
        for member_id, instance_id in leaving:
            code = NONE
            target = member_id
            if instance_id is not None:
                known = group.static_members.get(instance_id)
                if known is None:
                    code = UNKNOWN_MEMBER_ID
                elif member_id and member_id != known:
                    code = FENCED_INSTANCE_ID
                else:
                    target = known
            elif member_id in group.pending_members:
                group.pending_members.discard(member_id)
                self._cancel(f"session:{group_id}:{member_id}")
                records += self._maybe_complete_join(group)
                target = ""
            elif member_id not in group.members:
                code = UNKNOWN_MEMBER_ID
            if code == NONE and target:
                records += self._remove_member(group, target, "left the group")
            answers.append(
                {"member_id": member_id, "group_instance_id": instance_id, "error_code": code}
            )
        return Result(records, (NONE, answers))

    # -- offsets -------------------------------------------------------------------

    def commit_offsets(self, request: dict[str, Any]) -> Result[dict[tuple[str, int], int]]:
        """request: group_id, generation, member_id, instance_id, offsets {(t,p): (o, epoch, md)}"""
        group_id = request["group_id"]
        group = self.groups.get(group_id)
        generation = request["generation"]
        producer = request.get("producer")  # (id, epoch) for TxnOffsetCommit
        member_id = request["member_id"]
        code = NONE
        if group is None:
            if generation >= 0:
                code = ILLEGAL_GENERATION
        elif generation < 0 and not member_id and (group.is_empty() or producer is not None):
            pass  # a simple commit: an admin, an assign()-only consumer, an old EOS client
        elif group.state == DEAD:
            code = COORDINATOR_NOT_AVAILABLE
        else:
            code = self._validate_member(group, member_id, request["group_instance_id"])
            if code == NONE:
                if generation != group.generation:
                    code = ILLEGAL_GENERATION
                elif group.state == COMPLETING_REBALANCE:
                    code = REBALANCE_IN_PROGRESS
                else:
                    self._arm_session(group, group.members[member_id])
        if code != NONE:
            return Result([], {tp: code for tp in request["offsets"]})
        if group is None:
            self.groups[group_id] = ClassicGroup(group_id)
        now = _now_ms()
        records: list[Record] = []
        answers = {}
        for (topic, partition), (offset, epoch, metadata) in request["offsets"].items():
            if (
                metadata is not None
                and len(metadata.encode()) > self.config.offset_metadata_max_bytes
            ):
                answers[(topic, partition)] = OFFSET_METADATA_TOO_LARGE
                continue
            answers[(topic, partition)] = NONE
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
        return (
            rec.encode_key(rec.OffsetKey(group_id, topic, partition)),
            rec.encode_offset(rec.OffsetValue(offset, epoch, metadata, now)),
        )

    def fetch_offsets(
        self, group_id: str, topics: list[tuple[str, list[int]]] | None, require_stable: bool
    ) -> Result[dict[str, Any]]:
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
                answers.append((tp, None, UNSTABLE_OFFSET_COMMIT))
            else:
                answers.append((tp, committed.get(tp), NONE))
        return Result([], {"offsets": answers})

    def _offset_tombstones(self, group_id: str, which: Iterable[tuple[str, int]]) -> list[Record]:
        return [(rec.encode_key(rec.OffsetKey(group_id, t, p)), None) for t, p in which]

    def delete_groups(self, group_ids: list[str]) -> Result[dict[str, int]]:
        records: list[Record] = []
        answers = {}
        for group_id in group_ids:
            group = self.groups.get(group_id)
            if group is None and group_id not in self.offsets:
                answers[group_id] = GROUP_ID_NOT_FOUND
                continue
            if group is not None and (group.members or group.state == DEAD):
                answers[group_id] = NON_EMPTY_GROUP if group.members else GROUP_ID_NOT_FOUND
                continue
            records += self._offset_tombstones(group_id, self.offsets.get(group_id, {}))
            records.append((rec.encode_key(rec.GroupKey(group_id)), None))
            answers[group_id] = NONE
        return Result(records, answers)

    def delete_offsets(
        self, group_id: str, partitions: list[tuple[str, int]]
    ) -> Result[tuple[int, dict[tuple[str, int], int]]]:
        group = self.groups.get(group_id)
        if group is None and group_id not in self.offsets:
            return Result([], (GROUP_ID_NOT_FOUND, {}))
        subscribed = set()
        if group is not None and group.members:
            topics = group.subscribed_topics()
            subscribed = topics if topics is not None else {t for t, _ in partitions}
        answers = {}
        deletable = []
        for tp in partitions:
            if tp[0] in subscribed:
                answers[tp] = GROUP_SUBSCRIBED_TO_TOPIC
            else:
                answers[tp] = NONE
                if tp in self.offsets.get(group_id, {}):
                    deletable.append(tp)
        return Result(self._offset_tombstones(group_id, deletable), (NONE, answers))

    def delete_topic_offsets(self, topics: set[str]) -> Result[None]:
        records: list[Record] = []
        for group_id, offsets in self.offsets.items():
            records += self._offset_tombstones(group_id, [tp for tp in offsets if tp[0] in topics])
        return Result(records)

    # -- offset expiry -------------------------------------------------------------

    def _schedule_offset_expiry(self) -> None:
        def expire(shard: GroupShard) -> Result[None]:
            shard._schedule_offset_expiry()
            return Result(shard.expired_offset_records(_now_ms()))

        self._schedule("offset-expiry", self.config.offsets_retention_check_interval_ms, expire)

    def expired_offset_records(self, now: int) -> list[Record]:
        """Offsets of groups without members expire retention after their commit."""
        records: list[Record] = []
        for group_id, offsets in self.offsets.items():
            group = self.groups.get(group_id)
            if group is not None and group.members:
                continue
            expired = [
                tp
                for tp, committed in offsets.items()
                if (committed.expire_timestamp > 0 and now >= committed.expire_timestamp)
                or now - committed.commit_timestamp >= self.config.offsets_retention_ms
            ]
            records += self._offset_tombstones(group_id, expired)
            if len(expired) == len(offsets) and group is not None and not group.members:
                records.append((rec.encode_key(rec.GroupKey(group_id)), None))
        return records

    # -- describe and list ------------------------------------------------------------

    def describe(self, group_id: str) -> Result[dict[str, Any] | None]:
        group = self.groups.get(group_id)
        if group is None:
            return Result([], None)
        return Result(
            [],
            {
                "group_id": group_id,
                "group_state": group.state,
                "protocol_type": group.protocol_type or "",
                "protocol_data": group.protocol or "",
                "members": [
                    {
                        "member_id": m.member_id,
                        "group_instance_id": m.group_instance_id,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "member_metadata": m.metadata_for(group.protocol),
                        "member_assignment": m.assignment,
                    }
                    for m in group.members.values()
                ],
            },
        )

    def list_groups(self) -> Result[list[tuple[str, str, str]]]:
        """(group id, protocol type, state) of every live group."""
        listed = [
            (g.group_id, g.protocol_type or "", g.state)
            for g in self.groups.values()
            if g.state != DEAD
        ]
        known = {g for g, _, _ in listed}
        listed += [(g, "", EMPTY) for g in self.offsets if g not in known]
        return Result([], listed)
