"""InitProducerId (22), v0-v4, for idempotent producers (no transactional id).

- Each call hands out a new producer id with epoch 0, even when the producer
  passes its current id (v3+, KIP-360), as Kafka does without a transactional
  id; ids come from blocks persisted before use, so they never repeat, even
  after kill -9.
- Transactional ids belong to the transaction coordinator: until it exists,
  they answer COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

from typing import Any

from broker.handlers.base import Reply, RequestContext
from protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 4


def _answer(code: ErrorCode, producer_id: int = -1, epoch: int = -1) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "error_code": code,
        "producer_id": producer_id,
        "producer_epoch": epoch,
    }


async def handle(ctx: RequestContext, request: Any) -> Reply:
    if request.transactional_id is not None:
        return _answer(ErrorCode.coordinator_not_available)
    return _answer(ErrorCode.none, ctx.broker.producer_ids.allocate(), 0)
