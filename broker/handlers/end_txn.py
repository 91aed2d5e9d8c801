"""EndTxn (26), v0-v3.

Commit or abort: PrepareCommit/PrepareAbort is written, then a marker on every
partition of the transaction (the group's offsets partition included, which
makes the transaction's offsets visible or drops them), then
CompleteCommit/CompleteAbort; only then the answer.

- The same result again after completion: NONE. The opposite result, or
  EndTxn with no transaction: INVALID_TXN_STATE. During Prepare*:
  CONCURRENT_TRANSACTIONS. Wrong epoch: PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
  before v2); wrong producer id: INVALID_PRODUCER_ID_MAPPING.
- With ACLs the transactional id needs WRITE: TRANSACTIONAL_ID_AUTHORIZATION_FAILED
  otherwise.
"""

from __future__ import annotations

from typing import Any

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.txn_common import fenced_code
from odradek.broker.security.resources import Operation, ResourceType
from odradek.coordinator.runtime import CoordinatorError
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 3


async def handle(ctx: RequestContext, request: Any) -> Reply:
    if not ctx.allowed(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return {"throttle_time": 0, "error_code": ErrorCode.transactional_id_authorization_failed}
    try:
        code = await ctx.services.transactions.end_transaction(
            request.transactional_id, request.producer_id, request.producer_epoch, request.committed
        )
    except CoordinatorError as exc:
        code = exc.code
    return {"throttle_time": 0, "error_code": fenced_code(code, ctx.version, 2)}
