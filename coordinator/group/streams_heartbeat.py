"""What a StreamsGroupHeartbeat is checked against before and while it changes its
group, in Kafka's words, and the parts of its answer that are plain functions of the
group: the tasks a member gets and the endpoint-to-partitions map for interactive
queries."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from odradek.coordinator.group.heartbeat_errors import HeartbeatError, fenced
from odradek.coordinator.group.streams import StreamsGroup, StreamsMember
from odradek.coordinator.group.streams_records import AssignedTasks, TargetTasks, Tasks, Topology
from odradek.coordinator.group.streams_topics import (
    ConfiguredSubtopology,
    ConfiguredTopology,
    java_hash_order,
)
from odradek.protocol.errors import ErrorCode

LEAVE_EPOCH, STATIC_LEAVE_EPOCH = -1, -2
TASK_KINDS = ("active_tasks", "standby_tasks", "warmup_tasks")
# what the heartbeat answers with: (host, port, active, standby), each [(topic, [partitions])]
Endpoint = tuple[str, int, list[tuple[str, list[int]]], list[tuple[str, list[int]]]]


def _invalid(message: str) -> HeartbeatError:
    return HeartbeatError(ErrorCode.invalid_request, message)


def _blank(value: str | None) -> bool:
    """Java's `value.trim().isEmpty()`: nothing but characters up to U+0020."""
    return value is not None and all(ord(c) <= 0x20 for c in value)


def validate(request: Mapping[str, Any]) -> None:
    """The checks Kafka's group coordinator makes before it looks at the group."""
    topology: Topology | None = request.get("topology")
    if topology is not None and any(s.source_topic_regex for s in topology.subtopologies):
        raise _invalid("Regular expressions for source topics are not supported yet.")
    for name, message in (
        ("member_id", "MemberId can't be empty."),
        ("group_id", "GroupId can't be empty."),
        ("instance_id", "InstanceId can't be empty."),
        ("rack_id", "RackId can't be empty."),
    ):
        if _blank(request.get(name)):
            raise _invalid(message)
    epoch = request["member_epoch"]
    if epoch == 0:
        if request.get("rebalance_timeout_ms", -1) == -1:
            raise _invalid("RebalanceTimeoutMs must be provided in first request.")
        for kind, label in zip(
            TASK_KINDS, ("ActiveTasks", "StandbyTasks", "WarmupTasks"), strict=True
        ):
            if request.get(kind) is None or request[kind]:
                raise _invalid(f"{label} must be empty when (re-)joining.")
        if topology is None:
            raise _invalid("Topology must be non-null when (re-)joining.")
        for sub in topology.subtopologies:
            for topic in sub.state_changelog_topics:
                if topic.partitions != 0:
                    raise HeartbeatError(
                        ErrorCode.streams_invalid_topology,
                        f"Changelog topic {topic.name} must have an undefined partition count, "
                        f"but it is set to {topic.partitions}.",
                    )
    elif epoch == STATIC_LEAVE_EPOCH:
        if request.get("instance_id") is None:
            raise _invalid("InstanceId can't be null.")
    elif epoch < STATIC_LEAVE_EPOCH:
        raise _invalid(f"MemberEpoch is {epoch}, but must be greater than or equal to -2.")
    given = [request.get(kind) is not None for kind in TASK_KINDS]
    if any(given) and not all(given):
        raise _invalid("If one task-type is non-null, all must be non-null.")
    if epoch != 0 and topology is not None:
        raise _invalid("Topology can only be provided when (re-)joining.")


def tasks_of(listed: list[tuple[str, tuple[int, ...]]] | None) -> dict[str, frozenset[int]]:
    """Owned tasks as the request lists them, per subtopology."""
    tasks: dict[str, frozenset[int]] = {}
    for sub, parts in listed or ():
        tasks[sub] = tasks.get(sub, frozenset()) | frozenset(parts)
    return tasks


def check_epoch(member: StreamsMember, request: Mapping[str, Any]) -> None:
    epoch = request["member_epoch"]
    if epoch == 0:
        return
    if epoch > member.member_epoch:
        raise fenced("streams", epoch, member.member_epoch)
    if epoch < member.member_epoch:
        held = member.assigned
        contained = all(
            listed is not None and _contains(tasks_of(listed), mine)
            for listed, mine in (
                (request.get("active_tasks"), held.active_ids()),
                (request.get("standby_tasks"), held.standby),
                (request.get("warmup_tasks"), held.warmup),
            )
        )
        if epoch != member.previous_member_epoch or not contained:
            raise fenced("streams", epoch, member.member_epoch)


def static_of(group: StreamsGroup, member_id: str, instance_id: str) -> StreamsMember:
    """The static member of this instance id, which must have this member id."""
    static = group.static_member(instance_id)
    if static is None:
        raise HeartbeatError(ErrorCode.unknown_member_id, f"Instance id {instance_id} is unknown.")
    if static.member_id != member_id:
        raise HeartbeatError(
            ErrorCode.fenced_instance_id,
            f"Static member {member_id} with instance id {instance_id} was fenced by member "
            f"{static.member_id}.",
        )
    return static


