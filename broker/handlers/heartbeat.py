"""Heartbeat (12), v0-v4.

Keeps a member's session alive. REBALANCE_IN_PROGRESS tells it to rejoin;
ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID and FENCED_INSTANCE_ID as for SyncGroup.
With ACLs the group needs READ: GROUP_AUTHORIZATION_FAILED otherwise.
"""

from __future__ import annotations

from typing import cast

from kio.schema.heartbeat.v0.request import HeartbeatRequest as RequestV0
from kio.schema.heartbeat.v3.request import HeartbeatRequest as RequestV3

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.groups_common import on_group_shard
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 4

# v1-v2 have the fields of v0, v4 those of v3
Request = RequestV0 | RequestV3


async def handle(ctx: RequestContext, request: Request) -> Reply:
    if not ctx.allowed(Operation.READ, ResourceType.GROUP, request.group_id):
        return {"throttle_time": 0, "error_code": ErrorCode.group_authorization_failed}
    instance = cast(RequestV3, request).group_instance_id if ctx.version >= 3 else None
    code, answer = await on_group_shard(
        ctx,
        request.group_id,
        lambda s: s.heartbeat(request.group_id, request.member_id, instance, request.generation_id),
    )
    return {"throttle_time": 0, "error_code": code or answer}
