"""Metadata (3), v0-v13.

- topics = null (v1+) lists every topic; an empty list lists none.
- Unknown topics are created when `auto.create.topics.enable` is on and the
  request allows it (always before v4, `allow_auto_topic_creation` from v4),
  with `num.partitions` partitions; otherwise UNKNOWN_TOPIC_OR_PARTITION. One another
  request is creating meanwhile answers LEADER_NOT_AVAILABLE, as Kafka's does.
- v10+ may name topics by id; an unknown id answers UNKNOWN_TOPIC_ID.
- One node of its own leads every partition at leader epoch 0 and is the controller.
  In a cluster: the unfenced brokers (their endpoints on the listener asked), and each
  partition's leader, epoch, replicas and ISR as this node's view of the cluster's
  metadata has them (LEADER_NOT_AVAILABLE while a partition has no leader).
- With ACLs: a full listing leaves out the topics the principal may not DESCRIBE;
  a named one answers TOPIC_AUTHORIZATION_FAILED (without saying whether it exists).
  Auto creation needs CREATE on the cluster or on the topic
  (TOPIC_AUTHORIZATION_FAILED otherwise).
- v8+: topic (and, v8-v10, cluster) authorized operations when asked for.
- v13 adds a top-level error code, always 0 here as on Kafka 4.4 (whose one use,
  REBOOTSTRAP_REQUIRED, a broker of its own never needs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kio.schema.metadata.v0.request import MetadataRequest as V0
from kio.schema.metadata.v1.request import MetadataRequest as V1
from kio.schema.metadata.v2.request import MetadataRequest as V2
from kio.schema.metadata.v3.request import MetadataRequest as V3
from kio.schema.metadata.v4.request import MetadataRequest as V4
from kio.schema.metadata.v5.request import MetadataRequest as V5
from kio.schema.metadata.v6.request import MetadataRequest as V6
from kio.schema.metadata.v7.request import MetadataRequest as V7
from kio.schema.metadata.v8.request import MetadataRequest as V8
from kio.schema.metadata.v9.request import MetadataRequest as V9
from kio.schema.metadata.v10.request import MetadataRequest as V10
from kio.schema.metadata.v11.request import MetadataRequest as V11
from kio.schema.metadata.v12.request import MetadataRequest as V12
from kio.schema.metadata.v13.request import MetadataRequest as V13

from odradek.broker.dataplane.topics import Partition, Topic, TopicError, check_topic_name
from odradek.broker.handlers.authorization import (
    NOT_REQUESTED,
    authorized_operations,
    cluster_authorized_operations,
    may_create_topic,
)
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation, ResourceType
from odradek.broker.slices import Slices
from odradek.protocol import messages
from odradek.protocol.encoder import EncodedArray, element_writer
from odradek.protocol.errors import ErrorCode

METADATA = 3
LEADER_NOT_AVAILABLE, NO_ERROR = ErrorCode.leader_not_available, ErrorCode.none

MIN_VERSION, MAX_VERSION = 0, 13

MetadataRequest = V0 | V1 | V2 | V3 | V4 | V5 | V6 | V7 | V8 | V9 | V10 | V11 | V12 | V13


def describe_partition(
    ctx: RequestContext,
    partition: Partition,
    live: frozenset[int] | None = None,
) -> dict[str, Any]:
    """Leader, replicas and ISR as the cluster's metadata has them (this node alone,
    on one node of its own); `live`: the live brokers' ids, if the caller has them."""
    replication = partition.replication
    node = ctx.services.config.node_id
    if replication is None:
        # its log directory failed: no leader, its one replica offline
        leader, epoch = (-1 if partition.offline else node), partition.leader_epoch
        replicas: tuple[int, ...] = (node,)
        isr = replicas
    else:
        leader, epoch = replication.leader_id, replication.leader_epoch
        replicas, isr = replication.replicas, replication.isr
    if live is None:
        live = frozenset(live_brokers(ctx))
    offline: Sequence[int] = ()
    if partition.offline or not live.issuperset(replicas):
        offline = [r for r in replicas if r not in live or (r == node and partition.offline)]
    return {
        "error_code": LEADER_NOT_AVAILABLE if leader < 0 else NO_ERROR,
        "partition_index": partition.index,
        "leader_id": leader,
        "leader_epoch": epoch,
        "replica_nodes": replicas,
        "isr_nodes": isr,
        "offline_replicas": offline,
    }


def live_brokers(ctx: RequestContext) -> dict[int, tuple[str, int, str | None]]:
    """node id -> (host, port, rack) of the unfenced brokers, on the request's listener."""
    return {node_id: found[:3] for node_id, found in brokers(ctx, False).items()}


