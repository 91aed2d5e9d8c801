"""InitializeShareGroupState (83), v0: give share-partitions their first state (a state
epoch and a start offset, nothing in flight). A negative state epoch is
INVALID_REQUEST, one below the one stored FENCED_STATE_EPOCH, a partition of no known
topic UNKNOWN_TOPIC_OR_PARTITION. See share_state_common for what the state APIs
share."""

from __future__ import annotations

from typing import Any

from kio.schema.initialize_share_group_state.v0.request import (
    InitializeShareGroupStateRequest,
    PartitionData,
)

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.share_state_common import (
    Refused,
    check_epochs,
    check_known,
    per_partition,
)
from odradek.coordinator.share.records import ShareKey
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 0


async def handle(ctx: RequestContext, request: InitializeShareGroupStateRequest) -> Reply:
    async def initialize(key: ShareKey, p: PartitionData) -> dict[str, Any]:
        check_epochs(p, "state_epoch")
        state = await ctx.services.share.run(key, lambda s: s.read(key))
        if state is not None and state["state_epoch"] > p.state_epoch:
            raise Refused(ErrorCode.fenced_state_epoch)
        check_known(ctx, key)
        code = await ctx.services.share.run(
            key, lambda s: s.initialize(key, p.state_epoch, p.start_offset)
        )
        if code:
            raise Refused(ErrorCode(code))
        return {}

    return await per_partition(ctx, request, initialize)
