"""Vote (52), v0-v2: a candidate asks this controller for its vote in a new epoch.

The vote goes to a voting candidate whose log is at least as complete as this one's,
once per epoch (broker/cluster/quorum/rules.py); a pre-vote (v2) only asks whether it
would be granted, and changes nothing. The answer names the leader and epoch this
controller knows. INCONSISTENT_CLUSTER_ID for another cluster's candidate,
UNKNOWN_TOPIC_OR_PARTITION for anything but `__cluster_metadata`-0."""

from __future__ import annotations

from typing import Any

from kio.schema.vote.v0.request import VoteRequest as V0
from kio.schema.vote.v1.request import VoteRequest as V1
from kio.schema.vote.v2.request import VoteRequest as V2

from odradek.broker.cluster.quorum.rules import LogEnd
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.quorum_common import each_partition, quorum_of
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 2
VoteRequest = V0 | V1 | V2


async def handle(ctx: RequestContext, request: VoteRequest) -> Reply:
    def vote(p: Any) -> tuple[ErrorCode, dict[str, Any]]:
        quorum = quorum_of(ctx)
        last = LogEnd(p.last_offset_epoch, p.last_offset)
        if getattr(p, "pre_vote", False):
            granted = quorum.would_vote(p.replica_id, p.replica_epoch, last)
        else:
            granted = quorum.vote(p.replica_id, p.replica_epoch, last)
        return ErrorCode.none, {"vote_granted": granted}

    return each_partition(ctx, request, vote)