def brokers(
    ctx: RequestContext, include_fenced: bool
) -> dict[int, tuple[str, int, str | None, bool]]:
    """node id -> (host, port, rack, fenced) of the registered brokers on the request's
    listener: the unfenced ones, and the fenced ones too if asked."""
    member = ctx.services.member
    if member is None:
        listener = ctx.listener
        address = (listener.advertised_host, listener.advertised_port, None, False)
        return {ctx.services.config.node_id: address}
    found = {}
    for node_id, registration in sorted(member.view.brokers.items()):
        fenced = registration.value.fenced
        if fenced and not include_fenced:
            continue
        for endpoint in registration.value.endpoints:
            if endpoint.listener == ctx.listener.name:
                found[node_id] = (endpoint.host, endpoint.port, registration.value.rack, fenced)
    return found


def describe_topic(
    ctx: RequestContext,
    topic: Topic,
    with_operations: bool,
    live: frozenset[int] | None = None,
) -> dict[str, Any]:
    operations = NOT_REQUESTED
    if with_operations:
        operations = authorized_operations(ctx, ResourceType.TOPIC, topic.name)
    if live is None:
        live = frozenset(live_brokers(ctx))
    return {
        "error_code": 0,
        "name": topic.name,
        "topic_id": topic.topic_id,
        "is_internal": topic.is_internal,
        "partitions": [describe_partition(ctx, p, live) for p in topic.partitions],
        "topic_authorized_operations": operations,
    }


async def describe_all(ctx: RequestContext, with_operations: bool) -> EncodedArray:
    """Every topic the principal may describe, each written to the wire form as it is
    described: with thousands of partitions this takes a while, so the event loop
    serves others between slices (broker/slices.py), and nothing is left to encode in one step."""
    live = frozenset(live_brokers(ctx))
    described = EncodedArray()
    append = element_writer(messages.response_class(METADATA, ctx.version), "topics")
    slices = Slices()
    for topic in list(ctx.services.topics):
        if _describable(ctx, topic.name):
            append(described, describe_topic(ctx, topic, with_operations, live))
        await slices.pause_if_due()
    return described


def _missing(name: str | None, code: ErrorCode, topic_id: Any = None) -> dict[str, Any]:
    return {"error_code": code, "name": name, "topic_id": topic_id, "partitions": []}


async def handle(ctx: RequestContext, request: MetadataRequest) -> Reply:
    services = ctx.services
    config = services.config
    allow_create = config.auto_create_topics and getattr(request, "allow_auto_topic_creation", True)
    requested = request.topics
    if ctx.version == 0 and not requested:
        requested = None  # v0: an empty list means every topic
    with_operations = getattr(request, "include_topic_authorized_operations", False)
    topics: list[dict[str, Any]] = []
    every_topic: EncodedArray | None = None
    if requested is None:
        every_topic = await describe_all(ctx, with_operations)
    else:
        for entry in requested:
            name = entry.name
            topic_id = getattr(entry, "topic_id", None)
            if name is None:
                by_id = services.topics.by_id(topic_id) if topic_id else None
                if by_id is None:
                    topics.append(_missing(None, ErrorCode.unknown_topic_id, topic_id))
                elif not _describable(ctx, by_id.name):
                    topics.append(_missing(None, ErrorCode.topic_authorization_failed, topic_id))
                else:
                    topics.append(describe_topic(ctx, by_id, with_operations))
                continue
            if not _describable(ctx, name):
                topics.append(_missing(name, ErrorCode.topic_authorization_failed))
                continue
            topic = services.topics.get(name)
            if topic is None and allow_create and not may_create_topic(ctx, name):
                topics.append(_missing(name, ErrorCode.topic_authorization_failed))
                continue
            if topic is None and allow_create:
                try:
                    check_topic_name(name)
                    topic = await services.create_topic(name, config.num_partitions, {})
                except TopicError as exc:  # another request is creating it: not led yet
                    already = exc.code == ErrorCode.topic_already_exists
                    topics.append(
                        _missing(name, LEADER_NOT_AVAILABLE if already else ErrorCode(exc.code))
                    )
                    continue
            if topic is None:
                topics.append(_missing(name, unknown_name_code(name)))
            else:
                topics.append(describe_topic(ctx, topic, with_operations))
    cluster_operations = NOT_REQUESTED
    if getattr(request, "include_cluster_authorized_operations", False):
        cluster_operations = cluster_authorized_operations(ctx)
    return {
        "throttle_time": 0,
        "brokers": [
            {"node_id": node_id, "host": host, "port": port, "rack": rack}
            for node_id, (host, port, rack) in live_brokers(ctx).items()
        ],
        "cluster_id": config.cluster_id,
        "controller_id": config.node_id,
        "topics": topics if every_topic is None else every_topic,
        "cluster_authorized_operations": cluster_operations,
        "error_code": ErrorCode.none,
    }


def _describable(ctx: RequestContext, name: str) -> bool:
    return ctx.allowed(Operation.DESCRIBE, ResourceType.TOPIC, name)


def unknown_name_code(name: str) -> ErrorCode:
    """A topic that does not exist: INVALID_TOPIC_EXCEPTION when no topic could have
    its name, as on Kafka."""
    try:
        check_topic_name(name)
    except TopicError:
        return ErrorCode.invalid_topic_exception
    return ErrorCode.unknown_topic_or_partition
