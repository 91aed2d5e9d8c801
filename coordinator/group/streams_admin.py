"""Streams groups as the other group APIs see them: StreamsGroupDescribe, who may
commit and fetch their offsets, and which topics OffsetDelete may not touch.

Offsets of a streams group are committed by its members (TxnOffsetCommit under
exactly-once, OffsetCommit otherwise) at their member epoch; a member a step behind
may still commit the partitions of tasks it was given at or before its epoch. While
the group has no members, anyone may commit (an admin resetting offsets).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from odradek.coordinator.group import streams_configs
from odradek.coordinator.group.streams import EMPTY, StreamsGroup, StreamsMember
from odradek.coordinator.group.streams_configs import MemberTaskOffsets
from odradek.coordinator.group.streams_records import Subtopology, TargetTasks, Tasks, TopicInfo
from odradek.coordinator.group.streams_topics import ConfiguredTopology, InternalTopic
from odradek.protocol.errors import ErrorCode


def described(
    group: StreamsGroup,
    configured: ConfiguredTopology | None,
    offsets: Mapping[str, MemberTaskOffsets],
) -> dict[str, Any]:
    """The group as StreamsGroupDescribe gives it: `configured`, its topology as set
    against the topics, and `offsets`, the task offsets each member reported."""
    return {
        "group_id": group.group_id,
        "group_state": group.state,
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "topology": _described_topology(group, configured),
        "members": [
            _described_member(m, group.target.get(m.member_id), offsets.get(m.member_id))
            for m in group.members.values()
        ],
    }


def commit_error(group: StreamsGroup, request: dict[str, Any]) -> ErrorCode:
    """Why these offsets may not be committed (none: they may). `request` as
    GroupShard.commit_offsets takes it."""
    member_id, epoch = request["member_id"], request["generation"]
    transactional = request.get("producer") is not None
    if epoch < 0 and not group.members:
        return ErrorCode.none
    if transactional and epoch == -1 and not member_id and request["group_instance_id"] is None:
        return ErrorCode.none
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.unknown_member_id
    if not transactional and request.get("version", 9) < 9:
        # "OffsetCommit version 9 or above must be used by members using the streams
        # group protocol"
        return ErrorCode.unsupported_version
    if epoch == member.member_epoch:
        return ErrorCode.none
    stale = ErrorCode.illegal_generation if transactional else ErrorCode.stale_member_epoch
    if epoch > member.member_epoch:
        return stale
    sources = group.topology.source_topic_map() if group.topology is not None else {}
    for topic, partition in request["offsets"]:
        if not _assigned_by(member, sources.get(topic), partition, epoch):
            return stale
    return ErrorCode.none


def fetch_error(group: StreamsGroup, member_id: str | None, epoch: int) -> ErrorCode:
    if member_id is None and epoch < 0:
        return ErrorCode.none
    member = group.members.get(member_id or "")
    if member is None:
        return ErrorCode.unknown_member_id
    return ErrorCode.none if epoch == member.member_epoch else ErrorCode.stale_member_epoch


def subscribed_topics(group: StreamsGroup) -> set[str]:
    """The topics OffsetDelete may not touch: those the group reads while it has members."""
    if group.state == EMPTY or group.topology is None:
        return set()
    return set(group.topology.source_topic_map())


def _assigned_by(member: StreamsMember, sub: str | None, partition: int, epoch: int) -> bool:
    """Was the task of this partition given to the member at or before `epoch`?"""
    if sub is None:
        return False
    for held in (member.assigned, member.pending_revocation):
        assigned_at = held.active.get(sub, {}).get(partition)
        if assigned_at is not None:
            return epoch >= assigned_at
    return False


def _task_ids(tasks: Tasks) -> list[dict[str, Any]]:
    return [{"subtopology_id": s, "partitions": sorted(tasks[s])} for s in sorted(tasks)]


def _assignment(active: Tasks, standby: Tasks, warmup: Tasks) -> dict[str, Any]:
    return {
        "active_tasks": _task_ids(active),
        "standby_tasks": _task_ids(standby),
        "warmup_tasks": _task_ids(warmup),
    }


def _described_member(
    member: StreamsMember, target: TargetTasks | None, offsets: MemberTaskOffsets | None
) -> dict[str, Any]:
    target = target or TargetTasks()
    offsets = offsets or MemberTaskOffsets()
    return {
        "member_id": member.member_id,
        "member_epoch": member.member_epoch,
        "instance_id": member.instance_id,
        "rack_id": member.rack_id,
        "client_id": member.client_id,
        "client_host": member.client_host,
        "topology_epoch": member.topology_epoch,
        "process_id": member.process_id,
        "user_endpoint": None
        if member.user_endpoint is None
        else {"host": member.user_endpoint[0], "port": member.user_endpoint[1]},
        "client_tags": [{"key": k, "value": v} for k, v in member.client_tags],
        "task_offsets": streams_configs.described(offsets.offsets),
        "task_end_offsets": streams_configs.described(offsets.end_offsets),
        "assignment": _assignment(
            member.assigned.active_ids(), member.assigned.standby, member.assigned.warmup
        ),
        "target_assignment": _assignment(target.active, target.standby, target.warmup),
        "is_classic": False,
    }


def _topic_info(topic: TopicInfo | InternalTopic) -> dict[str, Any]:
    return {
        "name": topic.name,
        "partitions": topic.partitions,
        "replication_factor": topic.replication_factor,
        "topic_configs": [{"key": k, "value": v} for k, v in topic.configs],
    }


def _described_topology(group: StreamsGroup, configured: ConfiguredTopology | None) -> Any:
    """As configured against the topics when the group is ready, else as the members
    gave it."""
    if configured is not None and configured.ready and configured.subtopologies is not None:
        return {
            "epoch": configured.epoch,
            "subtopologies": [
                {
                    "subtopology_id": sub_id,
                    "source_topics": sorted(sub.source_topics),
                    "repartition_sink_topics": sorted(sub.repartition_sinks),
                    "state_changelog_topics": [
                        _topic_info(t) for t in sorted(sub.changelogs, key=lambda t: t.name)
                    ],
                    "repartition_source_topics": [
                        _topic_info(t)
                        for t in sorted(sub.repartition_sources, key=lambda t: t.name)
                    ],
                }
                for sub_id, sub in sorted(configured.subtopologies.items())
            ],
        }
    if group.topology is None:
        return None
    return {
        "epoch": group.topology.epoch,
        "subtopologies": [
            _described_subtopology(sub)
            for sub in sorted(group.topology.subtopologies, key=lambda s: s.subtopology_id)
        ],
    }


def _described_subtopology(sub: Subtopology) -> dict[str, Any]:
    return {
        "subtopology_id": sub.subtopology_id,
        "source_topics": sorted(sub.source_topics),
        "repartition_sink_topics": sorted(sub.repartition_sink_topics),
        "state_changelog_topics": [
            _topic_info(t) for t in sorted(sub.state_changelog_topics, key=lambda t: t.name)
        ],
        "repartition_source_topics": [
            _topic_info(t) for t in sorted(sub.repartition_source_topics, key=lambda t: t.name)
        ],
    }
