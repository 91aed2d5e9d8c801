"""What the share-group state APIs (83-87) share: they are the share coordinator's
own wire protocol, one answer per (topic id, partition) of the request.

Kafka's brokers call them on the coordinator of a share-partition's key; here that is
always this broker. The caller needs CLUSTER_ACTION on the cluster (with ACLs);
otherwise every partition answers CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from odradek.broker.handlers.authorization import cluster_allowed
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation
from odradek.coordinator.runtime import CoordinatorError
from odradek.coordinator.share.partition import ACKNOWLEDGED, ARCHIVED, StateBatch
from odradek.coordinator.share.records import ShareKey
from odradek.protocol.errors import ErrorCode

NOT_INITIALIZED = "The share-partition has no state."

Answer = Callable[[ShareKey, Any], Awaitable[dict[str, Any]]]


async def per_partition(ctx: RequestContext, request: Any, answer: Answer) -> Reply:
    allowed = cluster_allowed(ctx, Operation.CLUSTER_ACTION)
    if allowed:
        await ctx.services.share.ensure_started()
    results = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            fields: dict[str, Any] = {"error_code": ErrorCode.none, "error_message": None}
            if not allowed:
                fields["error_code"] = ErrorCode.cluster_authorization_failed
            elif not request.group_id or topic.topic_id is None:
                fields["error_code"] = ErrorCode.invalid_request
                fields["error_message"] = "A group id and a topic id are needed."
            else:
                try:
                    fields.update(
                        await answer(ShareKey(request.group_id, topic.topic_id, p.partition), p)
                    )
                except CoordinatorError as exc:
                    fields["error_code"] = exc.code
            partitions.append({"partition": p.partition, **fields})
        results.append({"topic_id": topic.topic_id, "partitions": partitions})
    return {"results": results}


async def read(ctx: RequestContext, key: ShareKey) -> dict[str, Any] | None:
    state: dict[str, Any] | None = await ctx.services.share.run(key, lambda s: s.read(key))
    return state


def missing() -> dict[str, Any]:
    return {"error_code": ErrorCode.unknown_topic_or_partition, "error_message": NOT_INITIALIZED}


def wire_batches(batches: tuple[StateBatch, ...]) -> list[dict[str, int]]:
    return [
        {
            "first_offset": b.first_offset,
            "last_offset": b.last_offset,
            "delivery_state": b.state,
            "delivery_count": b.delivery_count,
        }
        for b in batches
    ]


def delivery_complete_count(state: dict[str, Any]) -> int:
    start = state["start_offset"]
    return sum(
        b.last_offset - max(b.first_offset, start) + 1
        for b in state["batches"]
        if b.state in (ACKNOWLEDGED, ARCHIVED) and b.last_offset >= start
    )
