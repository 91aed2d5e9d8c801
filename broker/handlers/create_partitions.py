"""CreatePartitions (37), v0-v3.

- The count is the new total; it must be larger than the current one
  (INVALID_PARTITIONS otherwise). Assignments, if given, are one replica list per new
  partition, of the topic's replication factor, of registered brokers, one live at
  least (INVALID_REPLICA_ASSIGNMENT, in the words of Kafka's controller:
  coordinator/cluster/assignments.py); in a cluster the controller checks the brokers
  and places the partitions there. Unknown topic: UNKNOWN_TOPIC_OR_PARTITION. A topic
  named twice is answered once, first, INVALID_REQUEST. validate_only changes nothing.
- Consumers subscribed to the topic see the new partitions on their next
  metadata refresh.
- The partitions added count against the client's controller_mutation_rate (strict
  from v3: THROTTLING_QUOTA_EXCEEDED while the quota is used up), validate_only too.
- With ACLs a topic needs ALTER on it: TOPIC_AUTHORIZATION_FAILED otherwise (before
  any other check).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kio.schema.create_partitions.v3.request import CreatePartitionsRequest, CreatePartitionsTopic

from odradek.broker.dataplane.quotas import MutationQuota, QuotaExceeded
from odradek.broker.dataplane.topics import TopicError
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.quota_common import mutation_quota, mutation_throttled
from odradek.broker.security.resources import Operation, ResourceType
from odradek.coordinator.cluster.assignments import new_partitions_problem
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 3
# v0-v3 have the same fields: typed as the newest


def _check(ctx: RequestContext, topic: CreatePartitionsTopic) -> tuple[ErrorCode, str | None]:
    if not ctx.allowed(Operation.ALTER, ResourceType.TOPIC, topic.name):
        return ErrorCode.topic_authorization_failed, "The topic authorization is failed."
    existing = ctx.services.topics.get(topic.name)
    if existing is None:
        return ErrorCode.unknown_topic_or_partition, f"The topic '{topic.name}' does not exist."
    current = len(existing.partitions)
    assignments = None
    if topic.assignments is not None and ctx.services.member is None:
        assignments = [list(a.broker_ids) for a in topic.assignments]
    # (in a cluster the controller checks the assignments: it knows the brokers and the
    # topic's replication factor)
    alone = {ctx.services.config.node_id}
    problem = new_partitions_problem(
        topic.name, current, topic.count, 1, assignments, registered=alone, live=alone
    )
    return problem or (ErrorCode.none, None)


async def handle(ctx: RequestContext, request: CreatePartitionsRequest) -> Reply:
    counts = Counter(topic.name for topic in request.topics)
    # as Kafka's controller: a name given twice is answered first, once
    results: list[dict[str, Any]] = [
        {
            "name": name,
            "error_code": ErrorCode.invalid_request,
            "error_message": "Duplicate topic name.",
        }
        for name, count in counts.items()
        if count > 1
    ]
    quota = mutation_quota(ctx, strict_since=3)
    for topic in request.topics:
        if counts[topic.name] > 1:
            continue
        code, message = _check(ctx, topic)
        if code == ErrorCode.none:
            code, message = _take(ctx, quota, topic)
        if code == ErrorCode.none and not request.validate_only:
            try:
                assignments = None
                if topic.assignments is not None:
                    assignments = [list(a.broker_ids) for a in topic.assignments]
                await ctx.services.add_partitions(topic.name, topic.count, assignments)
            except TopicError as exc:
                code, message = ErrorCode(exc.code), exc.message
        results.append({"name": topic.name, "error_code": code, "error_message": message})
    return mutation_throttled(ctx, quota, {"throttle_time": 0, "results": results})


def _take(
    ctx: RequestContext, quota: MutationQuota, topic: CreatePartitionsTopic
) -> tuple[ErrorCode, str | None]:
    existing = ctx.services.topics.get(topic.name)
    added = topic.count - (len(existing.partitions) if existing is not None else 0)
    try:
        quota.take(added, ctx.services.now_ms())
    except QuotaExceeded:
        return ErrorCode.throttling_quota_exceeded, None
    return ErrorCode.none, None
