"""ListGroups (16), v0-v4: every group on every loaded shard; v4 filters by state."""

from __future__ import annotations

from typing import Any

from broker.handlers.base import Reply, RequestContext
from coordinator.runtime import CoordinatorError

MIN_VERSION, MAX_VERSION = 0, 4

COORDINATOR_LOAD_IN_PROGRESS = 14


async def handle(ctx: RequestContext, request: Any) -> Reply:
    wanted_states = {s.lower() for s in getattr(request, "states_filter", ())}
    runtime = ctx.broker.groups
    await runtime.ensure_started()
    groups = []
    code = 0
    for shard in list(runtime.shards.values()):
        try:
            listed = await shard.submit(lambda s: s.list_groups())
        except CoordinatorError:
            code = COORDINATOR_LOAD_IN_PROGRESS
            continue
        for group_id, protocol_type, state in listed:
            if wanted_states and state.lower() not in wanted_states:
                continue
            groups.append(
                {"group_id": group_id, "protocol_type": protocol_type, "group_state": state}
            )
    return {"throttle_time": 0, "error_code": code, "groups": groups}
