"""IncrementalAlterConfigs (44), v1, on the controller listener: a broker of the cluster
passes on a topic's config change (it checked names and values as it would alone);
the controller applies it to the topic's configs in the metadata log, and every
broker's replicas follow. A BROKER resource's changes are its replication throttle
rates (throttle_configs.py), kept for every broker in one document."""

from __future__ import annotations

from functools import partial
from typing import Any

from kio.schema.incremental_alter_configs.v1.request import IncrementalAlterConfigsRequest

from odradek.broker.cluster import throttles
from odradek.broker.dataplane.topics import TopicError
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.controller_common import answered_by_controller
from odradek.broker.handlers.incremental_alter_configs import apply_operations
from odradek.broker.handlers.throttle_configs import changed_rates
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 1, 1
TOPIC, BROKER = 2, 4


def _alter(shard: Any, name: str, configs: dict[str, str]) -> Any:
    return shard.alter_topic_configs(name, configs)


def _set_rates(shard: Any, node: int, operations: list[Any]) -> Any:
    document = changed_rates(shard.documents.get(throttles.DOCUMENT), node, operations)
    return shard.put_document(throttles.DOCUMENT, document, {"error_code": ErrorCode.none})


async def handle(ctx: RequestContext, request: IncrementalAlterConfigsRequest) -> Reply:
    responses = []
    for resource in request.resources:
        result = {
            "error_code": ErrorCode.none,
            "error_message": None,
            "resource_type": resource.resource_type,
            "resource_name": resource.resource_name,
        }
        controller = ctx.services.controller
        if resource.resource_type == BROKER and controller is not None:
            node = int(resource.resource_name)
            set_rates = partial(_set_rates, node=node, operations=list(resource.configs))
            result["error_code"] = (await answered_by_controller(ctx, set_rates))["error_code"]
            responses.append(result)
            continue
        if resource.resource_type != TOPIC:
            result["error_code"] = ErrorCode.invalid_request
            responses.append(result)
            continue
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
