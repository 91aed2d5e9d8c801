"""The shard's streams groups (KIP-1071: StreamsGroupHeartbeat).

As for consumer groups, a heartbeat works on a copy of its group; every change is a
record (streams.py) applied to the copy at once and to the shard's groups by
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
revoke within its rebalance timeout, is fenced: it is removed and the group moves to
a new epoch. How the other group APIs see a streams group: streams_admin.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from odradek.coordinator.group import streams
from odradek.coordinator.group import streams_admin as admin
from odradek.coordinator.group import streams_records as sr
from odradek.coordinator.group.context import ShardContext, now_ms
from odradek.coordinator.group.heartbeat_errors import (
    HeartbeatError,
    not_found,
    not_of_kind,
    unknown_member,
)
from odradek.coordinator.group.modern_groups import ModernGroups
from odradek.coordinator.group.record_types import emit
from odradek.coordinator.group.streams import (
    EMPTY,
    GROUP_STABLE,
    UNREVOKED_TASKS,
    StreamsGroup,
    StreamsMember,
    current_record,
    group_tombstones,
    member_record,
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
    epoch_relevant,
    missing_client_tags,
    same_tasks,
    static_of,
    task_ids,
    tasks_of,
    with_request,
)
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


class StreamsGroups(ModernGroups[StreamsGroup]):
    kind = "streams"
    types = streams.RECORDS
    session_timer = "stsession"

    def __init__(self, context: ShardContext) -> None:
        super().__init__(context)
        # group -> its topology set against the topics (kept in memory)
        self.configured: dict[str, ConfiguredTopology] = {}
        # group -> member -> the changelog offsets it reported (kept in memory)
        self.task_offsets: dict[str, dict[str, MemberTaskOffsets]] = {}

    def new_group(self, group_id: str) -> StreamsGroup:
        return StreamsGroup(group_id)

    def _forget(self, group_id: str) -> None:
        self.task_offsets.pop(group_id, None)
        self.configured.pop(group_id, None)

    def _forget_member(self, group_id: str, member_id: str) -> None:
        self.task_offsets.get(group_id, {}).pop(member_id, None)

    # -- StreamsGroupHeartbeat -----------------------------------------------------

    def _heartbeat(self, request: dict[str, Any]) -> Result[dict[str, Any]]:
        """The request as the handler decoded it (see streams_group_heartbeat.py)."""
        try:
            if request["member_epoch"] in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                return self._leave(request)
            return self._join_or_beat(request)
        except InvalidTopology as exc:
            raise HeartbeatError(ErrorCode.streams_invalid_topology, str(exc)) from exc
        except TopologyFailure as exc:
            raise HeartbeatError(ErrorCode.unknown_server_error, str(exc)) from exc
        except UnknownMemberState as exc:
            raise HeartbeatError(
                ErrorCode.fenced_member_epoch,
                "The streams group member is in a unknown state. The member must abandon "
                "all its tasks and rejoin.",
            ) from exc

    def _group_for(self, request: dict[str, Any], records: list[Record]) -> StreamsGroup:
        group_id, joining = request["group_id"], request["member_epoch"] == 0
        live = self.groups.get(group_id)
        if live is not None:
            return live.copy()
        classic = self.context.find(group_id, "classic")
        if classic is not None and classic.is_empty() and joining:
            records += self.context.tombstones(group_id, "classic")
        elif self.context.held_elsewhere(group_id, self.kind):
            raise HeartbeatError(ErrorCode.group_id_not_found, not_of_kind(group_id, self.kind))
        elif not joining:
            raise HeartbeatError(
                ErrorCode.group_id_not_found, f"Streams group {group_id} not found."
            )
        return StreamsGroup(group_id)

    def _join_or_beat(self, request: dict[str, Any]) -> Result[dict[str, Any]]:
        records: list[Record] = []
        statuses: list[tuple[int, str]] = []
        group_id, member_id = request["group_id"], request["member_id"]
        joining = request["member_epoch"] == 0
        group = self._group_for(request, records)
        new_group = group_id not in self.groups
        before = group.copy()  # the group as the heartbeat found it
        settings = self.context.config.timeouts(group_id)
        if joining and group.static_member(request.get("instance_id")) is None:
            limit = self.context.config.streams_max_size
            if len(group.members) >= limit and member_id not in group.members:
                raise HeartbeatError(
                    ErrorCode.group_max_size_reached,
                    f"The streams group has reached its maximum capacity of {limit} members.",
                )
        member, replaced = self._member_for(group, request, records)
        updated = with_request(member, request, joining)
        change = NONE
        if updated != member:
            emit(group, records, member_record(group_id, updated))
            instance_id = request.get("instance_id")
            if instance_id is None or epoch_relevant(member, updated):
                change = RECOMPUTE
        topology = self._topology(group, request, records)
        if before.topology is not None and updated.topology_epoch < before.topology.epoch:
            statuses.append(
                (
                    STALE_TOPOLOGY,
                    f"The member's topology epoch {updated.topology_epoch} is behind "
                    f"the group's topology epoch {before.topology.epoch}.",
                )
            )
        topics = self.context.topics_view()
        hash_value = metadata_hash(topology, topics)
        if hash_value != before.metadata_hash:
            change = RECOMPUTE
        configured = self._configured(group_id, topology, topics, hash_value, before.topology)
        validated = topology.epoch if configured.ready else -1
        if configured.ready and configured.subtopologies is not None:
            for kind in TASK_KINDS:
                check_owned_tasks(configured.subtopologies, request.get(kind))
        if request.get("task_offsets") is not None or request.get("task_end_offsets") is not None:
            known = self.task_offsets.setdefault(group_id, {})
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
            if not same_tasks(target, updated.assigned):
                change = REFINED
        epoch = before.group_epoch
        if change != NONE:
            epoch += 1
            emit(group, records, metadata_record(group, epoch, hash_value, validated, configs))
        if before.state == EMPTY and settings.streams_initial_rebalance_delay_ms > 0:
            self._arm_initial_delay(group_id, settings.streams_initial_rebalance_delay_ms)
        target_epoch, targets = self._target(
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
                self._arm_rebalance(group_id, reconciled)
            after = reconciled
        self._arm_session(group_id, member_id, settings.streams_session_timeout_ms)
        live = self.groups.get(group_id) or group
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

    def _member_for(
        self, group: StreamsGroup, request: dict[str, Any], records: list[Record]
    ) -> tuple[StreamsMember, StreamsMember | None]:
        """The member as stored (or new), and the static member it replaces if any."""
        member_id, epoch = request["member_id"], request["member_epoch"]
        instance_id = request.get("instance_id")
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if epoch != 0:
                    raise unknown_member(group.group_id, member_id)
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
            self.remove_member(group, static.member_id, records)
            emit(group, records, member_record(group.group_id, member))
            emit(group, records, target_record(group.group_id, member_id, target))
            emit(group, records, current_record(group.group_id, member))
            self._cancel_timers(group.group_id, static.member_id)
            return member, static if static.member_id != member_id else None
        static = static_of(group, member_id, instance_id)
        check_epoch(static, request)
        return static, None

    def _topology(
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
        cached = self.configured.get(group_id)
        if (
            stored is not None
            and cached is not None
            and cached.epoch == topology.epoch
            and cached.metadata_hash == hash_value
        ):
            return cached
        counts = {name: count for name, (_id, count) in topics.items()}
        configured = configure(topology, counts, hash_value)
        self.configured[group_id] = configured
        return configured

    def _target(
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
        if self.context.has_timer(_initial_delay_timer(group.group_id)):
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
        interval = self.context.config.timeouts(group.group_id).streams_assignment_interval_ms
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
            offsets = self.task_offsets.get(group.group_id, {})
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
        self._write_target(group, targets, records)
        emit(group, records, target_epoch_record(group.group_id, epoch, now))
        return epoch, targets

    # -- timers ----------------------------------------------------------------------

    def _arm_initial_delay(self, group_id: str, delay_ms: int) -> None:
        key = _initial_delay_timer(group_id)
        if self.context.has_timer(key):
            return

        def assign_now() -> Result[None]:
            live = self.groups.get(group_id)
            if live is None or not live.members or live.group_epoch <= live.assignment_epoch:
                return Result()
            configured = self.configured.get(group_id)
            if configured is None:
                return Result()
            group = live.copy()
            records: list[Record] = []
            self._target(
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

        self.context.schedule(key, delay_ms, assign_now)

    # -- leaving and being fenced -----------------------------------------------------

    def _leave(self, request: dict[str, Any]) -> Result[dict[str, Any]]:
        """Epoch -1 leaves; a static member leaves with -2 for a while, keeping its place
        and its tasks (their epochs reset) until it comes back or its session runs out."""
        group_id, member_id, epoch = (
            request["group_id"],
            request["member_id"],
            request["member_epoch"],
        )
        live = self.groups.get(group_id)
        if live is None:
            other = self.context.held_elsewhere(group_id, self.kind)
            message = not_of_kind(group_id, self.kind) if other else not_found(group_id)
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
                raise unknown_member(group_id, member_id)
            return Result(self._fence_records(group, member_id), response)
        static = static_of(group, member_id, instance_id)
        if epoch == STATIC_LEAVE_EPOCH:
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
        return Result(self._fence_records(group, member_id), response)

    def _fence_records(self, group: StreamsGroup, member_id: str) -> list[Record]:
        """The member is removed and the group moves to a new epoch: the next heartbeat
        assigns its tasks to the others."""
        records = self.member_tombstones(group.group_id, member_id)
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
        self._cancel_timers(group.group_id, member_id)
        self.task_offsets.get(group.group_id, {}).pop(member_id, None)
        return records

    def _fence(self, group_id: str, member_id: str, epoch: int | None) -> Result[None]:
        live = self.groups.get(group_id)
        member = live.members.get(member_id) if live is not None else None
        if live is None or member is None:
            return Result()
        if epoch is not None and member.member_epoch != epoch:
            return Result()
        return Result(self._fence_records(live, member_id))

    # -- timers: a member's session (`streams.session.timeout.ms`), and its rebalance
    # timeout while it has tasks to revoke

    def _session_expired(self, group_id: str, member_id: str) -> Result[None]:
        return self._fence(group_id, member_id, None)

    def _arm_rebalance(self, group_id: str, member: StreamsMember) -> None:
        key = f"strevoke:{group_id}:{member.member_id}"
        if member.state != UNREVOKED_TASKS:
            self.context.cancel(key)
            return
        member_id, epoch = member.member_id, member.member_epoch

        def revocation_expired() -> Result[None]:
            return self._fence(group_id, member_id, epoch)

        self.context.schedule(key, max(member.rebalance_timeout_ms, 0), revocation_expired)

    def _cancel_timers(self, group_id: str, member_id: str) -> None:
        for timer in ("stsession", "strevoke"):
            self.context.cancel(f"{timer}:{group_id}:{member_id}")

    def arm_timers(self, group: StreamsGroup, member: StreamsMember) -> None:
        timeout = self.context.config.timeouts(group.group_id).streams_session_timeout_ms
        self._arm_session(group.group_id, member.member_id, timeout)
        self._arm_rebalance(group.group_id, member)

    # -- what the other group APIs ask -----------------------------------------------

    def tombstones(self, group: StreamsGroup) -> list[Record]:
        return group_tombstones(group)

    def described(self, group: StreamsGroup) -> dict[str, Any]:
        configured = self.configured.get(group.group_id)
        return admin.described(group, configured, self.task_offsets.get(group.group_id, {}))

    def commit_error(self, group: StreamsGroup, request: dict[str, Any]) -> ErrorCode:
        return admin.commit_error(group, request)

    def fetch_error(self, group: StreamsGroup, member_id: str | None, epoch: int) -> ErrorCode:
        return admin.fetch_error(group, member_id, epoch)

    def subscribed_topics(self, group: StreamsGroup) -> set[str]:
        return admin.subscribed_topics(group)


def _initial_delay_timer(group_id: str) -> str:
    return f"stinitial:{group_id}"
