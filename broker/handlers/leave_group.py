"""LeaveGroup (13), v0-v5.

v0-v2 name one member; v3+ a batch of members, static ones by instance id
(KIP-345), each answered on its own. The group rebalances at once.
With ACLs the group needs READ: GROUP_AUTHORIZATION_FAILED otherwise.
"""

from __future__ import annotations

from typing import cast

from kio.schema.leave_group.v0.request import LeaveGroupRequest as RequestV0
from kio.schema.leave_group.v3.request import LeaveGroupRequest as RequestV3
from kio.schema.leave_group.v5.request import LeaveGroupRequest as RequestV5

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.groups_common import on_group_shard
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 5

# v1-v2 have the fields of v0, v4 those of v3
Request = RequestV0 | RequestV3 | RequestV5


async def handle(ctx: RequestContext, request: Request) -> Reply:
    if not ctx.allowed(Operation.READ, ResourceType.GROUP, request.group_id):
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.group_authorization_failed,
            "members": [],
        }
    leaving: list[tuple[str, str | None]]
    if ctx.version < 3:
        leaving = [(cast(RequestV0, request).member_id, None)]
    else:
        members = cast(RequestV3 | RequestV5, request).members
        leaving = [(m.member_id, m.group_instance_id) for m in members]
    code, answer = await on_group_shard(
        ctx, request.group_id, lambda s: s.leave_group(request.group_id, leaving)
    )
    if code:
        return {"throttle_time": 0, "error_code": code, "members": []}
    top, members = answer
    if ctx.version < 3 and members:
        top = top or members[0]["error_code"]
    return {"throttle_time": 0, "error_code": top, "members": members}
