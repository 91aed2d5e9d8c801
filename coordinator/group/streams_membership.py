"""Leaving a streams group and being fenced from it, and the timers that fence: a
member's session (`streams.session.timeout.ms`), and its rebalance timeout while it
has tasks to revoke. A member leaves with epoch -1; a static member with -2 leaves for
a while and keeps its place and its tasks (their epochs reset) until it comes back or
its session runs out. Fencing removes the member and moves the group to a new epoch;
the next heartbeat assigns its tasks to the others."""

from __future__ import annotations

import dataclasses
from typing import Any

from odradek.coordinator.group import streams_records as sr
from odradek.coordinator.group.heartbeat_errors import HeartbeatError
from odradek.coordinator.group.shard_state import ShardState
from odradek.coordinator.group.streams import (
    UNREVOKED_TASKS,
    StreamsGroup,
    StreamsMember,
    current_record,
    member_tombstones,
    metadata_record,
    target_epoch_record,
)
from odradek.coordinator.group.streams_heartbeat import STATIC_LEAVE_EPOCH
from odradek.coordinator.runtime import Record, Result
from odradek.protocol.errors import ErrorCode


def not_streams(group_id: str) -> str:
    return f"Group {group_id} is not a streams group."


class StreamsMembership(ShardState):
    # -- leaving and being fenced -----------------------------------------------------

    def _streams_leave(self, request: dict[str, Any]) -> Result[dict[str, Any]]:
        group_id, member_id, epoch = (
            request["group_id"],
            request["member_id"],
            request["member_epoch"],
        )
        live = self.streams_groups.get(group_id)
        if live is None:
            other = (
                self.groups.get(group_id) is not None
                or group_id in self.consumer_groups
                or (group_id in self.share_groups)
            )
            message = not_streams(group_id) if other else f"Group {group_id} not found."
            raise HeartbeatError(ErrorCode.group_id_not_found, message)
        if request.get("shutdown_application") and live.shutdown_requested_by is None:
            live.shutdown_requested_by = member_id
        response = {
            "error_code": ErrorCode.none,
            "member_id": member_id,
            "member_epoch": epoch,
            "status": [],
            "endpoint_information_epoch": 0,
        }
        instance_id = request.get("instance_id")
        group = live.copy()
        if instance_id is None:
            if member_id not in group.members:
                raise HeartbeatError(
                    ErrorCode.unknown_member_id,
                    f"Member {member_id} is not a member of group {group_id}.",
                )
            return Result(self._streams_fence_records(group, member_id), response)
        static = group.static_member(instance_id)
        if static is None:
            raise HeartbeatError(
                ErrorCode.unknown_member_id, f"Instance id {instance_id} is unknown."
            )
        if static.member_id != member_id:
            raise HeartbeatError(
                ErrorCode.fenced_instance_id,
                f"Static member {member_id} with instance id {instance_id} was fenced by member "
                f"{static.member_id}.",
            )
        if epoch == STATIC_LEAVE_EPOCH:
            # keeps its place and its tasks until it returns or its session runs out
            parked = dataclasses.replace(
                static,
                member_epoch=STATIC_LEAVE_EPOCH,
                pending_revocation=sr.AssignedTasks(),
                assigned=dataclasses.replace(
                    static.assigned,
                    active={s: dict.fromkeys(p, 0) for s, p in static.assigned.active.items()},
                ),
            )
            return Result([current_record(group_id, parked)], response)
        return Result(self._streams_fence_records(group, member_id), response)

    def _streams_fence_records(self, group: StreamsGroup, member_id: str) -> list[Record]:
        records = member_tombstones(group.group_id, member_id)
        epoch = group.group_epoch + 1
        records.append(
            metadata_record(
                group,
                epoch,
                group.metadata_hash,
                group.validated_topology_epoch,
                group.assignment_configs,
            )
        )
        if len(group.members) == 1:
            records.append(target_epoch_record(group.group_id, epoch, 0))
        self._cancel_streams_timers(group.group_id, member_id)
        self.streams_task_offsets.get(group.group_id, {}).pop(member_id, None)
        return records

    def _streams_fence(self, group_id: str, member_id: str, epoch: int | None) -> Result[None]:
        live = self.streams_groups.get(group_id)
        member = live.members.get(member_id) if live is not None else None
        if live is None or member is None:
            return Result()
        if epoch is not None and member.member_epoch != epoch:
            return Result()
        return Result(self._streams_fence_records(live, member_id))

    # -- timers ----------------------------------------------------------------------

    def _arm_streams_session(self, group_id: str, member_id: str, timeout_ms: int) -> None:
        def expire(shard: StreamsMembership) -> Result[None]:
            return shard._streams_fence(group_id, member_id, None)

        self._schedule(f"stsession:{group_id}:{member_id}", timeout_ms, expire)

    def _arm_streams_rebalance(self, group_id: str, member: StreamsMember) -> None:
        key = f"strevoke:{group_id}:{member.member_id}"
        if member.state != UNREVOKED_TASKS:
            self._cancel(key)
            return
        member_id, epoch = member.member_id, member.member_epoch

        def fence(shard: StreamsMembership) -> Result[None]:
            return shard._streams_fence(group_id, member_id, epoch)

        self._schedule(key, max(member.rebalance_timeout_ms, 0), fence)

    def _cancel_streams_timers(self, group_id: str, member_id: str) -> None:
        for timer in ("stsession", "strevoke"):
            self._cancel(f"{timer}:{group_id}:{member_id}")

    def on_streams_groups_loaded(self) -> None:
        for group in self.streams_groups.values():
            timeout = self.config.timeouts(group.group_id).streams_session_timeout_ms
            for member in group.members.values():
                self._arm_streams_session(group.group_id, member.member_id, timeout)
                self._arm_streams_rebalance(group.group_id, member)
