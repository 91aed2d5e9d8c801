"""AddOffsetsToTxn (25), v0-v3.

Adds the group's `__consumer_offsets` partition to the transaction, so the
offsets committed with TxnOffsetCommit get the transaction's marker. Errors
as AddPartitionsToTxn.
"""

from __future__ import annotations

from typing import Any

from broker.handlers.base import Reply, RequestContext
from broker.handlers.txn_common import fenced_code, on_txn_shard

MIN_VERSION, MAX_VERSION = 0, 3


async def handle(ctx: RequestContext, request: Any) -> Reply:
    broker = ctx.broker
    await broker.groups.ensure_started()
    offsets_partition = (broker.groups.topic, broker.groups.partition_for(request.group_id))
    code, answer = await on_txn_shard(
        ctx,
        request.transactional_id,
        lambda s: s.add_partitions(
            request.transactional_id,
            request.producer_id,
            request.producer_epoch,
            {offsets_partition},
            broker.now_ms(),
        ),
    )
    return {"throttle_time": 0, "error_code": fenced_code(code or answer, ctx.version, 2)}
