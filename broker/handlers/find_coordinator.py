"""FindCoordinator (10), v0-v6.

- Key type 0 (group), 1 (transaction) or, v6+, 2 (share: "group:topic id:partition",
  a share-partition's state); v4+ asks for several keys at once.
- One node of its own coordinates every key; the first call creates
  `__consumer_offsets` and starts loading its shards. In a cluster the coordinator
  is the leader of the key's partition of the internal topic (created through the
  controller with its replication factor: COORDINATOR_NOT_AVAILABLE while the
  cluster has fewer live brokers, or the partition has no leader).
- An unknown key type answers INVALID_REQUEST.
- With ACLs a key needs DESCRIBE on its group (GROUP_AUTHORIZATION_FAILED) or
  transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); share keys CLUSTER_ACTION
  on the cluster (CLUSTER_AUTHORIZATION_FAILED). A malformed share key answers
  INVALID_REQUEST.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from functools import partial
from typing import Any, cast

import structlog
from kio.schema.find_coordinator.v0.request import FindCoordinatorRequest as RequestV0
from kio.schema.find_coordinator.v1.request import FindCoordinatorRequest as RequestV1
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest as RequestV4

from odradek.broker.dataplane.topics import TopicError
from odradek.broker.handlers.authorization import cluster_allowed
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.metadata import live_brokers
from odradek.broker.security.resources import Operation, ResourceType
from odradek.coordinator.runtime import CoordinatorRuntime
from odradek.protocol.errors import ErrorCode, default_message

MIN_VERSION, MAX_VERSION = 0, 6

log = structlog.get_logger("broker")

# v2-v3 have the fields of v1, v5-v6 those of v4
Request = RequestV0 | RequestV1 | RequestV4

GROUP, TRANSACTION, SHARE = 0, 1, 2


async def _runtime(ctx: RequestContext, key_type: int) -> CoordinatorRuntime | None:
    """The coordinator of the key type, started (its topic created) if it was not."""
    services = ctx.services
    if key_type == GROUP:
        await services.groups.ensure_started()
        return services.groups
    if key_type == TRANSACTION:
        await services.ensure_transaction_coordinator()
        return services.transactions.runtime
    if key_type == SHARE and ctx.version >= 6:
        await services.share.ensure_started()
        return services.share.runtime
    return None


def _locate(ctx: RequestContext, runtime: CoordinatorRuntime, key: str) -> dict[str, Any]:
    """This node on its own; in a cluster the leader of the key's partition."""
    if ctx.services.member is None:
        return _found(
            ctx.services.config.node_id, ctx.listener.advertised_host, ctx.listener.advertised_port
        )
    partition = ctx.services.topics.partition(runtime.topic, runtime.partition_for(key))
    leader = (
        partition.replication.leader_id if partition is not None and partition.replication else -1
    )
    endpoint = live_brokers(ctx).get(leader)
    if endpoint is None:
        return _refusal(ErrorCode.coordinator_not_available, "the coordinator has no leader")
    host, port, _rack = endpoint
    return _found(leader, host, port)


def _found(node_id: int, host: str, port: int) -> dict[str, Any]:
    return {
        "error_code": ErrorCode.none,
        "error_message": "",  # as Kafka answers (v4+)
        "node_id": node_id,
        "host": host,
        "port": port,
    }


async def handle(ctx: RequestContext, request: Request) -> Reply:
    # v0 knows only groups; v4+ asks for several keys at once
    key_type = cast(RequestV1 | RequestV4, request).key_type if ctx.version >= 1 else GROUP
    if ctx.version < 4:
        keys = [cast(RequestV0 | RequestV1, request).key]
    else:
        keys = list(cast(RequestV4, request).coordinator_keys)
    answers: list[dict[str, Any]] = []
    try:
        runtime = await _runtime(ctx, key_type)
    except TopicError as exc:  # a cluster that cannot hold the topic (yet)
        # as Kafka warns "Auto topic creation failed for __transaction_state ...": the
        # client only retries, so the reason is in the log (a replication factor above
        # the brokers there are, say)
        log.warning("coordinator topic not created", key_type=key_type, reason=exc.message)
        unavailable = _refusal(ErrorCode.coordinator_not_available, exc.message)
        answers = [unavailable for _ in keys]
    else:
        for key in keys:
            if runtime is None:
                # Kafka's words: none for a share key below v6, its general ones otherwise
                why = "" if key_type == SHARE else default_message(ErrorCode.invalid_request)
                answers.append(_refusal(ErrorCode.invalid_request, why))
            else:
                answers.append(_authorized(ctx, key_type, key, partial(_locate, ctx, runtime, key)))
    if ctx.version < 4:
        # Kafka answers Errors.message() below v4: "NONE", or the error's default words
        code = answers[0]["error_code"]
        message = "NONE" if code == ErrorCode.none else default_message(code)
        return {"throttle_time": 0, **answers[0], "error_message": message}
    return {
        "throttle_time": 0,
        "coordinators": [{"key": key, **answer} for key, answer in zip(keys, answers, strict=True)],
    }


def _authorized(
    ctx: RequestContext, key_type: int, key: str, locate: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
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
            return _refusal(ErrorCode.invalid_request, "")  # Kafka gives no reason
        if cluster_allowed(ctx, Operation.CLUSTER_ACTION):
            return locate()
        return _refusal(ErrorCode.cluster_authorization_failed, None)
    else:
        return locate()
    if ctx.allowed(Operation.DESCRIBE, resource, key):
        return locate()
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
