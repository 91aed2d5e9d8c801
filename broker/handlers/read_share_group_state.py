"""ReadShareGroupState (84), v0: a share-partition's whole state (state epoch, start
offset, state batches; records acquired now read as available). No state answers
UNKNOWN_TOPIC_OR_PARTITION. See share_state_common for what the state APIs share."""

from __future__ import annotations

from typing import Any

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.share_state_common import missing, per_partition, read, wire_batches
from odradek.coordinator.share.records import ShareKey

MIN_VERSION, MAX_VERSION = 0, 0


async def handle(ctx: RequestContext, request: Any) -> Reply:
    async def answer(key: ShareKey, _p: Any) -> dict[str, Any]:
        state = await read(ctx, key)
        if state is None:
            return {**missing(), "state_epoch": 0, "start_offset": -1, "state_batches": []}
        return {
            "state_epoch": state["state_epoch"],
            "start_offset": state["start_offset"],
            "state_batches": wire_batches(state["batches"]),
        }

    return await per_partition(ctx, request, answer)
