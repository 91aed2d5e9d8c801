"""StreamsGroupHeartbeat (88), v0-v1: membership of a streams group (KIP-1071).

A Kafka Streams client joins with epoch 0 and its topology, then heartbeats with its
epoch and, when they changed, the tasks it owns; the answer carries its epoch, the
tasks it should own when they changed, statuses (missing topics, a delayed
assignment, a stale topology, a shutdown asked for), and the endpoint-to-partitions
map for interactive queries when its endpoint epoch is behind. The group's shard does
the work (coordinator/group/streams_groups.py). Internal topics the topology needs
and that are missing are created here, as Kafka's broker does, with the partitions
and configs the coordinator worked out. Checked first, as on Kafka: the protocol is
enabled (`group.coordinator.rebalance.protocols` has "streams"), the group may be READ,
the topology names no Kafka-internal topic and no invalid name
(STREAMS_INVALID_TOPOLOGY), its topics may be DESCRIBEd; internal topics are created
only with CREATE on the cluster or on them (the status says which may not be).

v1 (KIP-1331) asks the same; its answer carries the acceptable recovery lag as an int64
(v0's int32 field is left 0, as Kafka leaves it) and `topologyDescriptionRequired`,
always false here: Odradek has no topology-description plugin, as Kafka on its default
configuration (streams_group_topology_description_update.py). Only a v1 member is told
of client tags the group's `rack.aware.assignment.tags` asks for and it lacks
(MISSING_CLIENT_TAGS); the shard learns the version as the request's "api_version".
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from odradek.broker.dataplane.topics import INTERNAL_TOPICS, TopicError, check_topic_name
from odradek.broker.handlers.authorization import acls_enabled, allowed_names, may_create_topic
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.groups_common import client_host, on_group_shard
from odradek.broker.security.resources import Operation, ResourceType
from odradek.broker.settings import topic_configs
from odradek.broker.settings.features import STREAMS_VERSION
from odradek.coordinator.group import streams_records as sr
from odradek.coordinator.group.heartbeat_errors import HeartbeatError
from odradek.coordinator.group.streams_heartbeat import validate
from odradek.coordinator.group.streams_topics import MISSING_INTERNAL_TOPICS, InternalTopic
from odradek.protocol.errors import ErrorCode
from odradek.protocol.schemas.streams_group_heartbeat.v1.request import (
    StreamsGroupHeartbeatRequest,
    TaskIds,
    TopicInfo,
    Topology,
)

MIN_VERSION, MAX_VERSION = 0, 1
# v0 (kio's) and v1 have the same fields: typed as the newest

# topic -> (why its creation failed, until when that is told)
_creation_errors: dict[str, tuple[str, float]] = {}


def streams_enabled(ctx: RequestContext) -> bool:
    protocols = ctx.services.config.group_coordinator_rebalance_protocols
    return "streams" in {p.strip() for p in protocols.split(",")}


async def handle(ctx: RequestContext, request: StreamsGroupHeartbeatRequest) -> Reply:
    if not streams_enabled(ctx):
        return error_reply(ErrorCode.unsupported_version, "The version of API is not supported.")
    if ctx.services.features.finalized.level(STREAMS_VERSION) == 0:
        return error_reply(ErrorCode.unsupported_version, None)
    if not ctx.allowed(Operation.READ, ResourceType.GROUP, request.group_id):
        return error_reply(ErrorCode.group_authorization_failed, None)
    topology = request.topology
    if topology is not None:
        problem = _topology_topics_problem(ctx, topology)
        if problem is not None:
            return problem
    details = _details(ctx, request)
    try:
        validate(details)
    except HeartbeatError as exc:
        return error_reply(exc.code, str(exc))
    code, answer = await on_group_shard(
        ctx, request.group_id, lambda s: s.streams_group_heartbeat(details)
    )
    if code:
        return error_reply(code, None)
    if answer["error_code"]:
        return error_reply(answer["error_code"], answer.get("error_message"))
    statuses = [list(s) for s in answer["status"]]
    if answer.get("internal_topics"):
        await _create_internal(ctx, request.group_id, answer["internal_topics"], statuses)
    return _reply(answer, statuses, ctx.version)


def _topology_topics_problem(ctx: RequestContext, topology: Topology) -> Reply | None:
    required: list[str] = []
    for sub in topology.subtopologies:
        for name in (
            *sub.source_topics,
            *sub.repartition_sink_topics,
            *(t.name for t in sub.repartition_source_topics),
            *(t.name for t in sub.state_changelog_topics),
        ):
            if name not in required:
                required.append(name)
    prohibited = [n for n in required if n in INTERNAL_TOPICS]
    if prohibited:
        return error_reply(
            ErrorCode.streams_invalid_topology,
            f"Use of Kafka internal topics {','.join(prohibited)} in a Kafka Streams topology "
            "is prohibited.",
        )
    invalid = [n for n in required if not _valid_name(n)]
    if invalid:
        return error_reply(
            ErrorCode.streams_invalid_topology,
            f"Topic names {','.join(invalid)} are not valid topic names.",
        )
    if required and acls_enabled(ctx):
        described = allowed_names(ctx, Operation.DESCRIBE, ResourceType.TOPIC, required)
        if len(described) < len(set(required)):
            return error_reply(ErrorCode.topic_authorization_failed, None)
    return None


def _valid_name(name: str) -> bool:
    try:
        check_topic_name(name)
    except TopicError:
        return False
    return True


def _task_list(tasks: Iterable[TaskIds] | None) -> list[tuple[str, tuple[int, ...]]] | None:
    if tasks is None:
        return None
    return [(t.subtopology_id, tuple(t.partitions)) for t in tasks]


def _topic_infos(topics: Iterable[TopicInfo]) -> tuple[sr.TopicInfo, ...]:
    return tuple(
        sr.TopicInfo(
            t.name,
            t.partitions,
            t.replication_factor,
            tuple((c.key, c.value) for c in t.topic_configs),
        )
        for t in topics
    )


def decode_topology(topology: Topology) -> sr.Topology:
    return sr.Topology(
        topology.epoch,
        tuple(
            sr.Subtopology(
                s.subtopology_id,
                tuple(s.source_topics),
                tuple(s.source_topic_regex),
                _topic_infos(s.state_changelog_topics),
                tuple(s.repartition_sink_topics),
                _topic_infos(s.repartition_source_topics),
                tuple(
                    sr.CopartitionGroup(
                        tuple(g.source_topics),
                        tuple(g.source_topic_regex),
                        tuple(g.repartition_source_topics),
                    )
                    for g in s.copartition_groups
                ),
            )
            for s in topology.subtopologies
        ),
    )


def _details(ctx: RequestContext, request: StreamsGroupHeartbeatRequest) -> dict[str, Any]:
    endpoint = request.user_endpoint
    tags = request.client_tags
    offsets = request.task_offsets
    return {
        "group_id": request.group_id,
        "member_id": request.member_id,
        "member_epoch": request.member_epoch,
        "endpoint_information_epoch": request.endpoint_information_epoch,
        "instance_id": request.instance_id,
        "rack_id": request.rack_id,
        "rebalance_timeout_ms": int(request.rebalance_timeout.total_seconds() * 1000),
        "topology": None if request.topology is None else decode_topology(request.topology),
        "active_tasks": _task_list(request.active_tasks),
        "standby_tasks": _task_list(request.standby_tasks),
        "warmup_tasks": _task_list(request.warmup_tasks),
        "process_id": request.process_id,
        "user_endpoint": None if endpoint is None else (endpoint.host, int(endpoint.port)),
        "client_tags": None if tags is None else tuple((t.key, t.value) for t in tags),
        "task_offsets": None
        if offsets is None
        else [(o.subtopology_id, o.partition, o.offset) for o in offsets],
        "task_end_offsets": None
        if request.task_end_offsets is None
        else [(o.subtopology_id, o.partition, o.offset) for o in request.task_end_offsets],
        "shutdown_application": request.shutdown_application,
        "client_id": ctx.header.client_id or "",
        "client_host": client_host(ctx),
        "api_version": ctx.version,
    }


async def _create_internal(
    ctx: RequestContext, group_id: str, topics: tuple[InternalTopic, ...], statuses: list[list[Any]]
) -> None:
    """Create what is missing, as Kafka's broker does after the coordinator answered;
    why a topic may not be created is added to the status that names it missing."""
    missing = next((s for s in statuses if s[0] == MISSING_INTERNAL_TOPICS), None)
    refused = [t.name for t in topics if not may_create_topic(ctx, t.name)]
    if refused:
        note = f"Unauthorized to CREATE on topics {', '.join(refused)}."
        if missing is not None:
            missing[1] += "; " + note
        else:
            statuses.append([MISSING_INTERNAL_TOPICS, note])
        return
    now = time.monotonic()
    if missing is not None:
        failed = [
            f"{name} ({why})"
            for name, (why, until) in _creation_errors.items()
            if until > now and name in {t.name for t in topics}
        ]
        if failed:
            missing[1] += f"; Creation failed: {', '.join(failed)}."
    remember = 2 * ctx.services.group_settings(group_id).streams_heartbeat_interval_ms
    for topic in topics:
        if ctx.services.topics.get(topic.name) is not None:
            continue
        configs = dict(topic.configs)
        try:
            topic_configs.validate(configs)
            ctx.services.topics.validate_new(topic.name, topic.partitions, configs)
            await ctx.services.create_topic(
                topic.name, topic.partitions, configs, topic.replication_factor or -1
            )
        except TopicError as exc:
            if exc.code != ErrorCode.topic_already_exists:
                why = ErrorCode(exc.code).name.upper()
                _creation_errors[topic.name] = (f"{why}: {exc.message}", now + remember / 1000)


def error_reply(code: int, message: str | None) -> dict[str, Any]:
    """A refusal; the acceptable recovery lag is left to each version's default (v0's
    int32 0, v1's int64 -1), as Kafka leaves it."""
    return {
        "throttle_time": 0,
        "error_code": code,
        "error_message": message,
        "member_id": "",
        "member_epoch": 0,
        "heartbeat_interval": 0,
        "task_offset_interval": 0,
        "status": [],
        "active_tasks": None,
        "standby_tasks": None,
        "warmup_tasks": None,
        "endpoint_information_epoch": 0,
        "partitions_by_user_endpoint": None,
    }


