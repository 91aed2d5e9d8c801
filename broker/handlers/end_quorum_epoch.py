"""EndQuorumEpoch (54), v0-v1: the quorum's leader steps down (a clean stop); this
controller stops following it and, if it is the first successor the leader prefers,
calls an election at once. The answer names the leader and epoch it knows."""

from __future__ import annotations

from typing import Any

from kio.schema.end_quorum_epoch.v0.request import EndQuorumEpochRequest as V0
from kio.schema.end_quorum_epoch.v0.request import PartitionData as PartitionV0
from kio.schema.end_quorum_epoch.v1.request import EndQuorumEpochRequest as V1
from kio.schema.end_quorum_epoch.v1.request import PartitionData as PartitionV1

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.quorum_common import each_partition, quorum_of
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 1
EndQuorumEpochRequest = V0 | V1


def _successors(p: PartitionV0 | PartitionV1) -> list[int]:
    if isinstance(p, PartitionV1):
        return [int(c.candidate_id) for c in p.preferred_candidates]
    return [int(s) for s in p.preferred_successors]


async def handle(ctx: RequestContext, request: EndQuorumEpochRequest) -> Reply:
    def end(p: Any) -> tuple[ErrorCode, dict[str, Any]]:
        return quorum_of(ctx).end_epoch(p.leader_id, p.leader_epoch, _successors(p)), {}

    return each_partition(ctx, request, end)
