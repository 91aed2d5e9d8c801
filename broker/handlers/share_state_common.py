"""What the share-group state APIs (83-87) share: they are the share coordinator's
own wire protocol, one answer per (topic id, partition) of the request.

Kafka's brokers call them on the coordinator of a share-partition's key; here that is
always this broker. The caller needs CLUSTER_ACTION on the cluster (with ACLs);
otherwise every partition answers CLUSTER_AUTHORIZATION_FAILED. As on Kafka, a
request without a group id, topics or partitions is answered with no results, and
each partition is checked as Kafka's share coordinator checks it (a negative
partition, epoch, an uninitialised share-partition, an unknown topic), in its words.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kio.schema.delete_share_group_state.v0.request import DeleteShareGroupStateRequest
from kio.schema.initialize_share_group_state.v0.request import (
    InitializeShareGroupStateRequest,
)
from kio.schema.initialize_share_group_state.v0.request import (
    PartitionData as InitializePartition,
)
from kio.schema.read_share_group_state.v0.request import PartitionData as ReadPartition
from kio.schema.read_share_group_state.v0.request import ReadShareGroupStateRequest
from kio.schema.read_share_group_state_summary.v1.request import (
    ReadShareGroupStateSummaryRequest,
)
from kio.schema.write_share_group_state.v1.request import PartitionData as WritePartition
from kio.schema.write_share_group_state.v1.request import WriteShareGroupStateRequest

from odradek.broker.handlers.authorization import cluster_allowed
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation
from odradek.coordinator.runtime import CoordinatorError
from odradek.coordinator.share.partition import ACKNOWLEDGED, ARCHIVED, StateBatch
from odradek.coordinator.share.records import ShareKey
from odradek.protocol.errors import ErrorCode, default_message

NEGATIVE_PARTITION = "The partition id cannot be a negative number."
NEGATIVE_LEADER_EPOCH = "The leader epoch cannot be a negative number."
NEGATIVE_STATE_EPOCH = "The state epoch cannot be a negative number."

# a partition's answer from its key and its part of the request (the API's own class)
Answer = Callable[[ShareKey, Any], Awaitable[dict[str, Any]]]
# the requests of the share-group state APIs (typed as their newest versions)
StateRequest = (
    InitializeShareGroupStateRequest
    | ReadShareGroupStateRequest
    | ReadShareGroupStateSummaryRequest
    | WriteShareGroupStateRequest
    | DeleteShareGroupStateRequest
)


class Refused(Exception):
    """A partition's answer is this error (and Kafka's message for it)."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(code)
        self.code, self.message = code, message or default_message(code)


def uninitialized(operation: str) -> Refused:
    return Refused(
        ErrorCode.invalid_request,
        f"{operation} operation on uninitialized share partition not allowed.",
    )


def check_epochs(p: InitializePartition | ReadPartition | WritePartition, *names: str) -> None:
    """INVALID_REQUEST for a negative leader or state epoch among `names`."""
    for name, message in (
        ("leader_epoch", NEGATIVE_LEADER_EPOCH),
        ("state_epoch", NEGATIVE_STATE_EPOCH),
    ):
        if name in names and getattr(p, name) < 0:
            raise Refused(ErrorCode.invalid_request, message)


def check_known(ctx: RequestContext, key: ShareKey) -> None:
    if ctx.services.topics.partition_by_id(key.topic_id, key.partition) is None:
        raise Refused(ErrorCode.unknown_topic_or_partition)


async def per_partition(ctx: RequestContext, request: StateRequest, answer: Answer) -> Reply:
    allowed = cluster_allowed(ctx, Operation.CLUSTER_ACTION)
    if allowed:
        if not request.group_id or not request.topics:
            return {"results": []}
        if any(not topic.partitions for topic in request.topics):
            return {"results": []}
        await ctx.services.share.ensure_started()
    results = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            fields: dict[str, Any] = {"error_code": ErrorCode.none, "error_message": None}
            try:
                if not allowed:
                    raise Refused(ErrorCode.cluster_authorization_failed)
                if topic.topic_id is None:
                    raise Refused(ErrorCode.invalid_request, "The topic id cannot be null.")
                if p.partition < 0:
                    raise Refused(ErrorCode.invalid_request, NEGATIVE_PARTITION)
                fields.update(
                    await answer(ShareKey(request.group_id, topic.topic_id, p.partition), p)
                )
            except Refused as refused:
                fields = {"error_code": refused.code, "error_message": refused.message}
            except CoordinatorError as exc:
                fields["error_code"] = exc.code
            partitions.append({"partition": p.partition, **fields})
        results.append({"topic_id": topic.topic_id, "partitions": partitions})
    return {"results": results}


async def read(ctx: RequestContext, key: ShareKey) -> dict[str, Any] | None:
    state: dict[str, Any] | None = await ctx.services.share.run(key, lambda s: s.read(key))
    return state


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
