"""IncrementalAlterConfigs (44), v0-v1, on the controller listener: a broker of the cluster
passes on a topic's, a group's or a client-metrics subscription's config change (it
checked names and values as it would alone); the controller applies it in the metadata
log (a topic's configs; the document of every group's, or every subscription's,
configs), and every broker follows. A BROKER resource's changes are its replication
throttle rates (throttle_configs.py), kept for every broker in one document."""

from __future__ import annotations

from functools import partial
from typing import Any

from kio.schema.incremental_alter_configs.v1.request import (
    AlterConfigsResource as Resource,
)
from kio.schema.incremental_alter_configs.v1.request import IncrementalAlterConfigsRequest

from odradek.broker.cluster import throttles
from odradek.broker.cluster.controller_documents import (
    CLIENT_METRICS as CLIENT_METRICS_CONFIGS,
)
from odradek.broker.cluster.controller_documents import GROUP_CONFIGS, set_named_configs
from odradek.broker.dataplane.topics import TopicError
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.controller_common import answered_by_controller
from odradek.broker.handlers.incremental_alter_configs import apply_operations
from odradek.broker.handlers.throttle_configs import changed_rates
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 1
# v0 and v1 have the same fields: typed as the newest
TOPIC, BROKER, CLIENT_METRICS, GROUP = 2, 4, 16, 32
SET = 0
DOCUMENTS = {GROUP: GROUP_CONFIGS, CLIENT_METRICS: CLIENT_METRICS_CONFIGS}


def _alter(shard: Any, name: str, configs: dict[str, str]) -> Any:
    return shard.alter_topic_configs(name, configs)


def _set_rates(shard: Any, node: int, operations: list[Any]) -> Any:
    document = changed_rates(shard.documents.get(throttles.DOCUMENT), node, operations)
    return shard.put_document(throttles.DOCUMENT, document, {"error_code": ErrorCode.none})


async def handle(ctx: RequestContext, request: IncrementalAlterConfigsRequest) -> Reply:
    responses = []
    for resource in request.resources:
        document = DOCUMENTS.get(resource.resource_type)
        if document is not None:
            answer = await _alter_named(ctx, document, resource)
        elif resource.resource_type == TOPIC:
            answer = await _alter_topic(ctx, resource)
        elif resource.resource_type == BROKER:
            set_rates = partial(
                _set_rates, node=int(resource.resource_name), operations=list(resource.configs)
            )
            answer = await answered_by_controller(ctx, set_rates)
        else:
            answer = {"error_code": ErrorCode.invalid_request}
        responses.append(
            {
                "error_code": answer["error_code"],
                "error_message": answer.get("error_message"),
                "resource_type": resource.resource_type,
                "resource_name": resource.resource_name,
            }
        )
    return {"throttle_time": 0, "responses": responses}


async def _alter_named(ctx: RequestContext, document: str, resource: Resource) -> dict[str, Any]:
    # the broker sent the whole new set: SET for each config, DELETE for the rest
    configs = {op.name: op.value or "" for op in resource.configs if op.config_operation == SET}
    operation = partial(
        set_named_configs, document=document, name=resource.resource_name, configs=configs
    )
    return await answered_by_controller(ctx, operation)


async def _alter_topic(ctx: RequestContext, resource: Resource) -> dict[str, Any]:
    controller = ctx.services.controller
    if controller is None or not controller.is_active:
        return {"error_code": ErrorCode.not_controller}
    state = controller.shard.topics.get(resource.resource_name)
    try:
        configs = apply_operations(
            state.configs if state is not None else {}, resource.configs, TOPIC
        )
    except TopicError as exc:
        return {"error_code": exc.code, "error_message": exc.message}
    operation = partial(_alter, name=resource.resource_name, configs=configs)
    return await answered_by_controller(ctx, operation)
