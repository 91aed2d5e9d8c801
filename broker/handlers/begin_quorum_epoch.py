"""BeginQuorumEpoch (53), v0-v1: the quorum's new leader tells this controller that it
leads the epoch; this controller follows it (FENCED_LEADER_EPOCH for an older epoch).
The answer names the leader and epoch this controller knows."""

from __future__ import annotations

from typing import Any

from kio.schema.begin_quorum_epoch.v0.request import BeginQuorumEpochRequest as V0
from kio.schema.begin_quorum_epoch.v1.request import BeginQuorumEpochRequest as V1

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.quorum_common import each_partition, quorum_of
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 1
BeginQuorumEpochRequest = V0 | V1


async def handle(ctx: RequestContext, request: BeginQuorumEpochRequest) -> Reply:
    def begin(p: Any) -> tuple[ErrorCode, dict[str, Any]]:
        return quorum_of(ctx).begin_epoch(p.leader_id, p.leader_epoch), {}

    return each_partition(ctx, request, begin)
