"""AllocateProducerIds (67), v0, on the controller listener: a broker of the cluster
takes a block of producer ids, so that ids stay unique whichever broker hands one out.
The block's end is in the metadata log before the answer leaves. An unknown broker is
BROKER_ID_NOT_REGISTERED, an old incarnation STALE_BROKER_EPOCH."""

from __future__ import annotations

from functools import partial
from typing import Any

from kio.schema.allocate_producer_ids.v0.request import AllocateProducerIdsRequest

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.controller_common import answered_by_controller

MIN_VERSION, MAX_VERSION = 0, 0


def _allocate(shard: Any, node_id: int, broker_epoch: int) -> Any:
    return shard.allocate_producer_ids(node_id, broker_epoch)


async def handle(ctx: RequestContext, request: AllocateProducerIdsRequest) -> Reply:
    operation = partial(_allocate, node_id=request.broker_id, broker_epoch=request.broker_epoch)
    answer = await answered_by_controller(ctx, operation)
    return {
        "throttle_time": 0,
        "error_code": answer["error_code"],
        "producer_id_start": answer.get("start", -1),
        "producer_id_len": answer.get("length", 0),
    }
