"""ReadShareGroupStateSummary (87), v0-v1: a share-partition's state epoch, leader
epoch, start offset and (v1) how many records from the start are delivered for good.
A share-partition of a known topic with no state answers, as on Kafka, without an
error: start offset and delivered count -1, epochs 0. See share_state_common."""

from __future__ import annotations

from typing import Any

from kio.schema.read_share_group_state_summary.v1.request import (
    PartitionData,
    ReadShareGroupStateSummaryRequest,
)

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.share_state_common import (
    check_known,
    delivery_complete_count,
    per_partition,
    read,
)
from odradek.coordinator.share.records import ShareKey

MIN_VERSION, MAX_VERSION = 0, 1
# v0 and v1 have the same fields: typed as the newest


async def handle(ctx: RequestContext, request: ReadShareGroupStateSummaryRequest) -> Reply:
    async def answer(key: ShareKey, _p: PartitionData) -> dict[str, Any]:
        check_known(ctx, key)
        state = await read(ctx, key)
        if state is None:
            return {
                "state_epoch": 0,
                "leader_epoch": 0,
                "start_offset": -1,
                "delivery_complete_count": -1,
            }
        return {
            "state_epoch": state["state_epoch"],
            "leader_epoch": state["leader_epoch"],
            "start_offset": state["start_offset"],
            "delivery_complete_count": delivery_complete_count(state),
        }

    return await per_partition(ctx, request, answer)
