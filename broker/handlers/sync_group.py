"""SyncGroup (14), v0-v5.

- Followers wait until the leader sends the assignment; then every member
  gets its own assignment (opaque bytes) and the group is Stable.
- Unknown group or member: UNKNOWN_MEMBER_ID; wrong generation:
  ILLEGAL_GENERATION; a rebalance started meanwhile: REBALANCE_IN_PROGRESS;
  v5 protocol type/name not the group's, or missing: INCONSISTENT_GROUP_PROTOCOL.
- With ACLs the group needs READ: GROUP_AUTHORIZATION_FAILED otherwise.
"""

from __future__ import annotations

from typing import cast

from kio.schema.sync_group.v0.request import SyncGroupRequest as RequestV0
from kio.schema.sync_group.v3.request import SyncGroupRequest as RequestV3
from kio.schema.sync_group.v5.request import SyncGroupRequest as RequestV5

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.groups_common import on_group_shard
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 5

# v1-v2 have the fields of v0, v4 those of v3
Request = RequestV0 | RequestV3 | RequestV5


async def handle(ctx: RequestContext, request: Request) -> Reply:
    instance = cast(RequestV3, request).group_instance_id if ctx.version >= 3 else None
    protocol_type: str | None = None
    protocol_name: str | None = None
    if ctx.version >= 5:
        named = cast(RequestV5, request)
        protocol_type, protocol_name = named.protocol_type, named.protocol_name
    details = {
        "group_id": request.group_id,
        "generation_id": request.generation_id,
        "member_id": request.member_id,
        "group_instance_id": instance,
        "protocol_type": protocol_type,
        "protocol_name": protocol_name,
        "assignments": [
            {"member_id": a.member_id, "assignment": a.assignment} for a in request.assignments
        ],
    }
    code: int
    if ctx.version >= 5 and (protocol_type is None or protocol_name is None):
        code = ErrorCode.inconsistent_group_protocol
    elif ctx.allowed(Operation.READ, ResourceType.GROUP, request.group_id):
        code, answer = await on_group_shard(ctx, request.group_id, lambda s: s.sync_group(details))
    else:
        code = ErrorCode.group_authorization_failed
    if code:
        answer = {"error_code": code}
    return {
        "throttle_time": 0,
        "protocol_type": None,
        "protocol_name": None,
        "assignment": b"",
        **answer,
    }
