"""DescribeTopicPartitions (75), v0: the Admin client's describeTopics.

- The topics named (each once), or every topic when none is named, in name order.
- At most `response_partition_limit` partitions in all (at least 1, at most
  `max.request.partition.size.limit`). Where the answer stops short, `next_cursor`
  names the topic and partition to go on from; a request's `cursor` starts there
  (topics sorting before it are left out).
- A cursor whose topic is not among the topics named, or whose partition is negative,
  is INVALID_REQUEST for every topic named (no partitions).
- A named topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION
  where no topic could have its name); a full listing has no such entries.
- With ACLs: topics need DESCRIBE. A full listing leaves the others out; a named one is
  answered TOPIC_AUTHORIZATION_FAILED with no id, after the others. Described topics
  carry their authorized operations.
- Partitions: leader, epoch, replicas, ISR and offline replicas as Metadata gives them;
  the eligible leader replicas and the last known ELR are empty lists (no replica has
  left the ISR below min.insync.replicas: one node of its own never does).
"""

from __future__ import annotations

import uuid
from typing import Any

from kio.schema.describe_topic_partitions.v0.request import DescribeTopicPartitionsRequest

from odradek.broker.dataplane.topics import Topic
from odradek.broker.handlers.authorization import NOT_REQUESTED, authorized_operations
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.metadata import describe_partition, unknown_name_code
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 0

ZERO_UUID = uuid.UUID(int=0)


def _refused(names: list[str], code: ErrorCode, operations: int = NOT_REQUESTED) -> list[dict]:
    return [
        {
            "error_code": code,
            "name": name,
            "topic_id": ZERO_UUID,
            "is_internal": False,
            "partitions": [],
            "topic_authorized_operations": operations,
        }
        for name in names
    ]


def _topic(ctx: RequestContext, topic: Topic, start: int, limit: int) -> dict[str, Any]:
    partitions = []
    for partition in topic.partitions[start : start + limit]:
        described = describe_partition(ctx, partition)
        described["error_code"] = ErrorCode.none
        described["eligible_leader_replicas"] = []
        described["last_known_elr"] = []
        partitions.append(described)
    return {
        "error_code": ErrorCode.none,
        "name": topic.name,
        "topic_id": topic.topic_id,
        "is_internal": topic.is_internal,
        "partitions": partitions,
        "topic_authorized_operations": authorized_operations(ctx, ResourceType.TOPIC, topic.name),
    }


async def handle(ctx: RequestContext, request: DescribeTopicPartitionsRequest) -> Reply:
    services = ctx.services
    listing = not request.topics
    cursor = request.cursor
    after = cursor.topic_name if cursor is not None else ""
    asked = [str(t.name) for t in request.topics]
    names = sorted({t.name for t in services.topics} if listing else set(asked), key=_java_order)
    names = [name for name in names if _java_order(name) >= _java_order(after)]
    if cursor is not None and (
        (not listing and cursor.topic_name not in names) or cursor.partition_index < 0
    ):
        return {"throttle_time": 0, "topics": _refused(asked, ErrorCode.invalid_request)}
    allowed = [n for n in names if ctx.allowed(Operation.DESCRIBE, ResourceType.TOPIC, n)]
    denied = [] if listing else [n for n in names if n not in allowed]
    remaining = max(
        min(services.config.max_request_partition_size_limit, request.response_partition_limit), 1
    )
    topics: list[dict[str, Any]] = []
    next_cursor = None
    for name in allowed:
        if remaining == 0:
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        topic = services.topics.get(name)
        if topic is None:
            if not listing:
                operations = authorized_operations(ctx, ResourceType.TOPIC, name)
                topics.extend(_refused([name], unknown_name_code(name), operations))
            continue
        start = cursor.partition_index if cursor is not None and name == after else 0
        described = _topic(ctx, topic, start, remaining)
        topics.append(described)
        end = min(len(topic.partitions), start + remaining)
        if end < len(topic.partitions):
            next_cursor = {"topic_name": name, "partition_index": end}
            break
        remaining -= len(described["partitions"])
    topics.extend(_refused(denied, ErrorCode.topic_authorization_failed))
    return {"throttle_time": 0, "topics": topics, "next_cursor": next_cursor}


def _java_order(name: str) -> list[int]:
    """Java compares strings by UTF-16 code units."""
    return list(name.encode("utf-16-be"))
