"""ShareGroupHeartbeat (76), v1: membership of a share group (KIP-932).

A member joins with epoch 0, the member id it made itself and the topics it
subscribes to; it heartbeats with its epoch; the answer carries its epoch and, when
it changed, the partitions it reads (shared with other members). Epoch -1 leaves the
group, and only that: records the member holds are given back when its share session
closes (a ShareFetch or ShareAcknowledge with the final epoch, which a closing
consumer sends), when its connection closes, or when their acquisition locks run
out, as on Kafka. The shard does the work
(coordinator/group/share_groups.py). The group's own `share.session.timeout.ms` and
`share.heartbeat.interval.ms` (group configs) win over the broker's. With ACLs the
group needs READ (GROUP_AUTHORIZATION_FAILED) and the subscribed topics DESCRIBE
(TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest

from odradek.broker.handlers.authorization import acls_enabled, allowed_names
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.groups_common import client_host, heartbeat_error, heartbeat_reply
from odradek.broker.security.resources import Operation, ResourceType
from odradek.broker.settings.features import SHARE_VERSION
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 1, 1


async def handle(ctx: RequestContext, request: ShareGroupHeartbeatRequest) -> Reply:
    if ctx.services.features.finalized.level(SHARE_VERSION) == 0:
        return _error(ErrorCode.unsupported_version, None)
    if not ctx.allowed(Operation.READ, ResourceType.GROUP, request.group_id):
        return _error(ErrorCode.group_authorization_failed, None)
    names = request.subscribed_topic_names
    if names and acls_enabled(ctx):
        described = allowed_names(ctx, Operation.DESCRIBE, ResourceType.TOPIC, names)
        if set(names) - set(described):
            return _error(ErrorCode.topic_authorization_failed, None)
    details = {
        "group_id": request.group_id,
        "member_id": request.member_id,
        "member_epoch": request.member_epoch,
        "rack_id": request.rack_id,
        "subscribed_topic_names": names,
        "client_id": ctx.header.client_id or "",
        "client_host": client_host(ctx),
    }
    return await heartbeat_reply(ctx, request.group_id, lambda s: s.share_group_heartbeat(details))


def _error(code: ErrorCode, message: str | None) -> Reply:
    return heartbeat_error(code, message)
