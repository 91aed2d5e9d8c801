"""Running an operation on the group coordinator shard that owns a group id, and
what the handlers of the consumer and share protocols answer alike."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from odradek.broker.handlers.authorization import (
    NOT_REQUESTED,
    allowed_names,
    authorized_operations,
)
from odradek.broker.handlers.base import RequestContext
from odradek.broker.security.resources import Operation, ResourceType
from odradek.coordinator.runtime import CoordinatorError
from odradek.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from odradek.broker.handlers.offset_commit import OffsetCommitRequest
    from odradek.broker.handlers.txn_offset_commit import Request as TxnOffsetCommitRequest

UNKNOWN_TOPIC_OR_PARTITION = 3
UNKNOWN_TOPIC_ID = 100
TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
INVALID_GROUP_ID = 24
GROUP_ID_NOT_FOUND = 69


async def on_group_shard(
    ctx: RequestContext, group_id: str, operation: Callable[[Any], Any]
) -> tuple[int, Any]:
    """(error code, response). Deferred answers (a future) are awaited here."""
    try:
        response = await ctx.services.groups.run(group_id, operation)
        if isinstance(response, asyncio.Future):
            response = await response
    except CoordinatorError as exc:
        return exc.code, None
    return 0, response


def client_host(ctx: RequestContext) -> str:
    return "/" + ctx.connection_id.rsplit(":", 1)[0]


async def heartbeat_reply(
    ctx: RequestContext, group_id: str, operation: Callable[[Any], Any]
) -> dict[str, Any]:
    """A ConsumerGroupHeartbeat or ShareGroupHeartbeat answer from the shard's."""
    code, answer = await on_group_shard(ctx, group_id, operation)
    if code:
        return heartbeat_error(code, None)
    assignment = answer.get("assignment")
    return {
        "throttle_time": 0,
        "error_code": answer["error_code"],
        "error_message": answer.get("error_message"),
        "member_id": answer.get("member_id"),
        "member_epoch": answer.get("member_epoch", 0),
        "heartbeat_interval": answer.get("heartbeat_interval_ms", 0),
        "assignment": None
        if assignment is None
        else {
            "topic_partitions": [
                {"topic_id": topic_id, "partitions": sorted(parts)}
                for topic_id, parts in sorted(assignment.items())
            ]
        },
    }


def heartbeat_error(code: int, message: str | None) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "error_code": code,
        "error_message": message,
        "member_id": None,
        "member_epoch": 0,
        "heartbeat_interval": 0,
        "assignment": None,
    }


class DescribeRequest(Protocol):
    @property
    def group_ids(self) -> Sequence[str]: ...

    @property
    def include_authorized_operations(self) -> bool: ...


async def describe_each(
    ctx: RequestContext,
    request: DescribeRequest,
    describe: Callable[[str], Callable[[Any], Any]],
    shape: Callable[[dict[str, Any]], dict[str, Any]],
    missing: Callable[[str, int, str | None], dict[str, Any]],
) -> list[dict[str, Any]]:
    """ConsumerGroupDescribe, ShareGroupDescribe and StreamsGroupDescribe: each group
    described by its shard (`describe(group_id)` is the operation; it gives the group,
    or why there is none), `shape`d for the answer; a group not described (unknown, not
    of the kind, not authorized, an empty id) is `missing` with its error and message."""
    groups = []
    for group_id in request.group_ids:
        if not ctx.allowed(Operation.DESCRIBE, ResourceType.GROUP, group_id):
            groups.append(missing(group_id, GROUP_AUTHORIZATION_FAILED, None))
            continue
        if not group_id:
            groups.append(missing(group_id, INVALID_GROUP_ID, None))
            continue
        code, described = await on_group_shard(ctx, group_id, describe(group_id))
        if code or not isinstance(described, dict):
            groups.append(missing(group_id, code or GROUP_ID_NOT_FOUND, described))
            continue
        answer = shape(described)
        if request.include_authorized_operations:
            answer["authorized_operations"] = authorized_operations(
                ctx, ResourceType.GROUP, group_id
            )
        groups.append(answer)
    return groups


def described_group(group: dict[str, Any], members: list[dict[str, Any]]) -> dict[str, Any]:
    """A group of ConsumerGroupDescribe or ShareGroupDescribe, as its shard described
    it, with its members as the API shows them."""
    return {
        "error_code": ErrorCode.none,
        "error_message": None,
        "group_id": group["group_id"],
        "group_state": group["group_state"],
        "group_epoch": group["group_epoch"],
        "assignment_epoch": group["assignment_epoch"],
        "assignor_name": group["assignor_name"],
        "members": members,
        "authorized_operations": NOT_REQUESTED,
    }


def missing_group(group_id: str, code: int, message: str | None) -> dict[str, Any]:
    """A group ConsumerGroupDescribe or ShareGroupDescribe could not describe."""
    return {
        "error_code": code,
        "error_message": message,
        "group_id": group_id,
        "group_state": "",
        "group_epoch": 0,
        "assignment_epoch": 0,
        "assignor_name": "",
        "members": [],
        "authorized_operations": NOT_REQUESTED,
    }


