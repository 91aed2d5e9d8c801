"""DeleteTopics (20), v1-v6, on the controller listener: a broker of the cluster passes
on a client's request, or a client that bootstraps from the controllers asks itself.
A topic (by name, or from v6 by id) and its partitions leave the metadata log, and
every broker deletes its replicas as its view follows. An unknown name is
UNKNOWN_TOPIC_OR_PARTITION, an unknown id UNKNOWN_TOPIC_ID."""

from __future__ import annotations

import uuid
from functools import partial
from typing import Any, cast

from kio.schema.delete_topics.v1.request import DeleteTopicsRequest as V1
from kio.schema.delete_topics.v2.request import DeleteTopicsRequest as V2
from kio.schema.delete_topics.v3.request import DeleteTopicsRequest as V3
from kio.schema.delete_topics.v4.request import DeleteTopicsRequest as V4
from kio.schema.delete_topics.v5.request import DeleteTopicsRequest as V5
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest as V6

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.controller_common import answered_by_controller
from odradek.coordinator.runtime import Result
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 1, 6

DeleteTopicsRequest = V1 | V2 | V3 | V4 | V5 | V6
NO_ID = uuid.UUID(int=0)


def _delete(shard: Any, name: str | None, topic_id: uuid.UUID | None) -> Any:
    if name is None:
        name = shard.topic_names.get(topic_id) if topic_id not in (None, NO_ID) else None
        if name is None:
            return Result([], {"error_code": ErrorCode.unknown_topic_id, "topic_id": topic_id})
    result = shard.delete_topic(name)
    return Result(result.records, {**result.response, "name": name})


async def handle(ctx: RequestContext, request: DeleteTopicsRequest) -> Reply:
    # (decoded requests are tuples of the version's fields: the version tells which)
    if ctx.version >= 6:
        wanted = [(t.name, t.topic_id) for t in cast(V6, request).topics]
    else:
        wanted = [(name, None) for name in cast(V1 | V5, request).topic_names]
    results = []
    for name, topic_id in wanted:
        answer = await answered_by_controller(ctx, partial(_delete, name=name, topic_id=topic_id))
        results.append(
            {
                "name": answer.get("name", name),
                "topic_id": answer.get("topic_id") or topic_id,
                "error_code": answer["error_code"],
                "error_message": answer.get("error_message"),
            }
        )
    return {"throttle_time": 0, "responses": results}
