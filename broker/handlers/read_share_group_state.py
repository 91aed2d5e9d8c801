"""ReadShareGroupState (84), v0: a share-partition's whole state (state epoch, start
offset, state batches; records acquired now read as available). A negative leader
epoch, no state, or an older leader epoch than the one recorded are refused as Kafka
refuses them. See share_state_common for what the state APIs share."""

from __future__ import annotations

from typing import Any

from kio.schema.read_share_group_state.v0.request import PartitionData, ReadShareGroupStateRequest

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.share_state_common import (
    Refused,
    check_epochs,
    check_known,
    per_partition,
    read,
    uninitialized,
    wire_batches,
)
from odradek.coordinator.share.records import ShareKey
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 0


async def handle(ctx: RequestContext, request: ReadShareGroupStateRequest) -> Reply:
    async def answer(key: ShareKey, p: PartitionData) -> dict[str, Any]:
        check_epochs(p, "leader_epoch")
        state = await read(ctx, key)
        if state is None:
            raise uninitialized("Read")
        if state["leader_epoch"] > p.leader_epoch:
            raise Refused(ErrorCode.fenced_leader_epoch)
        check_known(ctx, key)
        return {
            "state_epoch": state["state_epoch"],
            "start_offset": state["start_offset"],
            "state_batches": wire_batches(state["batches"]),
        }

    return await per_partition(ctx, request, answer)
