"""What the share-group offset admin APIs share: the group's kind, the topics a
request names, and the share-partition state they read."""

from __future__ import annotations

from typing import Any

from odradek.broker.dataplane.topics import Topic
from odradek.broker.handlers.base import RequestContext
from odradek.broker.handlers.groups_common import on_group_shard
from odradek.broker.handlers.share_state_common import delivery_complete_count
from odradek.broker.security.resources import Operation, ResourceType
from odradek.coordinator.share.records import ShareKey
from odradek.protocol.errors import ErrorCode


async def group_problem(
    ctx: RequestContext, group_id: str, operation: Operation
) -> tuple[ErrorCode, str | None] | None:
    """Why the group's share offsets may not be changed: not authorized, or what the
    group's shard says (no such group, not a share group, still with members)."""
    if not ctx.allowed(operation, ResourceType.GROUP, group_id):
        return ErrorCode.group_authorization_failed, None
    code, problem = await on_group_shard(ctx, group_id, lambda s: s.share_offsets_problem(group_id))
    if code:
        return ErrorCode(code), None
    return None if problem is None else (ErrorCode(problem[0]), problem[1])


def topic_problem(
    ctx: RequestContext, name: str, operation: Operation
) -> tuple[Topic | None, ErrorCode]:
    topic = ctx.services.topics.get(name)
    if topic is None or topic.is_internal:
        return None, ErrorCode.unknown_topic_or_partition
    if not ctx.allowed(operation, ResourceType.TOPIC, name):
        return None, ErrorCode.topic_authorization_failed
    return topic, ErrorCode.none


async def read_state(ctx: RequestContext, key: ShareKey) -> dict[str, Any] | None:
    share = ctx.services.share
    await share.ensure_started()
    state: dict[str, Any] | None = await share.run(key, lambda s: s.read(key))
    return state


def lag(state: dict[str, Any], end_offset: int) -> int:
    """Records from the start offset to the end not yet delivered for good (negative
    when the start was set past the end, as Kafka reports it)."""
    return end_offset - state["start_offset"] - delivery_complete_count(state)
