"""StreamsGroupDescribe (89), v0: streams groups with their epochs, their topology (as
set against the topics once the group is ready, as its members gave it before), and
each member's process, endpoint, client tags, current and target tasks. A group id
that is not a streams group answers GROUP_ID_NOT_FOUND. With ACLs a group needs
DESCRIBE on it (GROUP_AUTHORIZATION_FAILED); its authorized operations when asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from odradek.broker.handlers.authorization import NOT_REQUESTED
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.groups_common import describe_each
from odradek.broker.handlers.streams_group_heartbeat import streams_enabled
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 0


async def handle(ctx: RequestContext, request: Any) -> Reply:
    if not streams_enabled(ctx):
        groups = [
            _missing(g, ErrorCode.unsupported_version, "The version of API is not supported.")
            for g in request.group_ids
        ]
        return {"throttle_time": 0, "groups": groups}
    groups = await describe_each(
        ctx,
        request.group_ids,
        request.include_authorized_operations,
        _describe,
        _described,
        _missing,
    )
    return {"throttle_time": 0, "groups": groups}


def _describe(group_id: str) -> Callable[[Any], Any]:
    return lambda shard: shard.describe_streams_group(group_id)


def _described(group: dict[str, Any]) -> dict[str, Any]:
    return {
        "error_code": ErrorCode.none,
        "error_message": None,
        "group_id": group["group_id"],
        "group_state": group["group_state"],
        "group_epoch": group["group_epoch"],
        "assignment_epoch": group["assignment_epoch"],
        "topology": group["topology"],
        "members": group["members"],
        "authorized_operations": NOT_REQUESTED,
    }


def _missing(group_id: str, code: int, message: str | None) -> dict[str, Any]:
    return {
        "error_code": code,
        "error_message": message,
        "group_id": group_id,
        "group_state": "",
        "group_epoch": 0,
        "assignment_epoch": 0,
        "topology": None,
        "members": [],
        "authorized_operations": NOT_REQUESTED,
    }
