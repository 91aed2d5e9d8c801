"""StreamsGroupTopologyDescriptionUpdate (93), v0: a streams member pushes its
topology's description, for a topology-description plugin to store (KIP-1331).

Odradek has no such plugin, as Kafka 4.4 on its default configuration: every push is
answered UNSUPPORTED_VERSION ("The broker has no streams group topology description
plugin configured."), whatever group, member or epoch it names. Checked first, as on
Kafka: the streams protocol is enabled (else UNSUPPORTED_VERSION with Kafka's default
message), the group may be READ (GROUP_AUTHORIZATION_FAILED). Heartbeats never ask for
a push (`topologyDescriptionRequired` stays false) and StreamsGroupDescribe v1 says no
description is stored.
"""

from __future__ import annotations

from typing import Any

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.streams_group_heartbeat import streams_enabled
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode, default_message
from odradek.protocol.schemas.streams_group_topology_description_update.v0.request import (
    StreamsGroupTopologyDescriptionUpdateRequest,
)

MIN_VERSION, MAX_VERSION = 0, 0

NO_PLUGIN = "The broker has no streams group topology description plugin configured."


async def handle(
    ctx: RequestContext, request: StreamsGroupTopologyDescriptionUpdateRequest
) -> Reply:
    if not streams_enabled(ctx):
        return _error(ErrorCode.unsupported_version, "The version of API is not supported.")
    if not ctx.allowed(Operation.READ, ResourceType.GROUP, request.group_id):
        code = ErrorCode.group_authorization_failed
        return _error(code, default_message(code))
    return _error(ErrorCode.unsupported_version, NO_PLUGIN)


def _error(code: int, message: str | None) -> dict[str, Any]:
    return {"throttle_time": 0, "error_code": code, "error_message": message}
