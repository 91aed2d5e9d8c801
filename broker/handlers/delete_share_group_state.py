"""DeleteShareGroupState (86), v0: forget share-partitions' state (tombstones); one
without state is answered without an error, a partition of no known topic
UNKNOWN_TOPIC_OR_PARTITION. See share_state_common for what the state APIs share."""

from __future__ import annotations

from typing import Any

from kio.schema.delete_share_group_state.v0.request import (
    DeleteShareGroupStateRequest,
    PartitionData,
)

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.share_state_common import check_known, per_partition
from odradek.coordinator.share.records import ShareKey

MIN_VERSION, MAX_VERSION = 0, 0


async def handle(ctx: RequestContext, request: DeleteShareGroupStateRequest) -> Reply:
    async def delete(key: ShareKey, _p: PartitionData) -> dict[str, Any]:
        check_known(ctx, key)
        code = await ctx.services.share.run(key, lambda s: s.delete(key))
        return {"error_code": code}

    return await per_partition(ctx, request, delete)
