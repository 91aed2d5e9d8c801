"""What the controller listener's handlers share: running an operation on the cluster
metadata shard, and NOT_CONTROLLER where this node is no controller or not the
quorum's active one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from odradek.broker.handlers.base import RequestContext
from odradek.coordinator.runtime import CoordinatorError, Result
from odradek.protocol.errors import ErrorCode

# what the runtime answers where this controller does not lead the quorum (yet)
INACTIVE = frozenset(
    {
        ErrorCode.not_coordinator,
        ErrorCode.coordinator_not_available,
        ErrorCode.coordinator_load_in_progress,
    }
)


async def answered_by_controller(
    ctx: RequestContext, operation: Callable[[Any], Any]
) -> dict[str, Any]:
    controller = ctx.services.controller
    if controller is None:
        return {"error_code": ErrorCode.not_controller}
    try:
        answer: dict[str, Any] = await controller.run(operation)
    except CoordinatorError as exc:
        if exc.code in INACTIVE:
            return {"error_code": ErrorCode.not_controller}
        return {"error_code": exc.code}
    return answer


def dry_run(result: Result[Any], dry: bool) -> Result[Any]:
    """`result` as it is, or (validate_only) its answer without its records."""
    return Result([], result.response) if dry else result
