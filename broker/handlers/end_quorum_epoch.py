"""EndQuorumEpoch (54), v0-v1: the quorum's leader steps down (a clean stop); this
controller stops following it and, if it is the first successor the leader prefers,
calls an election at once. The answer names the leader and epoch it knows."""

from __future__ import annotations

from kio.schema.end_quorum_epoch.v0.request import EndQuorumEpochRequest as V0
from kio.schema.end_quorum_epoch.v0.request import PartitionData as PartitionV0
from kio.schema.end_quorum_epoch.v1.request import EndQuorumEpochRequest as V1
from kio.schema.end_quorum_epoch.v1.request import PartitionData as PartitionV1

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.quorum_common import (
    answer,
    partition_answer,
    partition_error,
    quorum_of,
    refusal,
)

MIN_VERSION, MAX_VERSION = 0, 1
EndQuorumEpochRequest = V0 | V1


def _successors(p: PartitionV0 | PartitionV1) -> list[int]:
    if isinstance(p, PartitionV1):
        return [int(c.candidate_id) for c in p.preferred_candidates]
    return [int(s) for s in p.preferred_successors]


async def handle(ctx: RequestContext, request: EndQuorumEpochRequest) -> Reply:
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
                code = quorum.end_epoch(p.leader_id, p.leader_epoch, _successors(p))
            partitions.append(partition_answer(ctx, p.partition_index, code))
        topics.append({"topic_name": topic.topic_name, "partitions": partitions})
    return answer(ctx, topics)
