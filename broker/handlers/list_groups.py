"""ListGroups (16), v0-v5: every group on every loaded shard; v4 filters by state, v5
by type (classic or consumer) and says each group's type. With ACLs only the groups the
principal may DESCRIBE are listed, or every one with DESCRIBE on the cluster."""

from __future__ import annotations

from typing import cast

from kio.schema.list_groups.v0.request import ListGroupsRequest as RequestV0
from kio.schema.list_groups.v4.request import ListGroupsRequest as RequestV4
from kio.schema.list_groups.v5.request import ListGroupsRequest as RequestV5

from odradek.broker.handlers.authorization import cluster_allowed
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation, ResourceType
from odradek.coordinator.runtime import CoordinatorError

MIN_VERSION, MAX_VERSION = 0, 5

# v1-v3 have the fields of v0 (none)
Request = RequestV0 | RequestV4 | RequestV5

COORDINATOR_LOAD_IN_PROGRESS = 14


async def handle(ctx: RequestContext, request: Request) -> Reply:
    states = cast(RequestV4, request).states_filter if ctx.version >= 4 else ()
    types = cast(RequestV5, request).types_filter if ctx.version >= 5 else ()
    wanted_states = {s.strip().lower() for s in states}
    wanted_types = {t.strip().lower() for t in types}
    runtime = ctx.services.groups
    await runtime.ensure_started()
    every_group = cluster_allowed(ctx, Operation.DESCRIBE)
    groups = []
    code = 0
    for shard in list(runtime.shards.values()):
        try:
            listed = await shard.submit(lambda s: s.list_groups())
        except CoordinatorError:
            code = COORDINATOR_LOAD_IN_PROGRESS
            continue
        for group_id, protocol_type, state, group_type in listed:
            # Kafka matches a streams group's NotReady as "not_ready"
            state_key = "not_ready" if state == "NotReady" else state.lower()
            if wanted_states and state_key not in wanted_states:
                continue
            if wanted_types and group_type not in wanted_types:
                continue
            if not every_group and not ctx.allowed(
                Operation.DESCRIBE, ResourceType.GROUP, group_id
            ):
                continue
            groups.append(
                {
                    "group_id": group_id,
                    "protocol_type": protocol_type,
                    "group_state": state,
                    "group_type": group_type,
                }
            )
    return {"throttle_time": 0, "error_code": code, "groups": groups}