def _tasks(listed: list[tuple[str, list[int]]]) -> list[dict[str, Any]]:
    return [{"subtopology_id": sub, "partitions": parts} for sub, parts in listed]


def _topic_partitions(listed: list[tuple[str, list[int]]]) -> list[dict[str, Any]]:
    return [{"topic": topic, "partitions": parts} for topic, parts in listed]


def _reply(answer: dict[str, Any], statuses: list[list[Any]], version: int) -> dict[str, Any]:
    reply = {
        **error_reply(ErrorCode.none, None),
        "member_id": answer["member_id"],
        "member_epoch": answer["member_epoch"],
        "heartbeat_interval": answer.get("heartbeat_interval_ms", 0),
        "task_offset_interval": answer.get("task_offset_interval_ms", 0),
        "status": [{"status_code": code, "status_detail": detail} for code, detail in statuses],
        "endpoint_information_epoch": answer.get("endpoint_information_epoch", 0),
    }
    if version >= 1 and "acceptable_recovery_lag" in answer:  # not told on leaving
        reply["acceptable_recovery_lag"] = answer["acceptable_recovery_lag"]
    tasks = answer.get("tasks")
    if tasks is not None:
        reply["active_tasks"], reply["standby_tasks"], reply["warmup_tasks"] = (
            _tasks(t) for t in tasks
        )
    endpoints = answer.get("endpoints")
    if endpoints is not None:
        reply["partitions_by_user_endpoint"] = [
            {
                "user_endpoint": {"host": host, "port": port},
                "active_partitions": _topic_partitions(active),
                "standby_partitions": _topic_partitions(standby),
            }
            for host, port, active, standby in endpoints
        ]
    return reply
