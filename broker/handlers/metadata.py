"""Metadata (3), v0-v12.

- topics = null (v1+) lists every topic; an empty list lists none.
- Unknown topics are created when `auto.create.topics.enable` is on and the
  request allows it (always before v4, `allow_auto_topic_creation` from v4),
  with `num.partitions` partitions; otherwise UNKNOWN_TOPIC_OR_PARTITION.
- v10+ may name topics by id; an unknown id answers UNKNOWN_TOPIC_ID.
- One broker: it leads every partition at leader epoch 0 and is the controller.
- With ACLs: a full listing leaves out the topics the principal may not DESCRIBE;
  a named one answers TOPIC_AUTHORIZATION_FAILED (without saying whether it exists).
  Auto creation needs CREATE on the cluster or on the topic
  (TOPIC_AUTHORIZATION_FAILED otherwise).
- v8+: topic (and, v8-v10, cluster) authorized operations when asked for.
"""

from __future__ import annotations

from typing import Any

from broker.handlers.authorization import (
    NOT_REQUESTED,
    authorized_operations,
    cluster_authorized_operations,
    may_create_topic,
)
from broker.handlers.base import Reply, RequestContext
from broker.security.resources import Operation, ResourceType
from broker.topics import LEADER_EPOCH, Topic, TopicError, check_topic_name
from protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 12


def describe_topic(ctx: RequestContext, topic: Topic, with_operations: bool) -> dict[str, Any]:
    node = ctx.broker.config.node_id
    operations = NOT_REQUESTED
    if with_operations:
        operations = authorized_operations(ctx, ResourceType.TOPIC, topic.name)
    return {
        "error_code": 0,
        "name": topic.name,
        "topic_id": topic.topic_id,
        "is_internal": topic.is_internal,
        "partitions": [
            {
                "error_code": 0,
                "partition_index": p.index,
                "leader_id": node,
                "leader_epoch": LEADER_EPOCH,
                "replica_nodes": [node],
                "isr_nodes": [node],
                "offline_replicas": [],
            }
            for p in topic.partitions
        ],
        "topic_authorized_operations": operations,
    }


def _missing(name: str | None, code: ErrorCode, topic_id: Any = None) -> dict[str, Any]:
    return {"error_code": code, "name": name, "topic_id": topic_id, "partitions": []}


async def handle(ctx: RequestContext, request: Any) -> Reply:
    broker = ctx.broker
    config = broker.config
    allow_create = config.auto_create_topics and getattr(request, "allow_auto_topic_creation", True)
    requested = request.topics
    if ctx.version == 0 and not requested:
        requested = None  # v0: an empty list means every topic
    with_operations = getattr(request, "include_topic_authorized_operations", False)
    topics: list[dict[str, Any]] = []
    if requested is None:
        topics = [
            describe_topic(ctx, t, with_operations)
            for t in broker.topics
            if _describable(ctx, t.name)
        ]
    else:
        for entry in requested:
            name = entry.name
            topic_id = getattr(entry, "topic_id", None)
            if name is None:
                by_id = broker.topics.by_id(topic_id) if topic_id else None
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
            topic = broker.topics.get(name)
            if topic is None and allow_create and not may_create_topic(ctx, name):
                topics.append(_missing(name, ErrorCode.topic_authorization_failed))
                continue
            if topic is None and allow_create:
                try:
                    check_topic_name(name)
                    topic = await broker.create_topic(name, config.num_partitions, {})
                except TopicError as exc:
                    topics.append(_missing(name, ErrorCode(exc.code)))
                    continue
            if topic is None:
                topics.append(_missing(name, ErrorCode.unknown_topic_or_partition))
            else:
                topics.append(describe_topic(ctx, topic, with_operations))
    cluster_operations = NOT_REQUESTED
    if getattr(request, "include_cluster_authorized_operations", False):
        cluster_operations = cluster_authorized_operations(ctx)
    return {
        "throttle_time": 0,
        "brokers": [
            {
                "node_id": config.node_id,
                "host": ctx.listener.advertised_host,
                "port": ctx.listener.advertised_port,
                "rack": None,
            }
        ],
        "cluster_id": config.cluster_id,
        "controller_id": config.node_id,
        "topics": topics,
        "cluster_authorized_operations": cluster_operations,
    }


def _describable(ctx: RequestContext, name: str) -> bool:
    return ctx.allowed(Operation.DESCRIBE, ResourceType.TOPIC, name)
