"""StreamsGroupDescribe (89), v0-v1: streams groups with their epochs, their topology (as
set against the topics once the group is ready, as its members gave it before), and
each member's process, endpoint, client tags, current and target tasks. A group id
that is not a streams group answers GROUP_ID_NOT_FOUND. With ACLs a group needs
DESCRIBE on it (GROUP_AUTHORIZATION_FAILED); its authorized operations when asked for.

v1 (KIP-1331, KIP-1357) adds the assignor the next assignment will use (the group's
`streams.assignor.name`, else the broker's default; null for a group not described)
and the topology description. Odradek stores none (no topology-description plugin, as
Kafka on its default configuration): a described group asked for it with
`includeTopologyDescription` says NOT_STORED (1), else NOT_REQUESTED (0), and carries
a null description.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from kio.schema.streams_group_describe.v0.request import StreamsGroupDescribeRequest as RequestV0

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.groups_common import describe_each, described_group, missing_group
from odradek.broker.handlers.streams_group_heartbeat import streams_enabled
from odradek.protocol.errors import ErrorCode
from odradek.protocol.schemas.streams_group_describe.v1.request import (
    StreamsGroupDescribeRequest as RequestV1,
)

MIN_VERSION, MAX_VERSION = 0, 1

Request = RequestV0 | RequestV1

# TopologyDescriptionStatus (v1)
NOT_REQUESTED_DESCRIPTION, NOT_STORED = 0, 1


async def handle(ctx: RequestContext, request: Request) -> Reply:
    if not streams_enabled(ctx):
        groups = [
            _missing(g, ErrorCode.unsupported_version, "The version of API is not supported.")
            for g in request.group_ids
        ]
        return {"throttle_time": 0, "groups": groups}
    asked = ctx.version >= 1 and cast(RequestV1, request).include_topology_description
    status = NOT_STORED if asked else NOT_REQUESTED_DESCRIPTION
    groups = await describe_each(
        ctx, request, _describe, lambda group: _described(ctx, group, status), _missing
    )
    return {"throttle_time": 0, "groups": groups}


def _describe(group_id: str) -> Callable[[Any], Any]:
    return lambda shard: shard.describe_streams_group(group_id)


def _described(ctx: RequestContext, group: dict[str, Any], status: int) -> dict[str, Any]:
    assignor = ctx.services.group_settings(group["group_id"]).streams_assignor_name
    return {
        **described_group({**group, "assignor_name": assignor}, group["members"]),
        "topology": group["topology"],
        "topology_description": None,
        "topology_description_status": status,
    }


def _missing(group_id: str, code: int, message: str | None) -> dict[str, Any]:
    return {
        **missing_group(group_id, code, message),
        "topology": None,
        "topology_description": None,
        "topology_description_status": NOT_REQUESTED_DESCRIPTION,
        "assignor_name": None,
    }
