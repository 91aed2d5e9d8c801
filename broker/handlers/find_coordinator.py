"""FindCoordinator (10), v0-v4.

- Key type 0 (group) or 1 (transaction); v4+ asks for several keys at once.
- This broker coordinates every key; the first call creates
  `__consumer_offsets` and starts loading its shards.
- An unknown key type answers INVALID_REQUEST.
"""

from __future__ import annotations

from typing import Any

from broker.handlers.base import Reply, RequestContext
from protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 4

GROUP, TRANSACTION = 0, 1


async def handle(ctx: RequestContext, request: Any) -> Reply:
    config = ctx.broker.config
    key_type = getattr(request, "key_type", GROUP)
    code: int = ErrorCode.none
    if key_type == GROUP:
        await ctx.broker.groups.ensure_started()
    elif key_type == TRANSACTION:
        code = await ctx.broker.ensure_transaction_coordinator()
    else:
        code = ErrorCode.invalid_request
    found = code == ErrorCode.none
    answer = {
        "error_code": code,
        "error_message": None if found else "no coordinator for this key type",
        "node_id": config.node_id if found else -1,
        "host": ctx.listener.advertised_host if found else "",
        "port": ctx.listener.advertised_port if found else -1,
    }
    if ctx.version < 4:
        return {"throttle_time": 0, **answer}
    return {
        "throttle_time": 0,
        "coordinators": [{"key": key, **answer} for key in request.coordinator_keys],
    }
