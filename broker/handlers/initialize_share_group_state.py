"""InitializeShareGroupState (83), v0: give share-partitions their first state (a state
epoch and a start offset, nothing in flight). A state epoch below the one stored
answers FENCED_STATE_EPOCH. See share_state_common for what the state APIs share."""

from __future__ import annotations

from typing import Any

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.share_state_common import per_partition
from odradek.coordinator.share.records import ShareKey

MIN_VERSION, MAX_VERSION = 0, 0


async def handle(ctx: RequestContext, request: Any) -> Reply:
    async def initialize(key: ShareKey, p: Any) -> dict[str, Any]:
        code = await ctx.services.share.run(
            key, lambda s: s.initialize(key, p.state_epoch, p.start_offset)
        )
        return {"error_code": code}

    return await per_partition(ctx, request, initialize)
