"""IncrementalAlterConfigs (44), v1, on the controller listener: a broker of the cluster
passes on a topic's config change (it checked names and values as it would alone);
the controller applies it to the topic's configs in the metadata log, and every
broker's replicas follow."""

from __future__ import annotations

from functools import partial
from typing import Any

from kio.schema.incremental_alter_configs.v1.request import IncrementalAlterConfigsRequest

from odradek.broker.dataplane.topics import TopicError
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.controller_common import answered_by_controller
from odradek.broker.handlers.incremental_alter_configs import apply_operations
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 1, 1
TOPIC = 2


def _alter(shard: Any, name: str, configs: dict[str, str]) -> Any:
    return shard.alter_topic_configs(name, configs)


async def handle(ctx: RequestContext, request: IncrementalAlterConfigsRequest) -> Reply:
    responses = []
    for resource in request.resources:
        result = {
            "error_code": ErrorCode.none,
            "error_message": None,
            "resource_type": resource.resource_type,
            "resource_name": resource.resource_name,
        }
        if resource.resource_type != TOPIC:
            result["error_code"] = ErrorCode.invalid_request
            responses.append(result)
            continue
        controller = ctx.services.controller
        state = controller.shard.topics.get(resource.resource_name) if controller else None
        try:
            configs = apply_operations(
                state.configs if state is not None else {}, resource.configs, TOPIC
            )
        except TopicError as exc:
            answer: dict[str, Any] = {"error_code": exc.code, "error_message": exc.message}
        else:
            operation = partial(_alter, name=resource.resource_name, configs=configs)
            answer = await answered_by_controller(ctx, operation)
        result["error_code"] = answer["error_code"]
        result["error_message"] = answer.get("error_message")
        responses.append(result)
    return {"throttle_time": 0, "responses": responses}
