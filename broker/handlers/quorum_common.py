"""What the quorum's handlers (Vote, BeginQuorumEpoch, EndQuorumEpoch) share: the checks
every one of them makes before the quorum sees the request, and the shape of their
answers, which all name the leader and epoch this controller knows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from odradek.broker.cluster.controller import METADATA_TOPIC
from odradek.broker.cluster.quorum.quorum import Quorum
from odradek.broker.handlers.base import RequestContext
from odradek.protocol.errors import ErrorCode


def refusal(ctx: RequestContext, cluster_id: str | None) -> ErrorCode | None:
    """The request's error, if it cannot reach the quorum at all."""
    controller = ctx.services.controller
    if controller is None or controller.quorum is None:
        return ErrorCode.not_controller  # (Kafka: a broker does not list these APIs)
    if cluster_id is not None and cluster_id != controller.quorum.cluster_id:
        return ErrorCode.inconsistent_cluster_id
    return None


def quorum_of(ctx: RequestContext) -> Quorum:
    """The controller's quorum, once `refusal` let the request through."""
    controller = ctx.services.controller
    assert controller is not None and controller.quorum is not None
    return controller.quorum


def partition_error(topic_name: str, index: int) -> ErrorCode | None:
    if topic_name != METADATA_TOPIC or index != 0:
        return ErrorCode.unknown_topic_or_partition
    return None


def answer(
    ctx: RequestContext, topics: list[dict[str, Any]], code: ErrorCode = ErrorCode.none
) -> dict[str, Any]:
    return {"error_code": code, "topics": topics, "node_endpoints": []}


def partition_answer(ctx: RequestContext, index: int, code: ErrorCode | None) -> dict[str, Any]:
    quorum = ctx.services.controller.quorum if ctx.services.controller is not None else None
    return {
        "partition_index": index,
        "error_code": code or ErrorCode.none,
        "leader_id": -1 if quorum is None else quorum.leader_id,
        "leader_epoch": -1 if quorum is None else quorum.leader_epoch,
    }


def each_partition(
    ctx: RequestContext,
    request: Any,
    act: Callable[[Any], tuple[ErrorCode, dict[str, Any]]],
) -> dict[str, Any]:
    """The answer to a quorum request: `act` on each partition of `__cluster_metadata`
    it names (its error code and any fields of its own), after the checks all share."""
    refused = refusal(ctx, request.cluster_id)
    if refused is not None:
        return answer(ctx, [], refused)
    topics = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            code = partition_error(topic.topic_name, p.partition_index)
            fields: dict[str, Any] = {}
            if code is None:
                code, fields = act(p)
            partitions.append({**partition_answer(ctx, p.partition_index, code), **fields})
        topics.append({"topic_name": topic.topic_name, "partitions": partitions})
    return answer(ctx, topics)
