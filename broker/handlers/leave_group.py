"""LeaveGroup (13), v0-v5.

v0-v2 name one member; v3+ a batch of members, static ones by instance id
(KIP-345), each answered on its own. The group rebalances at once.
With ACLs the group needs READ: GROUP_AUTHORIZATION_FAILED otherwise.
"""

from __future__ import annotations

from typing import Any

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.groups_common import on_group_shard
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 5


async def handle(ctx: RequestContext, request: Any) -> Reply:
    if not ctx.allowed(Operation.READ, ResourceType.GROUP, request.group_id):
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.group_authorization_failed,
            "members": [],
        }
    if ctx.version < 3:
        leaving = [(request.member_id, None)]
    else:
        leaving = [(m.member_id, m.group_instance_id) for m in request.members]
    code, answer = await on_group_shard(
        ctx, request.group_id, lambda s: s.leave_group(request.group_id, leaving)
    )
    if code:
        return {"throttle_time": 0, "error_code": code, "members": []}
    top, members = answer
    if ctx.version < 3 and members:
        top = top or members[0]["error_code"]
    return {"throttle_time": 0, "error_code": top, "members": members}
