"""EndTxn (26), v0-v5.

Commit or abort: PrepareCommit/PrepareAbort is written, then a marker on every
partition of the transaction (the group's offsets partition included, which
makes the transaction's offsets visible or drops them), then
CompleteCommit/CompleteAbort; only then the answer.

- v0-v4 (transactions version 1): the same result again after completion: NONE.
  The opposite result, or EndTxn with no transaction: INVALID_TXN_STATE. During
  Prepare*: CONCURRENT_TRANSACTIONS. Wrong epoch: PRODUCER_FENCED
  (INVALID_PRODUCER_EPOCH before v2); wrong producer id: INVALID_PRODUCER_ID_MAPPING.
- v5+ (transactions version 2, KIP-890): every end bumps the producer's epoch; the
  markers carry the new one, and the answer tells the producer id and epoch to go on
  with (a new producer id once the epoch is exhausted). An abort is taken with nothing
  in the transaction too; a retry with the epoch before the bump is answered NONE
  with the current id and epoch. Errors answer -1 for both.
- With ACLs the transactional id needs WRITE: TRANSACTIONAL_ID_AUTHORIZATION_FAILED
  otherwise.
"""

from __future__ import annotations

from typing import Any

from kio.schema.end_txn.v0.request import EndTxnRequest as RequestV0
from kio.schema.end_txn.v5.request import EndTxnRequest as RequestV5

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.txn_common import fenced_code
from odradek.broker.security.resources import Operation, ResourceType
from odradek.coordinator.runtime import CoordinatorError
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 5
FIRST_BUMPING_VERSION = 5  # transactions version 2

# v1-v4 have the fields of v0; v5 adds nothing to the request
Request = RequestV0 | RequestV5


def _answer(code: int, producer_id: int = -1, epoch: int = -1) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "error_code": code,
        "producer_id": producer_id,
        "producer_epoch": epoch,
    }


async def handle(ctx: RequestContext, request: Request) -> Reply:
    if not ctx.allowed(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return _answer(ErrorCode.transactional_id_authorization_failed)
    bump = ctx.version >= FIRST_BUMPING_VERSION
    try:
        code, producer_id, epoch = await ctx.services.transactions.end_transaction(
            request.transactional_id,
            request.producer_id,
            request.producer_epoch,
            request.committed,
            bump,
        )
    except CoordinatorError as exc:
        code, producer_id, epoch = exc.code, -1, -1
    return _answer(fenced_code(code, ctx.version, 2), producer_id, epoch)
