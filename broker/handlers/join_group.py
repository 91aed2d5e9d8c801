"""JoinGroup (11), v0-v9.

- Empty group id: INVALID_GROUP_ID; session timeout outside the broker's
  [group.min.session.timeout.ms, group.max.session.timeout.ms]:
  INVALID_SESSION_TIMEOUT; protocol type or protocols not shared with the
  group: INCONSISTENT_GROUP_PROTOCOL.
- v4+: a new dynamic member first gets MEMBER_ID_REQUIRED with its id.
- The answer waits until every known member has rejoined (or the rebalance
  timeout, or for a new group `group.initial.rebalance.delay.ms`); the leader
  (first joiner) receives every member's metadata, the others none.
- Static members (group.instance.id) that restart take their old place and
  assignment without a rebalance; a second live copy is FENCED_INSTANCE_ID.
- With ACLs the group needs READ: GROUP_AUTHORIZATION_FAILED otherwise.
"""

from __future__ import annotations

from typing import Any, cast

from kio.schema.join_group.v0.request import JoinGroupRequest as RequestV0
from kio.schema.join_group.v1.request import JoinGroupRequest as RequestV1
from kio.schema.join_group.v5.request import JoinGroupRequest as RequestV5

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.groups_common import client_host, on_group_shard
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 9

# v2-v4 have the fields of v1; v6-v9 those of v5 that are read (v8 adds a reason)
Request = RequestV0 | RequestV1 | RequestV5


async def handle(ctx: RequestContext, request: Request) -> Reply:
    session_ms = int(request.session_timeout.total_seconds() * 1000)
    rebalance = cast(RequestV1, request).rebalance_timeout if ctx.version >= 1 else None
    instance = cast(RequestV5, request).group_instance_id if ctx.version >= 5 else None
    details = {
        "group_id": request.group_id,
        "member_id": request.member_id,
        "group_instance_id": instance,
        "session_timeout_ms": session_ms,
        # (v0 has none: the session timeout stands for it; from v1 even 0 is taken)
        "rebalance_timeout_ms": (
            session_ms if rebalance is None else int(rebalance.total_seconds() * 1000)
        ),
        "protocol_type": request.protocol_type,
        "protocols": [{"name": p.name, "metadata": p.metadata} for p in request.protocols],
        "client_id": ctx.header.client_id or "",
        "client_host": client_host(ctx),
        "require_known_member_id": ctx.version >= 4,
    }
    if ctx.allowed(Operation.READ, ResourceType.GROUP, request.group_id):
        code, answer = await on_group_shard(ctx, request.group_id, lambda s: s.join_group(details))
    else:
        code = ErrorCode.group_authorization_failed
    if code:
        answer = {"error_code": code}
    defaults: dict[str, Any] = {
        "throttle_time": 0,
        "generation_id": -1,
        "protocol_type": None,
        "protocol_name": None,
        "leader": "",
        "skip_assignment": False,
        "member_id": request.member_id,
        "members": [],
    }
    reply = {**defaults, **answer}
    if ctx.version < 7 and reply["protocol_name"] is None:
        reply["protocol_name"] = ""
    return reply
