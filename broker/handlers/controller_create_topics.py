"""CreateTopics (19), v2-v7, on the controller listener: a broker of the cluster passes
on a client's request, or a client that bootstraps from the controllers asks itself.

- Checked in the order of Kafka's controller: the name, a topic of that name
  (TOPIC_ALREADY_EXISTS), null config values and the configs (INVALID_CONFIG), then the
  counts (-1: num.partitions and default.replication.factor) or the assignments.
- The controller places the replicas round-robin over the live brokers
  (INVALID_REPLICATION_FACTOR when there are fewer than asked for), or where the
  request's assignments say (INVALID_REPLICA_ASSIGNMENT for unregistered brokers, a
  broker twice, uneven replica counts, or no live replica).
- A name given twice is answered once, INVALID_REQUEST, after the others.
- validate_only checks everything and creates nothing.
"""

from __future__ import annotations

from collections import Counter
from functools import partial
from typing import Any

from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest

from odradek.broker.dataplane.topics import TopicError, check_topic_name
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.controller_common import answered_by_controller, dry_run
from odradek.broker.handlers.create_topics import check_new_configs
from odradek.coordinator.runtime import Result
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 2, 7
# v2-v7 have the same fields: typed as the newest


def _create(shard: Any, topic: CreatableTopic, details: dict[str, Any], dry: bool) -> Any:
    if topic.name not in shard.topics:  # (an existing one is refused first)
        try:
            check_new_configs(topic)
        except TopicError as exc:
            return Result([], {"error_code": exc.code, "error_message": exc.message})
    return dry_run(shard.create_topic(details), dry)


def _details(ctx: RequestContext, topic: CreatableTopic) -> dict[str, Any]:
    config = ctx.services.config
    partitions, factor = int(topic.num_partitions), int(topic.replication_factor)
    assignments = {a.partition_index: list(a.broker_ids) for a in topic.assignments}
    if assignments and (partitions != -1 or factor != -1):
        raise TopicError(
            ErrorCode.invalid_request,
            "Both numPartitions or replicationFactor and replicasAssignments were set. "
            "Both cannot be used at the same time.",
        )
    if assignments:
        partitions, factor = len(assignments), len(next(iter(assignments.values())))
    return {
        "name": topic.name,
        "partitions": config.num_partitions if partitions == -1 else partitions,
        "replication_factor": config.default_replication_factor if factor == -1 else factor,
        "configs": {c.name: c.value for c in topic.configs if c.value is not None},
        "assignments": assignments,
    }


async def handle(ctx: RequestContext, request: CreateTopicsRequest) -> Reply:
    counts = Counter(t.name for t in request.topics)
    results = []
    for topic in request.topics:
        if counts[topic.name] > 1:
            continue
        try:
            check_topic_name(topic.name)
            details = _details(ctx, topic)
        except TopicError as exc:
            results.append(
                _result(topic.name, {"error_code": exc.code, "error_message": exc.message})
            )
            continue
        create = partial(_create, topic=topic, details=details, dry=request.validate_only)
        answer = await answered_by_controller(ctx, create)
        results.append(_result(topic.name, answer, details))
    twice = [name for name, count in counts.items() if count > 1]
    refused = {"error_code": ErrorCode.invalid_request, "error_message": "Duplicate topic name."}
    results += [_result(name, refused) for name in twice]
    return {"throttle_time": 0, "topics": results}


def _result(
    name: str, answer: dict[str, Any], details: dict[str, Any] | None = None
) -> dict[str, Any]:
    created = details if answer["error_code"] == ErrorCode.none else None
    return {
        "name": name,
        "topic_id": answer.get("topic_id"),
        "error_code": answer["error_code"],
        "error_message": answer.get("error_message"),
        "num_partitions": created["partitions"] if created else -1,
        "replication_factor": created["replication_factor"] if created else -1,
        "configs": None if created else [],
    }
