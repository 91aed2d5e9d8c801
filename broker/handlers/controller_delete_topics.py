"""DeleteTopics (20), v6, on the controller listener: a broker of the cluster asks for
a topic (by name) to go; its partitions and the topic leave the metadata log, and
every broker deletes its replicas as its view follows."""

from __future__ import annotations

from functools import partial
from typing import Any

from kio.schema.delete_topics.v6.request import DeleteTopicsRequest

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.controller_common import answered_by_controller

MIN_VERSION, MAX_VERSION = 6, 6


def _delete(shard: Any, name: str | None) -> Any:
    # brokers name the topic; an entry with only an id is unknown by name (None)
    return shard.delete_topic(name)


async def handle(ctx: RequestContext, request: DeleteTopicsRequest) -> Reply:
    results = []
    for topic in request.topics:
        name = topic.name
        answer = await answered_by_controller(ctx, partial(_delete, name=name))
        results.append(
            {
                "name": name,
                "topic_id": answer.get("topic_id"),
                "error_code": answer["error_code"],
                "error_message": answer.get("error_message"),
            }
        )
    return {"throttle_time": 0, "responses": results}
