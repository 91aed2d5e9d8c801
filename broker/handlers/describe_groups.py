"""DescribeGroups (15), v0-v5.

State, protocol type, chosen protocol and members with their metadata and
assignment. An unknown group is described as Dead with no members.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from broker.handlers.base import Reply, RequestContext
from broker.handlers.groups_common import on_group_shard

MIN_VERSION, MAX_VERSION = 0, 5

ALL_GROUP_OPERATIONS = 0b10011011000  # READ, DESCRIBE, DELETE bits of Kafka's AclOperation


async def handle(ctx: RequestContext, request: Any) -> Reply:
    groups = []
    for group_id in request.groups:
        code, described = await on_group_shard(ctx, group_id, _describer(group_id))
        if described is None:
            described = {
                "group_id": group_id,
                "group_state": "Dead",
                "protocol_type": "",
                "protocol_data": "",
                "members": [],
            }
        groups.append(
            {"error_code": code, "authorized_operations": ALL_GROUP_OPERATIONS, **described}
        )
    return {"throttle_time": 0, "groups": groups}


def _describer(group_id: str) -> Callable[[Any], Any]:
    return lambda shard: shard.describe(group_id)
