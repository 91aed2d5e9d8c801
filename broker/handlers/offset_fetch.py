"""OffsetFetch (9), v1-v10.

- v1-v7 ask for one group, v8+ for several. topics = null (v2+) returns every
  committed offset of the group.
- A partition without a commit answers offset -1 and no error.
- require_stable (v7+): a partition with a transactional commit not yet
  decided answers UNSTABLE_OFFSET_COMMIT, so the consumer retries.
- v9 names the member (id and epoch) of a consumer-protocol group: someone not in
  the group is UNKNOWN_MEMBER_ID, an old epoch STALE_MEMBER_EPOCH (ILLEGAL_GENERATION
  for a classic member). Without a member (id null, epoch -1) anyone may fetch.
- v10 names topics by id: an unknown id answers UNKNOWN_TOPIC_ID for its partitions
  (last in the answer); topics = null leaves out offsets of topics no longer there.
- Group-level errors (loading, not coordinator, the member checks) go in the group's
  error code (v2+ also in the top-level one).
- With ACLs: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) and on each topic:
  a named topic without it answers TOPIC_AUTHORIZATION_FAILED, and topics = null
  leaves such topics out.
"""

from __future__ import annotations

from typing import Any, cast

from kio.schema.offset_fetch.v1.request import OffsetFetchRequest as V1
from kio.schema.offset_fetch.v2.request import OffsetFetchRequest as V2
from kio.schema.offset_fetch.v3.request import OffsetFetchRequest as V3
from kio.schema.offset_fetch.v4.request import OffsetFetchRequest as V4
from kio.schema.offset_fetch.v5.request import OffsetFetchRequest as V5
from kio.schema.offset_fetch.v6.request import OffsetFetchRequest as V6
from kio.schema.offset_fetch.v7.request import OffsetFetchRequest as V7
from kio.schema.offset_fetch.v8.request import OffsetFetchRequest as V8
from kio.schema.offset_fetch.v9.request import OffsetFetchRequest as V9
from kio.schema.offset_fetch.v10.request import OffsetFetchRequest as V10

from odradek.broker.handlers.authorization import allowed_names
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.groups_common import asked_topics, on_group_shard
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 1, 10

OneGroupRequest = V1 | V2 | V3 | V4 | V5 | V6 | V7
GroupsRequest = V8 | V9 | V10
OffsetFetchRequest = OneGroupRequest | GroupsRequest


async def fetch_group(
    ctx: RequestContext,
    group_id: str,
    topics: Any,
    require_stable: bool,
    member: tuple[str | None, int] = (None, -1),
) -> dict[str, Any]:
    asked_by = None if topics is None else asked_topics(ctx, topics, "partition_indexes")
    unknown_ids = [t for t in asked_by or () if t.unknown_id]
    wanted = None
    if asked_by is not None:
        wanted = [(t.name, list(t.partitions)) for t in asked_by if not t.unknown_id]
    names = [name for name, _ in wanted] if wanted is not None else []
    describable = allowed_names(ctx, Operation.DESCRIBE, ResourceType.TOPIC, names)
    asked = None if wanted is None else [(t, ps) for t, ps in wanted if t in describable]
    if ctx.allowed(Operation.DESCRIBE, ResourceType.GROUP, group_id):
        code, answer = await on_group_shard(
            ctx, group_id, lambda s: s.fetch_offsets(group_id, asked, require_stable, member)
        )
    else:
        code = ErrorCode.group_authorization_failed
    # a member the group refuses (unknown, stale epoch) gets no partitions, as on Kafka
    refused_member = code == 0 and answer["error_code"] != 0
    if code == 0:
        code = answer["error_code"]
    by_topic: dict[str, list[dict[str, Any]]] = {}
    if code == 0:
        offsets = answer["offsets"]
        if wanted is None:  # every committed topic: those not describable are left out
            committed_topics = (topic for (topic, _), _, _ in offsets)
            describable = allowed_names(
                ctx, Operation.DESCRIBE, ResourceType.TOPIC, committed_topics
            )
        for (topic, partition), committed, error in offsets:
            if topic not in describable:
                continue
            by_topic.setdefault(topic, []).append(
                {
                    "partition_index": partition,
                    "committed_offset": committed.offset if committed else -1,
                    "committed_leader_epoch": committed.leader_epoch if committed else -1,
                    "metadata": committed.metadata if committed else "",
                    "error_code": error,
                }
            )
        for topic, partitions in wanted or ():
            if topic not in describable:
                by_topic[topic] = [
                    _unanswered(p, ErrorCode.topic_authorization_failed) for p in partitions
                ]
    elif wanted is not None and not refused_member:
        for topic, partitions in wanted:
            by_topic[topic] = [_unanswered(p, code) for p in partitions]
    answered: list[dict[str, Any]] = []
    for name, parts in by_topic.items():
        topic_id = None
        if ctx.version >= 10:
            topic = ctx.services.topics.get(name)
            if topic is None:
                continue  # committed offsets of a deleted topic: no id to answer with
            topic_id = topic.topic_id
        answered.append({"name": name, "topic_id": topic_id, "partitions": parts})
    if code == 0 or (wanted is not None and not refused_member):
        answered.extend(
            {
                "topic_id": t.topic_id,
                "partitions": [_unanswered(p, ErrorCode.unknown_topic_id) for p in t.partitions],
            }
            for t in unknown_ids
        )
    return {"group_id": group_id, "error_code": code, "topics": answered}


def _unanswered(partition: int, code: int) -> dict[str, Any]:
    return {
        "partition_index": partition,
        "committed_offset": -1,
        "committed_leader_epoch": -1,
        "metadata": "",
        "error_code": code,
    }


async def handle(ctx: RequestContext, request: OffsetFetchRequest) -> Reply:
    require_stable = getattr(request, "require_stable", False)
    if ctx.version >= 8:
        groups = [
            await fetch_group(
                ctx,
                g.group_id,
                g.topics,
                require_stable,
                (getattr(g, "member_id", None), getattr(g, "member_epoch", -1)),
            )
            for g in cast(GroupsRequest, request).groups
        ]
        return {"throttle_time": 0, "groups": groups}
    one = cast(OneGroupRequest, request)
    result = await fetch_group(ctx, one.group_id, one.topics, require_stable)
    return {"throttle_time": 0, "topics": result["topics"], "error_code": result["error_code"]}
