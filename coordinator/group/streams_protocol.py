"""Streams groups (KIP-1071: StreamsGroupHeartbeat) on a group coordinator shard.

As for consumer groups, a heartbeat works on a copy of its group; every change is a
record (streams.py) applied to the copy at once and to the shard's state by
`replay` once written, and loading replays the same records.

A member joins with epoch 0 and the application's topology; the first one
initializes the group's topology. The topology is set against the topics there are
(streams_topics.py): while source topics are missing, or internal topics are (the
broker then creates them), the group is NotReady and its members are told why. A
change of members, member metadata, topics or assignment configs moves the group to a
new epoch; the sticky assignor (streams_assignor.py) computes the target for it, at
most once per `group.streams.assignment.interval.ms`, and not before
`group.streams.initial.rebalance.delay.ms` has passed since a first member joined an
empty group (the members are told the assignment is delayed). Members reach their
target as streams_reconcile.py says. Epoch -1 leaves, -2 leaves for a while (a static
member); a member that does not heartbeat within the session timeout, or does not
revoke within its rebalance timeout, is fenced.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from odradek.coordinator.group import streams_records as sr
from odradek.coordinator.group.classic import GROUP_METADATA
from odradek.coordinator.group.heartbeat_errors import HeartbeatError
from odradek.coordinator.group.record_codecs import GroupKey
from odradek.coordinator.group.record_types import emit
from odradek.coordinator.group.shard_state import now_ms
from odradek.coordinator.group.streams import (
    EMPTY,
    GROUP_STABLE,
    StreamsGroup,
    StreamsMember,
    current_record,
    member_record,
    member_tombstones,
    metadata_record,
    target_epoch_record,
    target_record,
    topology_record,
)
from odradek.coordinator.group.streams_assignor import MemberSpec, SubtopologySpec, assign
from odradek.coordinator.group.streams_configs import MemberTaskOffsets, assignment_configs
from odradek.coordinator.group.streams_heartbeat import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    TASK_KINDS,
    check_epoch,
    check_owned_tasks,
    endpoint_changed,
    endpoints_of,
    missing_client_tags,
    task_ids,
    tasks_of,
    with_request,
)
from odradek.coordinator.group.streams_membership import StreamsMembership, not_streams
from odradek.coordinator.group.streams_reconcile import UnknownMemberState, reconcile
from odradek.coordinator.group.streams_topics import (
    ASSIGNMENT_DELAYED,
    SHUTDOWN_APPLICATION,
    STALE_TOPOLOGY,
    ConfiguredTopology,
    InvalidTopology,
    TopologyFailure,
    configure,
    metadata_hash,
)
from odradek.coordinator.runtime import Record, Result
from odradek.protocol.errors import ErrorCode

NONE, RECOMPUTE, REFINED = 0, 1, 2


class StreamsProtocol(StreamsMembership):
    # -- StreamsGroupHeartbeat -----------------------------------------------------

    def streams_group_heartbeat(self, request: dict[str, Any]) -> Result[dict[str, Any]]:
        """The request as the handler decoded it (see streams_group_heartbeat.py)."""
        try:
            if request["member_epoch"] in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                return self._streams_leave(request)
            return self._streams_heartbeat(request)
        except HeartbeatError as exc:
            return Result([], {"error_code": exc.code, "error_message": str(exc)})
        except InvalidTopology as exc:
            return Result(
                [], {"error_code": ErrorCode.streams_invalid_topology, "error_message": str(exc)}
            )
        except (TopologyFailure, UnknownMemberState) as exc:
            code = ErrorCode.unknown_server_error
            message = str(exc)
            if isinstance(exc, UnknownMemberState):
                code = ErrorCode.fenced_member_epoch
                message = (
                    "The streams group member is in a unknown state. The member must "
                    "abandon all its tasks and rejoin."
                )
            return Result([], {"error_code": code, "error_message": message})

    def _streams_group_for(self, request: dict[str, Any], records: list[Record]) -> StreamsGroup:
        group_id, joining = request["group_id"], request["member_epoch"] == 0
        live = self.streams_groups.get(group_id)
        if live is not None:
            return live.copy()
        classic = self.groups.get(group_id)
        if classic is not None and classic.is_empty() and joining:
            records.append(GROUP_METADATA.tombstone(GroupKey(group_id)))
        elif (
            classic is not None
            or group_id in self.consumer_groups
            or (group_id in self.share_groups)
        ):
            raise HeartbeatError(ErrorCode.group_id_not_found, not_streams(group_id))
        elif not joining:
            raise HeartbeatError(
                ErrorCode.group_id_not_found, f"Streams group {group_id} not found."
            )
        return StreamsGroup(group_id)

    def _streams_heartbeat(self, request: dict[str, Any]) -> Result[dict[str, Any]]:
        records: list[Record] = []
        statuses: list[tuple[int, str]] = []
        group_id, member_id = request["group_id"], request["member_id"]
        joining = request["member_epoch"] == 0
        group = self._streams_group_for(request, records)
        new_group = group_id not in self.streams_groups
        before = group.copy()  # the group as the heartbeat found it
        settings = self.config.timeouts(group_id)
        if joining and group.static_member(request.get("instance_id")) is None:
            limit = self.config.streams_max_size
            if len(group.members) >= limit and member_id not in group.members:
                raise HeartbeatError(
                    ErrorCode.group_max_size_reached,
                    f"The streams group has reached its maximum capacity of {limit} members.",
                )
        member, replaced = self._streams_member_for(group, request, records)
        updated = with_request(member, request, joining)
        change = NONE
        if updated != member:
            emit(group, records, member_record(group_id, updated))
            instance_id = request.get("instance_id")
            if instance_id is None or _epoch_relevant(member, updated):
                change = RECOMPUTE
        topology = self._streams_topology(group, request, records)
        if before.topology is not None and updated.topology_epoch < before.topology.epoch:
            statuses.append(
                (
                    STALE_TOPOLOGY,
                    f"The member's topology epoch {updated.topology_epoch} is behind "
                    f"the group's topology epoch {before.topology.epoch}.",
                )
            )
        topics = self.topics_view()
        hash_value = metadata_hash(topology, topics)
        if hash_value != before.metadata_hash:
            change = RECOMPUTE
        configured = self._configured(group_id, topology, topics, hash_value, before.topology)
        validated = topology.epoch if configured.ready else -1
        if configured.ready and configured.subtopologies is not None:
            for kind in TASK_KINDS:
                check_owned_tasks(configured.subtopologies, request.get(kind))
        if request.get("task_offsets") is not None or request.get("task_end_offsets") is not None:
            known = self.streams_task_offsets.setdefault(group_id, {})
            reported = known.get(member_id, MemberTaskOffsets())
            known[member_id] = reported.update(
                request.get("task_offsets"), request.get("task_end_offsets")
            )
        if validated != before.validated_topology_epoch:
            change = RECOMPUTE
        configs = assignment_configs(settings)
        if change == NONE and configs != before.assignment_configs:
            change = RECOMPUTE
        if change == NONE and before.state == GROUP_STABLE:
            target = before.target.get(member_id, sr.TargetTasks())
            if not _same_tasks(target, updated.assigned):
                change = REFINED
        epoch = before.group_epoch
        if change != NONE:
            epoch += 1
            emit(group, records, metadata_record(group, epoch, hash_value, validated, configs))
        if before.state == EMPTY and settings.streams_initial_rebalance_delay_ms > 0:
            self._arm_initial_delay(group_id, settings.streams_initial_rebalance_delay_ms)
        target_epoch, targets = self._streams_target(
            group, before, epoch, configured, records, statuses, configs, change == REFINED
        )
        after = group.members.get(updated.member_id, updated)
        if not after.is_reconciled_to(target_epoch):
            owned = None
            if all(request.get(kind) is not None for kind in TASK_KINDS):
                owned = sr.AssignedTasks(
                    {s: dict.fromkeys(p, 0) for s, p in tasks_of(request["active_tasks"]).items()},
                    tasks_of(request["standby_tasks"]),
                    tasks_of(request["warmup_tasks"]),
                )
            reconciled = reconcile(
                after,
                target_epoch,
                targets.get(member_id, sr.TargetTasks()),
                before.owners(),
                owned,
            )
            if reconciled != after:
                emit(group, records, current_record(group_id, reconciled))
                self._arm_streams_rebalance(group_id, reconciled)
            after = reconciled
        self._arm_streams_session(group_id, member_id, settings.streams_session_timeout_ms)
        live = self.streams_groups.get(group_id) or group
        if request.get("shutdown_application") and live.shutdown_requested_by is None:
            live.shutdown_requested_by = member_id
        tasks_changed = after.assigned != member.assigned
        if endpoint_changed(member, after) or (tasks_changed and after.user_endpoint is not None):
            live.endpoint_epoch += 1
        response: dict[str, Any] = {
            "error_code": ErrorCode.none,
            "member_id": member_id,
            "member_epoch": after.member_epoch,
            "heartbeat_interval_ms": settings.streams_heartbeat_interval_ms,
            "task_offset_interval_ms": settings.streams_task_offset_interval_ms,
            "acceptable_recovery_lag": settings.streams_acceptable_recovery_lag,
            "endpoint_information_epoch": 0 if new_group else live.endpoint_epoch,
            "endpoints": None,
            "internal_topics": (),
        }
        if joining or tasks_changed:
            response["tasks"] = (
                task_ids(after.assigned.active_ids()),
                task_ids(after.assigned.standby),
                task_ids(after.assigned.warmup),
            )
        if live.endpoint_epoch != request.get("endpoint_information_epoch", 0):
            response["endpoints"] = endpoints_of(
                before, after, replaced, configured, {n: c for n, (_, c) in topics.items()}
            )
        if configured.problem is not None:
            statuses.append(configured.problem)
            response["internal_topics"] = configured.to_create
        if live.shutdown_requested_by is not None:
            statuses.append(
                (
                    SHUTDOWN_APPLICATION,
                    f"Streams group member {live.shutdown_requested_by} encountered a "
                    "fatal error and requested a shutdown for the entire application.",
                )
            )
        required = settings.streams_rack_aware_assignment_tags
        tags_status = missing_client_tags(required, after, request.get("api_version", 0))
        if tags_status is not None:
            statuses.append(tags_status)
        response["status"] = statuses
        return Result(records, response)

    def _streams_member_for(
        self, group: StreamsGroup, request: dict[str, Any], records: list[Record]
    ) -> tuple[StreamsMember, StreamsMember | None]:
        """The member as stored (or new), and the static member it replaces if any."""
        member_id, epoch = request["member_id"], request["member_epoch"]
        instance_id = request.get("instance_id")
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if epoch != 0:
                    raise HeartbeatError(
                        ErrorCode.unknown_member_id,
                        f"Member {member_id} is not a member of group {group.group_id}.",
                    )
                member = StreamsMember(member_id)
            check_epoch(member, request)
            return member, None
        static = group.static_member(instance_id)
        if epoch == 0:
            if static is None:
                return group.members.get(member_id) or StreamsMember(member_id), None
            if static.member_epoch != STATIC_LEAVE_EPOCH:
                raise HeartbeatError(
                    ErrorCode.unreleased_instance_id,
                    f"Static member {member_id} with instance id {instance_id} cannot join the "
                    f"group because the instance id is owned by {static.member_id} member.",
                )
            member = dataclasses.replace(
                static, member_id=member_id, member_epoch=0, previous_member_epoch=0
            )
            target = group.target.get(static.member_id, sr.TargetTasks())
            for record in member_tombstones(group.group_id, static.member_id):
                emit(group, records, record)
            emit(group, records, member_record(group.group_id, member))
            emit(group, records, target_record(group.group_id, member_id, target))
            emit(group, records, current_record(group.group_id, member))
            self._cancel_streams_timers(group.group_id, static.member_id)
            return member, static if static.member_id != member_id else None
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
        check_epoch(static, request)
        return static, None

    def _streams_topology(
        self, group: StreamsGroup, request: dict[str, Any], records: list[Record]
    ) -> sr.Topology:
        asked: sr.Topology | None = request.get("topology")
        known = group.topology
        if asked is None:
            if known is None:
                raise TopologyFailure("The topology is null and the group topology is also null.")
            return known
        if asked.epoch < 0:
            raise TopologyFailure("Topology epoch must be non-negative.")
        if known is None:
            emit(group, records, topology_record(group.group_id, asked))
            return asked
        if known.epoch > asked.epoch:
            return known
        if not known.same_as(asked):
            raise HeartbeatError(
                ErrorCode.invalid_request, "Topology updates are not supported yet."
            )
        return known

    def _configured(
        self,
        group_id: str,
        topology: sr.Topology,
        topics: Mapping[str, tuple[Any, int]],
        hash_value: int,
        stored: sr.Topology | None,
    ) -> ConfiguredTopology:
        """The topology set against the topics, kept while neither changes."""
        cached = self.streams_configured.get(group_id)
        if (
            stored is not None
            and cached is not None
            and cached.epoch == topology.epoch
            and cached.metadata_hash == hash_value
        ):
            return cached
        counts = {name: count for name, (_id, count) in topics.items()}
        configured = configure(topology, counts, hash_value)
        self.streams_configured[group_id] = configured
        return configured

    def _streams_target(
        self,
        group: StreamsGroup,
        before: StreamsGroup,
        epoch: int,
        configured: ConfiguredTopology,
        records: list[Record],
        statuses: list[tuple[int, str]] | None,
        configs: tuple[tuple[str, str], ...],
        refine_only: bool,
    ) -> tuple[int, dict[str, sr.TargetTasks]]:
        """(assignment epoch, target) the members reconcile towards, a new target
        computed (and written) when the group epoch moved past the assignment's."""
        if self._has_timer(_initial_delay_timer(group.group_id)):
            if statuses is not None:
                statuses.append(
                    (
                        ASSIGNMENT_DELAYED,
                        "Assignment delayed due to the configured initial rebalance delay.",
                    )
                )
            return before.assignment_epoch, {}
        if before.assignment_epoch >= epoch:
            return before.assignment_epoch, dict(group.target)
        if refine_only and before.assignment_epoch >= before.group_epoch:
            emit(
                group,
                records,
                target_epoch_record(group.group_id, epoch, before.assignment_timestamp),
            )
            return epoch, dict(group.target)
        interval = self.config.timeouts(group.group_id).streams_assignment_interval_ms
        now = now_ms()
        if interval > 0 and now < before.assignment_timestamp + interval:
            if statuses is not None:
                statuses.append(
                    (
                        ASSIGNMENT_DELAYED,
                        "Assignment delayed due to the configured assignment interval.",
                    )
                )
            return before.assignment_epoch, dict(group.target)
        standbys = int(dict(configs).get("num.standby.replicas", "0"))
        if configured.ready and configured.subtopologies is not None:
            offsets = self.streams_task_offsets.get(group.group_id, {})
            specs = {
                m.member_id: MemberSpec(
                    m.process_id,
                    m.assigned.active_ids(),
                    m.assigned.standby,
                    offsets.get(m.member_id, MemberTaskOffsets()).offsets,
                )
                for m in group.members.values()
            }
            subtopologies = {
                sub_id: SubtopologySpec(sub.tasks, bool(sub.changelogs))
                for sub_id, sub in configured.subtopologies.items()
            }
            targets = assign(specs, subtopologies, standbys)
        else:
            targets = {m: sr.TargetTasks() for m in group.members}
        for member_id, target in targets.items():
            if group.target.get(member_id) != target:
                emit(group, records, target_record(group.group_id, member_id, target))
        emit(group, records, target_epoch_record(group.group_id, epoch, now))
        return epoch, targets

    # -- timers ----------------------------------------------------------------------

    def _arm_initial_delay(self, group_id: str, delay_ms: int) -> None:
        key = _initial_delay_timer(group_id)
        if self._has_timer(key):
            return

        def assign_now(shard: StreamsProtocol) -> Result[None]:
            live = shard.streams_groups.get(group_id)
            if live is None or not live.members or live.group_epoch <= live.assignment_epoch:
                return Result()
            configured = shard.streams_configured.get(group_id)
            if configured is None:
                return Result()
            group = live.copy()
            records: list[Record] = []
            shard._streams_target(
                group,
                live,
                live.group_epoch,
                configured,
                records,
                None,
                live.assignment_configs,
                False,
            )
            return Result(records)

        self._schedule(key, delay_ms, assign_now)


def _initial_delay_timer(group_id: str) -> str:
    return f"stinitial:{group_id}"


def _epoch_relevant(before: StreamsMember, after: StreamsMember) -> bool:
    """For a static member, only these changes move the group to a new epoch."""
    return (
        before.topology_epoch != after.topology_epoch
        or before.rack_id != after.rack_id
        or dict(before.client_tags) != dict(after.client_tags)
        or before.process_id != after.process_id
    )


def _same_tasks(target: sr.TargetTasks, assigned: sr.AssignedTasks) -> bool:
    return (
        dict(target.active) == dict(assigned.active_ids())
        and dict(target.standby) == dict(assigned.standby)
        and dict(target.warmup) == dict(assigned.warmup)
    )
