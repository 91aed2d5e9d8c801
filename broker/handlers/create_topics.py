"""CreateTopics (19), v2-v7.

- num_partitions -1 and replication_factor -1 take the broker defaults. On one node
  of its own a replication factor above 1 is INVALID_REPLICATION_FACTOR and manual
  assignments must place every partition on this broker; in a cluster the controller
  places the replicas (broker/cluster/admin.py), and refuses a factor above the
  number of live brokers, or puts them where manual assignments say (with
  num_partitions and replication_factor -1, INVALID_REQUEST otherwise).
- Checked in the order of Kafka's controller, with its messages: the name, an
  existing topic (TOPIC_ALREADY_EXISTS), null config values, unknown config names or
  bad values (INVALID_CONFIG), then the assignments or the counts. A name given twice
  in one request is answered once, after the others, INVALID_REQUEST; the topics
  refused for want of rights come last.
- validate_only checks everything and creates nothing.
- Each topic's partitions count against the client's controller_mutation_rate (strict
  from v6: THROTTLING_QUOTA_EXCEEDED while the quota is used up), validate_only too.
- v5+ answers with the new topic's partition count, replication factor and
  configs.
- With ACLs a topic needs CREATE on the cluster or on itself
  (TOPIC_AUTHORIZATION_FAILED); its configs are answered only with DESCRIBE_CONFIGS
  on it (topic_config_error_code TOPIC_AUTHORIZATION_FAILED otherwise).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest

from odradek.broker.dataplane.quotas import QuotaExceeded
from odradek.broker.dataplane.topics import TopicError, check_topic_name
from odradek.broker.handlers.authorization import may_create_topic
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.quota_common import mutation_quota, mutation_throttled
from odradek.broker.security.resources import Operation, ResourceType
from odradek.broker.settings import topic_configs
from odradek.coordinator.cluster.assignments import topic_assignments_problem
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 2, 7
# v2-v7 have the same fields: typed as the newest


def _result(name: str, code: int, message: str | None = None) -> dict[str, Any]:
    # (as Kafka: a refused topic is answered with an empty list of configs, not none)
    return {"name": name, "error_code": code, "error_message": message, "configs": []}


def _replication_factor(ctx: RequestContext, topic: CreatableTopic) -> int:
    """One node of its own keeps one copy; a cluster's default is default.replication.factor."""
    if ctx.services.member is None:
        return 1
    if topic.replication_factor == -1:
        return ctx.services.config.default_replication_factor
    return int(topic.replication_factor)


def _assignments(ctx: RequestContext, topic: CreatableTopic) -> list[list[int]] | None:
    """The replicas the client chose for each partition, in partition order, checked
    as Kafka's controller does (the brokers by the controller, in a cluster)."""
    if not topic.assignments:
        return None
    alone = {ctx.services.config.node_id} if ctx.services.member is None else None
    problem = topic_assignments_problem(
        topic.num_partitions,
        topic.replication_factor,
        [(a.partition_index, list(a.broker_ids)) for a in topic.assignments],
        registered=alone,
        live=alone,
    )
    if problem is not None:
        raise TopicError(*problem)
    by_index: dict[int, list[int]] = {
        a.partition_index: list(a.broker_ids) for a in topic.assignments
    }
    return [by_index[index] for index in range(len(by_index))]


def _partition_count(ctx: RequestContext, topic: CreatableTopic) -> int:
    """Without manual assignments: the count asked for, or the broker default."""
    if topic.replication_factor < -1 or topic.replication_factor == 0:
        raise TopicError(
            38, "Replication factor must be larger than 0, or -1 to use the default value."
        )
    if topic.num_partitions < -1 or topic.num_partitions == 0:
        raise TopicError(37, "Number of partitions was set to an invalid non-positive value.")
    if topic.replication_factor not in (-1, 1) and ctx.services.member is None:
        factor = topic.replication_factor
        raise TopicError(
            38,
            f"Unable to replicate the partition {factor} time(s): The target replication "
            f"factor of {factor} cannot be reached because only 1 broker(s) are registered "
            "or some brokers have all their log directories cordoned.",
        )
    if topic.num_partitions == -1:
        return ctx.services.config.num_partitions
    return int(topic.num_partitions)


def _check_name_and_configs(ctx: RequestContext, topic: CreatableTopic) -> None:
    """What Kafka's controller checks first: the name, whether the topic exists, null
    config values, then the configs (TopicError)."""
    check_topic_name(topic.name)
    if ctx.services.topics.get(topic.name) is not None:
        raise TopicError(ErrorCode.topic_already_exists, f"Topic '{topic.name}' already exists.")
    check_new_configs(topic)


def check_new_configs(topic: CreatableTopic) -> None:
    """A new topic's configs: no null value, known names, good values (TopicError)."""
    nulls = [c.name for c in topic.configs if c.value is None]
    if nulls:
        raise TopicError(
            ErrorCode.invalid_config,
            f"Null value not supported for topic configs: {','.join(nulls)}",
        )
    topic_configs.validate({c.name: c.value for c in topic.configs})


async def handle(ctx: RequestContext, request: CreateTopicsRequest) -> Reply:
    services = ctx.services
    counts = Counter(t.name for t in request.topics)
    results = []
    refused = []
    quota = mutation_quota(ctx, strict_since=6)
    for topic in request.topics:
        if counts[topic.name] > 1:
            continue
        if not may_create_topic(ctx, topic.name):
            code = ErrorCode.topic_authorization_failed
            refused.append(_result(topic.name, code, "Authorization failed."))
            continue
        configs = {c.name: c.value for c in topic.configs}
        try:
            _check_name_and_configs(ctx, topic)
            assignments = _assignments(ctx, topic)
            if assignments is None:
                partitions = _partition_count(ctx, topic)
                factor = _replication_factor(ctx, topic)
            else:
                partitions, factor = len(assignments), len(assignments[0])
            set_configs = {k: v for k, v in configs.items() if v is not None}
            services.topics.validate_new(topic.name, partitions, set_configs)
            quota.take(partitions, services.now_ms())
            if not request.validate_only:
                created = await services.create_topic(
                    topic.name, partitions, set_configs, factor, assignments
                )
        except TopicError as exc:
            results.append(_result(topic.name, exc.code, exc.message))
            continue
        except QuotaExceeded:  # (Kafka answers no message with it)
            results.append(_result(topic.name, ErrorCode.throttling_quota_exceeded))
            continue
        topic_id = None if request.validate_only else created.topic_id
        if not ctx.allowed(Operation.DESCRIBE_CONFIGS, ResourceType.TOPIC, topic.name):
            results.append(
                {
                    **_result(topic.name, ErrorCode.none),
                    "topic_id": topic_id,
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "topic_config_error_code": ErrorCode.topic_authorization_failed,
                }
            )
            continue
        described = topic_configs.describe(set_configs, services.config)
        results.append(
            {
                "name": topic.name,
                "topic_id": topic_id,
                "error_code": 0,
                "error_message": None,
                "num_partitions": partitions,
                "replication_factor": factor,
                "configs": [
                    {
                        "name": d.name,
                        "value": d.value,
                        "read_only": d.read_only,
                        "config_source": d.source,
                        "is_sensitive": d.is_sensitive,
                    }
                    for d in described
                ],
            }
        )
    # as Kafka's controller: the names given twice after the others (once each), then
    # the topics refused for want of rights
    twice = [name for name, count in counts.items() if count > 1]
    results += [_result(name, ErrorCode.invalid_request, "Duplicate topic name.") for name in twice]
    return mutation_throttled(ctx, quota, {"throttle_time": 0, "topics": results + refused})