TopicPartition = tuple[str, int]
OffsetToCommit = tuple[int, int, str | None]  # offset, leader epoch, metadata


@dataclass(frozen=True, slots=True)
class AskedTopic:
    """A topic of an offset request, named by the request or (OffsetCommit and
    OffsetFetch v10+) found by its id; an id this broker does not know has name ""."""

    name: str
    topic_id: uuid.UUID | None
    partitions: Sequence[Any]
    unknown_id: bool = False


def asked_topics(
    ctx: RequestContext, topics: Sequence[Any], partitions: str = "partitions"
) -> list[AskedTopic]:
    """The request's topics (their partitions in the field `partitions`) with names."""
    asked = []
    for topic in topics:
        name = getattr(topic, "name", None)
        if name is not None:
            asked.append(AskedTopic(name, None, getattr(topic, partitions)))
            continue
        topic_id = topic.topic_id
        found = ctx.services.topics.by_id(topic_id) if topic_id else None
        if found is None:
            asked.append(AskedTopic("", topic_id, getattr(topic, partitions), unknown_id=True))
        else:
            asked.append(AskedTopic(found.name, topic_id, getattr(topic, partitions)))
    return asked


async def commit_offsets(
    ctx: RequestContext,
    request: OffsetCommitRequest | TxnOffsetCommitRequest,
    details: dict[str, Any],
    map_code: Callable[[int], int],
    refuse: int = 0,
) -> list[dict[str, Any]]:
    """Shared by OffsetCommit and TxnOffsetCommit: commit the offsets of known
    partitions through the group's shard (`details` says who commits and how),
    or answer them all with `refuse` when it is set; answers per topic, with
    UNKNOWN_TOPIC_ID for topics asked by an unknown id, TOPIC_AUTHORIZATION_FAILED for
    the partitions of topics the principal may not READ and UNKNOWN_TOPIC_OR_PARTITION
    for those of unknown topics."""
    offsets: dict[TopicPartition, OffsetToCommit] = {}
    early: dict[TopicPartition, int] = {}  # refused before the coordinator is asked
    topics = asked_topics(ctx, request.topics)
    readable = allowed_names(ctx, Operation.READ, ResourceType.TOPIC, (t.name for t in topics))
    for topic in topics:
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            if topic.unknown_id:
                early[tp] = UNKNOWN_TOPIC_ID
            elif topic.name not in readable:
                early[tp] = TOPIC_AUTHORIZATION_FAILED
            elif ctx.services.topics.partition(*tp) is None:
                early[tp] = UNKNOWN_TOPIC_OR_PARTITION
            else:
                epoch = getattr(p, "committed_leader_epoch", -1)
                offsets[tp] = (p.committed_offset, epoch, p.committed_metadata)
    codes: dict[TopicPartition, int] = {tp: refuse for tp in offsets}
    if offsets and not refuse:
        request_details = {**details, "offsets": offsets}
        code, answer = await on_group_shard(
            ctx, request.group_id, lambda s: s.commit_offsets(request_details)
        )
        codes = {tp: code for tp in offsets} if code else answer
    return in_kafka_order(topics, early, lambda tp: map_code(codes.get(tp, 0)))


def in_kafka_order(
    topics: Sequence[Any], early: dict[TopicPartition, int], late: Callable[[TopicPartition], int]
) -> list[dict[str, Any]]:
    """Per-partition answers in Kafka's order: first those refused before the
    coordinator is asked (`early`: unauthorized, unknown), grouped by topic in the
    request's order; then the coordinator's, added to their topic or after the rest.
    A topic asked by id is answered by its id."""
    by_topic: dict[tuple[str, uuid.UUID | None], list[dict[str, Any]]] = {}
    for refused in (True, False):
        for topic in topics:
            topic_id = getattr(topic, "topic_id", None)
            for p in topic.partitions:
                tp = (topic.name, p.partition_index)
                if (tp in early) == refused:
                    code = early[tp] if refused else late(tp)
                    by_topic.setdefault((topic.name, topic_id), []).append(
                        {"partition_index": p.partition_index, "error_code": code}
                    )
    return [
        {"name": name, "topic_id": topic_id, "partitions": partitions}
        for (name, topic_id), partitions in by_topic.items()
    ]


def refuse_all(
    request: OffsetCommitRequest | TxnOffsetCommitRequest, code: int
) -> list[dict[str, Any]]:
    """Every partition of an offset commit answered with one error."""
    return [
        {
            "name": getattr(topic, "name", ""),
            "topic_id": getattr(topic, "topic_id", None),
            "partitions": [
                {"partition_index": p.partition_index, "error_code": code} for p in topic.partitions
            ],
        }
        for topic in request.topics
    ]
