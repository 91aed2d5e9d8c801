"""WriteShareGroupState (85), v0-v1: change a share-partition's state: a new start
offset (-1 keeps it) and state batches laid over the stored ones. A state epoch below
the stored one answers FENCED_STATE_EPOCH. See share_state_common."""

from __future__ import annotations

from typing import Any

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.share_state_common import per_partition
from odradek.coordinator.share.partition import StateBatch
from odradek.coordinator.share.records import ShareKey

MIN_VERSION, MAX_VERSION = 0, 1


async def handle(ctx: RequestContext, request: Any) -> Reply:
    async def write(key: ShareKey, p: Any) -> dict[str, Any]:
        batches = tuple(
            StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
            for b in p.state_batches
        )
        code = await ctx.services.share.run(
            key,
            lambda s: s.write(key, p.state_epoch, p.leader_epoch, p.start_offset, batches),
        )
        return {"error_code": code}

    return await per_partition(ctx, request, write)
