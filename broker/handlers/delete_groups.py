"""DeleteGroups (42), v0-v3 (v3 adds an error message to each group's answer).

Only groups without members can go (NON_EMPTY_GROUP otherwise); unknown ones
answer GROUP_ID_NOT_FOUND. The group and its offsets become tombstones, and so does
the share-partition state of a share group. With ACLs a
group needs DELETE on it: GROUP_AUTHORIZATION_FAILED otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kio.schema.delete_groups.v0.request import DeleteGroupsRequest as V0
from kio.schema.delete_groups.v1.request import DeleteGroupsRequest as V1
from kio.schema.delete_groups.v2.request import DeleteGroupsRequest as V2

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.groups_common import on_group_shard
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode
from odradek.protocol.schemas.delete_groups.v3.request import DeleteGroupsRequest as V3

MIN_VERSION, MAX_VERSION = 0, 3

DeleteGroupsRequest = V0 | V1 | V2 | V3


async def handle(ctx: RequestContext, request: DeleteGroupsRequest) -> Reply:
    results = []
    for group_id in dict.fromkeys(request.groups_names):  # each once, as Kafka
        if not ctx.allowed(Operation.DELETE, ResourceType.GROUP, group_id):
            refused = ErrorCode.group_authorization_failed
            results.append({"group_id": group_id, "error_code": refused})
            continue
        code, answer = await on_group_shard(ctx, group_id, _deleter(group_id))
        error = code or answer[group_id]
        if error == ErrorCode.none:
            await ctx.services.share.delete_group_state(group_id)  # a share group's
        results.append({"group_id": group_id, "error_code": error})
    return {"throttle_time": 0, "results": results}


def _deleter(group_id: str) -> Callable[[Any], Any]:
    return lambda shard: shard.delete_groups([group_id])
