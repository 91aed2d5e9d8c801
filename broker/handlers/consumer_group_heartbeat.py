"""ConsumerGroupHeartbeat (68), v0-v1: the consumer group protocol (KIP-848).

A member joins with epoch 0 and its subscription, then heartbeats with its epoch and,
when they changed, what it owns; the answer carries its new epoch and, when it
changed, the partitions it should own. Epoch -1 leaves, -2 leaves for a while (a static
member). The group's shard does the work (coordinator/group/consumer_groups.py);
here the request becomes a dict and the answer a response. With ACLs the group needs
READ: GROUP_AUTHORIZATION_FAILED otherwise.
"""

from __future__ import annotations

from typing import cast

from kio.schema.consumer_group_heartbeat.v0.request import (
    ConsumerGroupHeartbeatRequest as RequestV0,
)
from kio.schema.consumer_group_heartbeat.v1.request import (
    ConsumerGroupHeartbeatRequest as RequestV1,
)

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.groups_common import client_host, heartbeat_error, heartbeat_reply
from odradek.broker.security.resources import Operation, ResourceType
from odradek.broker.settings.features import GROUP_VERSION
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 1

Request = RequestV0 | RequestV1


async def handle(ctx: RequestContext, request: Request) -> Reply:
    protocols = ctx.services.config.group_coordinator_rebalance_protocols
    if "consumer" not in {p.strip() for p in protocols.split(",")}:
        return _error(ErrorCode.unsupported_version, "The consumer group protocol is disabled.")
    if ctx.services.features.finalized.level(GROUP_VERSION) == 0:
        return _error(ErrorCode.unsupported_version, None)
    if not ctx.allowed(Operation.READ, ResourceType.GROUP, request.group_id):
        return _error(ErrorCode.group_authorization_failed, None)
    owned = request.topic_partitions
    rebalance_timeout = request.rebalance_timeout
    regex = cast(RequestV1, request).subscribed_topic_regex if ctx.version >= 1 else None
    details = {
        "group_id": request.group_id,
        "member_id": request.member_id,
        "member_epoch": request.member_epoch,
        "instance_id": request.instance_id,
        "rack_id": request.rack_id,
        "rebalance_timeout_ms": int(rebalance_timeout.total_seconds() * 1000),
        "subscribed_topic_names": request.subscribed_topic_names,
        "subscribed_topic_regex": regex,
        "server_assignor": request.server_assignor,
        "owned": None
        if owned is None
        else {tp.topic_id: frozenset(tp.partitions) for tp in owned if tp.topic_id is not None},
        "client_id": ctx.header.client_id or "",
        "client_host": client_host(ctx),
    }
    return await heartbeat_reply(
        ctx, request.group_id, lambda s: s.consumer_group_heartbeat(details)
    )


def _error(code: ErrorCode, message: str | None) -> Reply:
    return heartbeat_error(code, message)
