"""AlterShareGroupOffsets (91), v0: set where share-partitions of an empty share group
start again (everything in flight there is forgotten).

- A group with members answers NON_EMPTY_GROUP, one of another type GROUP_ID_NOT_FOUND,
  an empty group id INVALID_GROUP_ID.
- A group that does not exist yet is created, empty, with the state it will start
  from: a client may set where a new share group starts before any consumer joins,
  then describe or delete it (as on Kafka, the group exists once a known partition is
  named).
- Unknown topics or partitions: UNKNOWN_TOPIC_OR_PARTITION. The start offset is taken as
  it is, as on Kafka: one before the log start moves up to it at the next fetch, one
  past the end waits for the log to get there.
- With ACLs: READ on the group (GROUP_AUTHORIZATION_FAILED) and on each topic
  (TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import uuid

from kio.schema.alter_share_group_offsets.v0.request import AlterShareGroupOffsetsRequest
from kio.schema.alter_share_group_offsets.v0.request import (
    AlterShareGroupOffsetsRequestPartition as RequestPartition,
)
from kio.schema.alter_share_group_offsets.v0.request import (
    AlterShareGroupOffsetsRequestTopic as RequestTopic,
)

from odradek.broker.dataplane.topics import Topic
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.groups_common import on_group_shard
from odradek.broker.handlers.share_admin import topic_problem
from odradek.broker.security.resources import Operation, ResourceType
from odradek.coordinator.runtime import CoordinatorError
from odradek.coordinator.share.records import ShareKey
from odradek.protocol.errors import ErrorCode, default_message

MIN_VERSION, MAX_VERSION = 0, 0

Answer = tuple[ErrorCode, str | None]


async def handle(ctx: RequestContext, request: AlterShareGroupOffsetsRequest) -> Reply:
    group_id = request.group_id
    if not ctx.allowed(Operation.READ, ResourceType.GROUP, group_id):
        return _top_error(ErrorCode.group_authorization_failed, None)
    if not group_id:
        return _top_error(ErrorCode.invalid_group_id, default_message(ErrorCode.invalid_group_id))
    checked: list[tuple[RequestTopic, Topic | None, list[tuple[RequestPartition, Answer]]]] = []
    to_set: dict[uuid.UUID, tuple[str, frozenset[int]]] = {}
    for requested in request.topics:
        topic, refused = topic_problem(ctx, requested.topic_name, Operation.READ)
        answers = [
            (p, _check(topic, p) if topic is not None else (refused, default_message(refused)))
            for p in requested.partitions
        ]
        checked.append((requested, topic, answers))
        valid = frozenset(p.partition_index for p, (error, _) in answers if error == ErrorCode.none)
        if topic is not None and valid:  # (a topic named twice: both lists of partitions)
            before = to_set.get(topic.topic_id, (topic.name, frozenset()))[1]
            to_set[topic.topic_id] = (topic.name, before | valid)
    code, message = await _on_group(ctx, group_id, to_set)
    if code:
        return _top_error(ErrorCode(code), message)
    responses = []
    for requested, topic, answers in checked:
        partitions = []
        for p, (error, message) in answers:
            if error == ErrorCode.none and topic is not None:
                error, message = await _set_start(ctx, group_id, topic, p)
            partitions.append(
                {
                    "partition_index": p.partition_index,
                    "error_code": error,
                    "error_message": message,
                }
            )
        responses.append(
            {
                "topic_name": requested.topic_name,
                "topic_id": topic.topic_id if topic is not None else uuid.UUID(int=0),
                "partitions": partitions,
            }
        )
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "error_message": None,
        "responses": responses,
    }


async def _on_group(
    ctx: RequestContext, group_id: str, to_set: dict[uuid.UUID, tuple[str, frozenset[int]]]
) -> tuple[int, str | None]:
    """The group's (error, message), the shard's own error first: the group is checked,
    and created when missing, before any share-partition is set."""
    code, answer = await on_group_shard(
        ctx, group_id, lambda s: s.prepare_share_offsets_alter(group_id, to_set)
    )
    return (code, None) if code else answer


def _check(topic: Topic, p: RequestPartition) -> Answer:
    if not 0 <= p.partition_index < len(topic.partitions):
        unknown = ErrorCode.unknown_topic_or_partition
        return unknown, default_message(unknown)
    return ErrorCode.none, None


async def _set_start(
    ctx: RequestContext, group_id: str, topic: Topic, p: RequestPartition
) -> Answer:
    share = ctx.services.share
    await share.ensure_started()
    key = ShareKey(group_id, topic.topic_id, p.partition_index)
    try:
        await share.run(key, lambda s: s.alter_start(key, p.start_offset))
    except CoordinatorError as exc:
        return ErrorCode(exc.code), None
    return ErrorCode.none, None


def _top_error(code: ErrorCode, message: str | None) -> Reply:
    return {"throttle_time": 0, "error_code": code, "error_message": message, "responses": []}
