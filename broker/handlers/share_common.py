"""What ShareFetch and ShareAcknowledge share: checking the request and its share
session, and applying acknowledgements through the share coordinator."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

from kio.schema.share_acknowledge.v2.request import AcknowledgeTopic, ShareAcknowledgeRequest
from kio.schema.share_fetch.v1.request import FetchTopic as FetchTopicV1
from kio.schema.share_fetch.v2.request import FetchTopic as FetchTopicV2

from odradek.broker.coordinators.share_sessions import FINAL_EPOCH, ShareSession, TopicPartition
from odradek.broker.handlers.base import RequestContext
from odradek.broker.observability import metrics
from odradek.broker.security.resources import Operation, ResourceType
from odradek.coordinator.runtime import CoordinatorError
from odradek.coordinator.share.records import ShareKey
from odradek.protocol.errors import ErrorCode, default_message

if TYPE_CHECKING:
    from odradek.broker.handlers.share_fetch import Request as ShareFetchRequest

Acknowledgements = dict[TopicPartition, list[tuple[int, int, tuple[int, ...]]]]
AckResult = tuple[int, str | None]
# a topic of ShareFetch or ShareAcknowledge (v1 of ShareAcknowledge has v2's fields)
RequestTopic = FetchTopicV1 | FetchTopicV2 | AcknowledgeTopic


def request_problem(
    ctx: RequestContext, request: ShareFetchRequest | ShareAcknowledgeRequest
) -> tuple[ErrorCode, str | None] | None:
    """The top-level error of a share request before its session is looked at. (An
    empty group id is not one: as on Kafka, such a group has sessions, and each of
    its share-partitions answers UNKNOWN_SERVER_ERROR, its state refused.)"""
    if not request.member_id:
        return ErrorCode.invalid_request, "The member id must not be empty."
    if request.group_id is None:  # (Kafka answers it with no message)
        return ErrorCode.invalid_request, None
    group_id = request.group_id
    if not ctx.allowed(Operation.READ, ResourceType.GROUP, group_id):
        return ErrorCode.group_authorization_failed, None
    return None


def member_of(request: ShareFetchRequest | ShareAcknowledgeRequest) -> tuple[str, str]:
    """(group id, member id) of a request `request_problem` let through: neither is null."""
    return cast(str, request.group_id), cast(str, request.member_id)


def acknowledgements(topics: Iterable[RequestTopic]) -> Acknowledgements:
    """(topic id, partition) -> [(first offset, last offset, types)] of a request."""
    found: Acknowledgements = {}
    for topic in topics:
        if topic.topic_id is None:
            continue
        for p in topic.partitions:
            batches = [
                (b.first_offset, b.last_offset, tuple(b.acknowledge_types))
                for b in p.acknowledgement_batches
            ]
            if batches:
                found.setdefault((topic.topic_id, p.partition_index), []).extend(batches)
    return found


def leader(ctx: RequestContext) -> dict[str, int]:
    return {"leader_id": ctx.services.config.node_id, "leader_epoch": 0}


async def acknowledge(
    ctx: RequestContext, group_id: str, member_id: str, acks: Acknowledgements
) -> dict[TopicPartition, AckResult]:
    """Apply each partition's acknowledgements (written before they are answered);
    a partition whose acknowledgements do not all hold changes nothing."""
    if not group_id:  # (Kafka finds no share-partition of an empty group id)
        missing = ErrorCode.unknown_topic_or_partition
        return {tp: (missing, default_message(missing)) for tp in acks}
    results: dict[TopicPartition, AckResult] = {}
    readable = _readable_topics(ctx, {topic_id for topic_id, _ in acks})
    for (topic_id, index), batches in acks.items():
        if ctx.services.topics.partition_by_id(topic_id, index) is None:
            results[(topic_id, index)] = (ErrorCode.unknown_topic_or_partition, None)
            continue
        if topic_id not in readable:
            results[(topic_id, index)] = (ErrorCode.topic_authorization_failed, None)
            continue
        key = ShareKey(group_id, topic_id, index)
        try:
            result = await ctx.services.share.run(
                key, functools.partial(_acknowledge, key=key, member=member_id, batches=batches)
            )
            results[(topic_id, index)] = result
            if result[0] == ErrorCode.none:
                metrics.count_acknowledgements(batches)
        except CoordinatorError as exc:
            results[(topic_id, index)] = (exc.code, None)
    return results


def _acknowledge(shard: Any, key: ShareKey, member: str, batches: Any) -> Any:
    return shard.acknowledge(key, member, batches)


def _readable_topics(ctx: RequestContext, topic_ids: set[uuid.UUID]) -> set[uuid.UUID]:
    readable = set()
    for topic_id in topic_ids:
        topic = ctx.services.topics.by_id(topic_id)
        if topic is not None and ctx.allowed(Operation.READ, ResourceType.TOPIC, topic.name):
            readable.add(topic_id)
    return readable


async def end_session(ctx: RequestContext, session: ShareSession, epoch: int) -> None:
    """After a request's acknowledgements: a final epoch closes the session and gives
    back what the member still holds; any other moves the epoch on."""
    sessions = ctx.services.share.sessions
    if epoch == FINAL_EPOCH:
        sessions.close(session.group_id, session.member_id)
        await ctx.services.share.release_member(
            session.group_id, session.member_id, list(session.partitions)
        )
    else:
        sessions.advance(session)


def shape(
    ctx: RequestContext, answers: dict[TopicPartition, dict[str, Any]]
) -> list[dict[str, Any]]:
    """Answers per partition, grouped by topic in request order."""
    topics: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for (topic_id, index), answer in answers.items():
        topics.setdefault(topic_id, []).append(
            {"partition_index": index, "current_leader": leader(ctx), **answer}
        )
    return [{"topic_id": topic_id, "partitions": parts} for topic_id, parts in topics.items()]
