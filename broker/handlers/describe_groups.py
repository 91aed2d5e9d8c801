"""DescribeGroups (15), v0-v6.

State, protocol type, chosen protocol and members with their metadata and
assignment (protocol, metadata and assignments only for a Stable group, as Kafka). An
unknown group, or one of another type, is described as Dead with no members; v6 adds
GROUP_ID_NOT_FOUND and Kafka's message. With ACLs a group needs DESCRIBE on it:
GROUP_AUTHORIZATION_FAILED otherwise. v3+: the group's authorized operations when
asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from kio.schema.describe_groups.v0.request import DescribeGroupsRequest as RequestV0
from kio.schema.describe_groups.v3.request import DescribeGroupsRequest as RequestV3

from odradek.broker.handlers.authorization import NOT_REQUESTED, authorized_operations
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.groups_common import on_group_shard
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 6

# v1-v2 have the fields of v0, v4-v6 those of v3
Request = RequestV0 | RequestV3


async def handle(ctx: RequestContext, request: Request) -> Reply:
    with_operations = ctx.version >= 3 and cast(RequestV3, request).include_authorized_operations
    groups = []
    for group_id in request.groups:
        if ctx.allowed(Operation.DESCRIBE, ResourceType.GROUP, group_id):
            code, described = await on_group_shard(ctx, group_id, _describer(group_id))
        else:
            code, described = ErrorCode.group_authorization_failed, None
        operations = NOT_REQUESTED
        message = None
        if isinstance(described, str) and ctx.version >= 6:
            code, message = ErrorCode.group_id_not_found, described
        if with_operations and code == 0:
            operations = authorized_operations(ctx, ResourceType.GROUP, group_id)
        if not isinstance(described, dict):
            described = {
                "group_id": group_id,
                "group_state": "Dead" if code != ErrorCode.group_authorization_failed else "",
                "protocol_type": "",
                "protocol_data": "",
                "members": [],
            }
        groups.append(
            {
                "error_code": code,
                "error_message": message,
                "authorized_operations": operations,
                **described,
            }
        )
    return {"throttle_time": 0, "groups": groups}


def _describer(group_id: str) -> Callable[[Any], Any]:
    return lambda shard: shard.describe(group_id)
