"""BeginQuorumEpoch (53), v0-v1: the quorum's new leader tells this controller that it
leads the epoch; this controller follows it (FENCED_LEADER_EPOCH for an older epoch).
The answer names the leader and epoch this controller knows."""

from __future__ import annotations

from kio.schema.begin_quorum_epoch.v0.request import BeginQuorumEpochRequest as V0
from kio.schema.begin_quorum_epoch.v1.request import BeginQuorumEpochRequest as V1

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.quorum_common import (
    answer,
    partition_answer,
    partition_error,
    quorum_of,
    refusal,
)

MIN_VERSION, MAX_VERSION = 0, 1
BeginQuorumEpochRequest = V0 | V1


async def handle(ctx: RequestContext, request: BeginQuorumEpochRequest) -> Reply:
    refused = refusal(ctx, request.cluster_id)
    if refused is not None:
        return answer(ctx, [], refused)
    quorum = quorum_of(ctx)
    topics = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            code = partition_error(topic.topic_name, p.partition_index)
            if code is None:
                code = quorum.begin_epoch(p.leader_id, p.leader_epoch)
            partitions.append(partition_answer(ctx, p.partition_index, code))
        topics.append({"topic_name": topic.topic_name, "partitions": partitions})
    return answer(ctx, topics)
