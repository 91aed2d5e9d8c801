"""DeleteTopics (20), v1-v6.

- Topics by name, or from v6 by id (UNKNOWN_TOPIC_ID when unknown). As Kafka's
  controller, INVALID_REQUEST for an entry with neither name nor id or with both, and
  once for a name or an id given twice (neither is deleted).
- Unknown names answer UNKNOWN_TOPIC_OR_PARTITION; with
  `delete.topic.enable=false` every deletion is TOPIC_DELETION_DISABLED.
- The partitions' files are removed and parked fetches on them wake up.
- With ACLs (unless DELETE on the cluster) a topic needs DELETE on it
  (TOPIC_AUTHORIZATION_FAILED); a named topic the principal may not DESCRIBE answers
  TOPIC_AUTHORIZATION_FAILED whether it exists or not, and one given by id has its
  name withheld.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any, cast

from kio.schema.delete_topics.v1.request import DeleteTopicsRequest as RequestV1
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest as RequestV6

from odradek.broker.dataplane.quotas import QuotaExceeded
from odradek.broker.handlers.authorization import cluster_allowed
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.quota_common import mutation_quota, mutation_throttled
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode, default_message

MIN_VERSION, MAX_VERSION = 1, 6

# v2-v5 have the fields of v1; v6 names topics by name or id
Request = RequestV1 | RequestV6


def _refused(name: str | None, topic_id: uuid.UUID | None, message: str) -> dict[str, Any]:
    return {
        "name": name,
        "topic_id": topic_id,
        "error_code": ErrorCode.invalid_request,
        "error_message": message,
    }


def _sorted_out(
    wanted: list[tuple[str | None, uuid.UUID | None]],
) -> tuple[list[tuple[str | None, uuid.UUID | None]], list[dict[str, Any]]]:
    """(the deletions to make, the answers to the ones refused at once), as Kafka's
    controller: neither name nor id, both, a name or an id named twice (answered once)."""
    names = Counter(name for name, topic_id in wanted if name is not None and not topic_id)
    ids: Counter[uuid.UUID | None] = Counter(
        topic_id for name, topic_id in wanted if name is None and topic_id
    )
    refused, kept = [], []
    for name, topic_id in wanted:
        if name is None and not topic_id:
            refused.append(_refused(None, None, "Neither topic name nor id were specified."))
        elif name is not None and topic_id:
            refused.append(
                _refused(name, topic_id, "You may not specify both topic name and topic id.")
            )
        elif (names[name] if name is not None else ids[topic_id]) < 2:
            kept.append((name, topic_id))
    refused += [_refused(name, None, "Duplicate topic name.") for name, n in names.items() if n > 1]
    refused += [_refused(None, i, "Duplicate topic id.") for i, n in ids.items() if n > 1]
    return kept, refused


async def handle(ctx: RequestContext, request: Request) -> Reply:
    services = ctx.services
    quota = mutation_quota(ctx, strict_since=5)
    wanted: list[tuple[str | None, uuid.UUID | None]]
    if ctx.version >= 6:
        wanted = [(t.name, t.topic_id) for t in cast(RequestV6, request).topics]
    else:
        wanted = [(name, None) for name in cast(RequestV1, request).topic_names]
    wanted, results = _sorted_out(wanted)
    every_topic = cluster_allowed(ctx, Operation.DELETE)
    for name, topic_id in wanted:
        if name is None and topic_id is not None:
            topic = services.topics.by_id(topic_id)
            missing = ErrorCode.unknown_topic_id
        else:
            topic = services.topics.get(name) if name is not None else None
            missing = ErrorCode.unknown_topic_or_partition
        result: dict[str, Any] = {"name": name, "topic_id": topic_id, "error_code": 0}
        known_name = topic.name if topic is not None else name
        describable = every_topic or known_name is None or _may(ctx, Operation.DESCRIBE, known_name)
        deletable = every_topic or known_name is None or _may(ctx, Operation.DELETE, known_name)
        if not services.config.delete_topic_enable:
            result["error_code"] = ErrorCode.topic_deletion_disabled
        elif name is None and topic is not None and not deletable:
            result["error_code"] = ErrorCode.topic_authorization_failed
            result["name"] = topic.name if describable else None
        elif name is not None and not describable:
            result["error_code"] = ErrorCode.topic_authorization_failed
        elif topic is None:
            result["error_code"] = missing
            result["error_message"] = default_message(missing)  # Kafka's words
        elif not deletable:
            result["error_code"] = ErrorCode.topic_authorization_failed
        else:
            try:
                quota.take(len(topic.partitions), services.now_ms())
            except QuotaExceeded:
                result["error_code"] = ErrorCode.throttling_quota_exceeded
            else:
                await services.delete_topic(topic.name)
            result["name"] = topic.name
            result["topic_id"] = topic.topic_id
        results.append(result)
    return mutation_throttled(ctx, quota, {"throttle_time": 0, "responses": results})


def _may(ctx: RequestContext, operation: Operation, name: str) -> bool:
    return ctx.allowed(operation, ResourceType.TOPIC, name)
