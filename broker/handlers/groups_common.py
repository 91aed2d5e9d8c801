"""Running an operation on the group coordinator shard that owns a group id."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from broker.handlers.base import RequestContext
from coordinator.runtime import CoordinatorError


async def on_group_shard(
    ctx: RequestContext, group_id: str, operation: Callable[[Any], Any]
) -> tuple[int, Any]:
    """(error code, response). Deferred answers (a future) are awaited here."""
    try:
        response = await ctx.broker.groups.run(group_id, operation)
        if isinstance(response, asyncio.Future):
            response = await response
    except CoordinatorError as exc:
        return exc.code, None
    return 0, response


def client_host(ctx: RequestContext) -> str:
    return "/" + ctx.connection_id.rsplit(":", 1)[0]