def epoch_relevant(before: StreamsMember, after: StreamsMember) -> bool:
    """For a static member, only these changes move the group to a new epoch."""
    return (
        before.topology_epoch != after.topology_epoch
        or before.rack_id != after.rack_id
        or dict(before.client_tags) != dict(after.client_tags)
        or before.process_id != after.process_id
    )


def same_tasks(target: TargetTasks, assigned: AssignedTasks) -> bool:
    return (
        dict(target.active) == dict(assigned.active_ids())
        and dict(target.standby) == dict(assigned.standby)
        and dict(target.warmup) == dict(assigned.warmup)
    )


def _contains(owned: Tasks, assigned: Tasks) -> bool:
    return all(sub in assigned and parts <= assigned[sub] for sub, parts in owned.items())


def check_owned_tasks(
    subtopologies: Mapping[str, ConfiguredSubtopology],
    listed: list[tuple[str, tuple[int, ...]]] | None,
) -> None:
    for sub_id, parts in listed or ():
        sub = subtopologies.get(sub_id)
        if sub is None:
            raise _invalid(f"Subtopology {sub_id} does not exist in the topology.")
        for partition in parts:
            if not 0 <= partition < sub.tasks:
                raise _invalid(
                    f"Task {partition} for subtopology {sub_id} is invalid. Number of tasks for "
                    f"this subtopology: {sub.tasks}"
                )


def with_request(member: StreamsMember, request: Mapping[str, Any], joining: bool) -> StreamsMember:
    """The member with what the request changes (null fields change nothing; a joining
    member's endpoint is the request's, even none)."""
    changes: dict[str, Any] = {
        "client_id": request.get("client_id", member.client_id),
        "client_host": request.get("client_host", member.client_host),
    }
    for name in ("instance_id", "rack_id", "process_id", "client_tags"):
        if request.get(name) is not None:
            changes[name] = request[name]
    if request.get("rebalance_timeout_ms", -1) != -1:
        changes["rebalance_timeout_ms"] = request["rebalance_timeout_ms"]
    if request.get("topology") is not None:
        changes["topology_epoch"] = request["topology"].epoch
    if joining or request.get("user_endpoint") is not None:
        changes["user_endpoint"] = request.get("user_endpoint")
    return dataclasses.replace(member, **changes)


def endpoint_changed(before: StreamsMember | None, after: StreamsMember) -> bool:
    had = before.user_endpoint if before is not None else None
    return had != after.user_endpoint


def task_ids(tasks: Tasks) -> list[tuple[str, list[int]]]:
    return [(sub, sorted(tasks[sub])) for sub in java_hash_order(sorted(tasks))]


def endpoints_of(
    group: StreamsGroup,
    member: StreamsMember,
    replaced: StreamsMember | None,
    configured: ConfiguredTopology,
    partitions: Mapping[str, int],
) -> list[Endpoint]:
    """Each member's endpoint with the partitions its active and its standby or warm-up
    tasks read, the heartbeating member last (as Kafka lists them)."""
    skip = {member.member_id, replaced.member_id if replaced is not None else None}
    others = [m for m in group.members.values() if m.member_id not in skip]
    found = []
    for each in [*others, member]:
        if each.user_endpoint is None:
            continue
        host, port = each.user_endpoint
        standby = {
            sub: each.assigned.standby.get(sub, frozenset())
            | each.assigned.warmup.get(sub, frozenset())
            for sub in {*each.assigned.standby, *each.assigned.warmup}
        }
        found.append(
            (
                host,
                port,
                _topic_partitions(each.assigned.active_ids(), configured, partitions),
                _topic_partitions(standby, configured, partitions),
            )
        )
    return found


def _topic_partitions(
    tasks: Tasks, configured: ConfiguredTopology, partitions: Mapping[str, int]
) -> list[tuple[str, list[int]]]:
    subtopologies = configured.subtopologies or {}
    result = []
    for sub_id in java_hash_order(sorted(tasks)):
        sub = subtopologies.get(sub_id)
        if sub is None:
            continue
        names = {*sub.source_topics, *(t.name for t in sub.repartition_sources)}
        for topic in java_hash_order(sorted(names)):
            count = partitions.get(topic, 0)
            parts = sorted(p for p in tasks[sub_id] if p < count)
            if parts:
                result.append((topic, parts))
    return result


MISSING_CLIENT_TAGS = 6  # a status v0 clients do not know: told from v1 on


def missing_client_tags(
    required: tuple[str, ...], member: StreamsMember, api_version: int
) -> tuple[int, str] | None:
    """The status of a v1+ member whose client tags lack some that the group's
    rack-aware assignment tags name, in Kafka's words (the missing ones as Java lists
    them)."""
    if api_version < 1:
        return None
    keys = {key for key, _value in member.client_tags}
    missing = [tag for tag in required if tag not in keys]
    if not missing:
        return None
    return (
        MISSING_CLIENT_TAGS,
        f"Missing required client tags for rack-aware standby assignment: "
        f"[{', '.join(missing)}]. Configure them via 'client.tag.<tagKey>' in your "
        "Streams config.",
    )
