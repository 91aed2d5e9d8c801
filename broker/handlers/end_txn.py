"""EndTxn (26), v0-v3.

Commit or abort: PrepareCommit/PrepareAbort is written, then a marker on every
partition of the transaction (the group's offsets partition included, which
makes the transaction's offsets visible or drops them), then
CompleteCommit/CompleteAbort; only then the answer.

- The same result again after completion: NONE. The opposite result, or
  EndTxn with no transaction: INVALID_TXN_STATE. During Prepare*:
  CONCURRENT_TRANSACTIONS. Wrong epoch: PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
  before v2); wrong producer id: INVALID_PRODUCER_ID_MAPPING.
"""

from __future__ import annotations

from typing import Any

from broker.handlers.base import Reply, RequestContext
from broker.handlers.txn_common import fenced_code
from coordinator.runtime import CoordinatorError

MIN_VERSION, MAX_VERSION = 0, 3


async def handle(ctx: RequestContext, request: Any) -> Reply:
    try:
        code = await ctx.broker.transactions.end_transaction(
            request.transactional_id, request.producer_id, request.producer_epoch, request.committed
        )
    except CoordinatorError as exc:
        code = exc.code
    return {"throttle_time": 0, "error_code": fenced_code(code, ctx.version, 2)}
