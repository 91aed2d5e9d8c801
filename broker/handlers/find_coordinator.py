"""FindCoordinator (10), v0-v6.

- Key type 0 (group), 1 (transaction) or, v6+, 2 (share: "group:topic id:partition",
  a share-partition's state); v4+ asks for several keys at once.
- This broker coordinates every key; the first call creates
  `__consumer_offsets` and starts loading its shards.
- An unknown key type answers INVALID_REQUEST.
- With ACLs a key needs DESCRIBE on its group (GROUP_AUTHORIZATION_FAILED) or
  transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); share keys CLUSTER_ACTION
  on the cluster (CLUSTER_AUTHORIZATION_FAILED). A malformed share key answers
  INVALID_REQUEST.
"""

from __future__ import annotations

import base64
from typing import Any

from broker.handlers.authorization import cluster_allowed
from broker.handlers.base import Reply, RequestContext
from broker.security.resources import Operation, ResourceType
from protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 6

GROUP, TRANSACTION, SHARE = 0, 1, 2


async def handle(ctx: RequestContext, request: Any) -> Reply:
    config = ctx.broker.config
    key_type = getattr(request, "key_type", GROUP)
    code: int = ErrorCode.none
    if key_type == GROUP:
        await ctx.broker.groups.ensure_started()
    elif key_type == TRANSACTION:
        code = await ctx.broker.ensure_transaction_coordinator()
    elif key_type == SHARE and ctx.version >= 6:
        await ctx.broker.share.ensure_started()
    else:
        code = ErrorCode.invalid_request
    found = code == ErrorCode.none
    answer = {
        "error_code": code,
        "error_message": None if found else "no coordinator for this key type",
        "node_id": config.node_id if found else -1,
        "host": ctx.listener.advertised_host if found else "",
        "port": ctx.listener.advertised_port if found else -1,
    }
    if ctx.version < 4:
        return {"throttle_time": 0, **_authorized(ctx, key_type, request.key, answer)}
    return {
        "throttle_time": 0,
        "coordinators": [
            {"key": key, **_authorized(ctx, key_type, key, answer)}
            for key in request.coordinator_keys
        ],
    }


def _authorized(ctx: RequestContext, key_type: int, key: str, answer: dict) -> dict[str, Any]:
    """The answer for one key, or the authorization error when it may not be described."""
    if key_type == GROUP:
        resource, refused = ResourceType.GROUP, ErrorCode.group_authorization_failed
    elif key_type == TRANSACTION:
        resource, refused = (
            ResourceType.TRANSACTIONAL_ID,
            ErrorCode.transactional_id_authorization_failed,
        )
    elif key_type == SHARE:
        if not _is_share_key(key):
            return _refusal(ErrorCode.invalid_request, "A share key is group:topic id:partition.")
        if cluster_allowed(ctx, Operation.CLUSTER_ACTION):
            return answer
        return _refusal(ErrorCode.cluster_authorization_failed, None)
    else:
        return answer
    if ctx.allowed(Operation.DESCRIBE, resource, key):
        return answer
    return _refusal(refused, None)


def _refusal(code: int, message: str | None) -> dict[str, Any]:
    return {"error_code": code, "error_message": message, "node_id": -1, "host": "", "port": -1}


def _is_share_key(key: str) -> bool:
    """group:topic id:partition, the topic id in Kafka's base64 form."""
    group, _, rest = key.rpartition(":")
    group, _, topic_id = group.rpartition(":")
    try:
        raw = base64.urlsafe_b64decode(topic_id + "==")
        int(rest)
    except ValueError:
        return False
    return bool(group) and len(raw) == 16
