"""WriteShareGroupState (85), v0-v1: change a share-partition's state: a new start
offset (-1 keeps it) and state batches laid over the stored ones. Refused as Kafka
refuses it: negative epochs, no state yet, an older leader or state epoch than the
one recorded, an unknown topic. See share_state_common."""

from __future__ import annotations

from typing import Any

from kio.schema.write_share_group_state.v1.request import PartitionData, WriteShareGroupStateRequest

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.share_state_common import (
    Refused,
    check_epochs,
    check_known,
    per_partition,
    read,
    uninitialized,
)
from odradek.coordinator.share.partition import StateBatch
from odradek.coordinator.share.records import ShareKey
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 1
# the fields read are those of v0: typed as the newest


async def handle(ctx: RequestContext, request: WriteShareGroupStateRequest) -> Reply:
    async def write(key: ShareKey, p: PartitionData) -> dict[str, Any]:
        check_epochs(p, "leader_epoch", "state_epoch")
        state = await read(ctx, key)
        if state is None:
            raise uninitialized("Write")
        if state["leader_epoch"] > p.leader_epoch:
            raise Refused(ErrorCode.fenced_leader_epoch)
        if state["state_epoch"] > p.state_epoch:
            raise Refused(ErrorCode.fenced_state_epoch)
        check_known(ctx, key)
        batches = tuple(
            StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
            for b in p.state_batches
        )
        code = await ctx.services.share.run(
            key,
            lambda s: s.write(key, p.state_epoch, p.leader_epoch, p.start_offset, batches),
        )
        if code:
            raise Refused(ErrorCode(code))
        return {}

    return await per_partition(ctx, request, write)
