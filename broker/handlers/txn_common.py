"""Running an operation on the transaction coordinator shard of a transactional id."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from odradek.broker.handlers.base import RequestContext
from odradek.coordinator.runtime import CoordinatorError

PRODUCER_FENCED = 90
INVALID_PRODUCER_EPOCH = 47


async def on_txn_shard(
    ctx: RequestContext, transactional_id: str, operation: Callable[[Any], Any]
) -> tuple[int, Any]:
    try:
        return 0, await ctx.services.transactions.run(transactional_id, operation)
    except CoordinatorError as exc:
        return exc.code, None


def fenced_code(code: int, version: int, first_version_with_fenced: int) -> int:
    """Older request versions report a fenced producer as INVALID_PRODUCER_EPOCH."""
    if code == PRODUCER_FENCED and version < first_version_with_fenced:
        return INVALID_PRODUCER_EPOCH
    return code
