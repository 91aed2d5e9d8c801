"""Vote (52), v0-v2: a candidate asks this controller for its vote in a new epoch.

The vote goes to a voting candidate whose log is at least as complete as this one's,
once per epoch (broker/cluster/quorum/rules.py); the answer names the leader and epoch
this controller knows. INCONSISTENT_CLUSTER_ID for another cluster's candidate,
UNKNOWN_TOPIC_OR_PARTITION for anything but `__cluster_metadata`-0."""

from __future__ import annotations

from kio.schema.vote.v0.request import VoteRequest as V0
from kio.schema.vote.v1.request import VoteRequest as V1
from kio.schema.vote.v2.request import VoteRequest as V2

from odradek.broker.cluster.quorum.rules import LogEnd
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.quorum_common import (
    answer,
    partition_answer,
    partition_error,
    quorum_of,
    refusal,
)

MIN_VERSION, MAX_VERSION = 0, 2
VoteRequest = V0 | V1 | V2


async def handle(ctx: RequestContext, request: VoteRequest) -> Reply:
    refused = refusal(ctx, request.cluster_id)
    if refused is not None:
        return answer(ctx, [], refused)
    quorum = quorum_of(ctx)
    topics = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            code = partition_error(topic.topic_name, p.partition_index)
            granted = False
            if code is None:
                last = LogEnd(p.last_offset_epoch, p.last_offset)
                if getattr(p, "pre_vote", False):  # v2: would it be granted? changes nothing
                    granted = quorum.would_vote(p.replica_id, p.replica_epoch, last)
                else:
                    granted = quorum.vote(p.replica_id, p.replica_epoch, last)
            answered = partition_answer(ctx, p.partition_index, code)
            partitions.append({**answered, "vote_granted": granted})
        topics.append({"topic_name": topic.topic_name, "partitions": partitions})
    return answer(ctx, topics)
