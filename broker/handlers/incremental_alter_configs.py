"""IncrementalAlterConfigs (44), v0-v1: change single topic, group or client-metrics
configs.

Operations: SET (0), DELETE (1, back to the default), APPEND (2) and
SUBTRACT (3) for list configs such as cleanup.policy (INVALID_CONFIG for another, in
Kafka's words). Errors as AlterConfigs; the broker's logger resource is checked as
Kafka does, and its level is only reported (config_requests.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import cast

from kio.schema.incremental_alter_configs.v1.request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)

from odradek.broker.dataplane.topics import TopicError
from odradek.broker.handlers.alter_configs import alter_resource
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.config_requests import (
    APPEND,
    DELETE,
    OPERATION_NAMES,
    SET,
    SUBTRACT,
)
from odradek.broker.settings import client_metrics, group_configs, topic_configs

MIN_VERSION, MAX_VERSION = 0, 1
# v0 and v1 have the same fields: typed as the newest

INVALID_CONFIG, INVALID_REQUEST = 40, 42


GROUP, CLIENT_METRICS = 32, 16


def _type_name(resource_type: int, name: str) -> str | None:
    if resource_type == CLIENT_METRICS:
        return client_metrics.TYPES.get(name)
    if resource_type == GROUP:
        group_definition = group_configs.DEFINITIONS.get(name)
        return None if group_definition is None else group_definition.type_name
    definition = topic_configs.DEFINITIONS.get(name)
    return None if definition is None else definition.type_name


def apply_operations(
    current: Mapping[str, str],
    operations: Iterable[AlterableConfig],
    resource_type: int,
    default_of: Callable[[str], str] = lambda _name: "",
) -> dict[str, str]:
    """The configs after `operations`; APPEND and SUBTRACT start from the value in
    force (the default, when none is set), as on Kafka."""
    new = dict(current)
    kind = "group" if resource_type == GROUP else "topic"
    for op in operations:
        type_name = _type_name(resource_type, op.name)
        if type_name is None and resource_type == CLIENT_METRICS:
            type_name = "unknown"  # a SET or DELETE of it is refused with the whole set
        if type_name is None:
            raise TopicError(INVALID_CONFIG, f"Unknown {kind} config name: {op.name}")
        if op.config_operation == SET:
            # a null value was refused before (config_requests.resource_problem)
            new[op.name] = cast(str, op.value)
        elif op.config_operation == DELETE:
            new.pop(op.name, None)
        elif op.config_operation in (APPEND, SUBTRACT):
            # Kafka 4.4 looks a group's or a subscription's config type up among the
            # topic and broker configs, so it refuses these on all of theirs, lists
            # included
            if type_name != "list" or resource_type in (GROUP, CLIENT_METRICS):
                operation = OPERATION_NAMES[op.config_operation]
                raise TopicError(
                    INVALID_CONFIG,
                    f"Can't {operation} to key {op.name} because its type is not LIST.",
                )
            in_force = new[op.name] if op.name in new else default_of(op.name)
            items = [i.strip() for i in in_force.split(",") if i.strip()]
            for value in (op.value or "").split(","):
                if op.config_operation == APPEND and value and value not in items:
                    items.append(value)
                elif op.config_operation == SUBTRACT and value in items:
                    items.remove(value)
            new[op.name] = ",".join(items)
        else:
            raise TopicError(INVALID_REQUEST, f"Unknown operations type {op.config_operation}")
    return new


async def handle(ctx: RequestContext, request: IncrementalAlterConfigsRequest) -> Reply:
    responses = []
    for resource in request.resources:

        def change(
            old: Mapping[str, str], resource: AlterConfigsResource = resource
        ) -> dict[str, str]:
            return apply_operations(
                old,
                resource.configs,
                resource.resource_type,
                functools.partial(_default, ctx, resource.resource_type),
            )

        validate_only = request.validate_only
        responses.append(
            await alter_resource(ctx, resource, validate_only, change, incremental=True)
        )
    return {"throttle_time": 0, "responses": responses}


def _default(ctx: RequestContext, resource_type: int, name: str) -> str:
    """A config's value when none is set (the broker's setting or Kafka's)."""
    if resource_type == CLIENT_METRICS:
        return client_metrics.DEFAULTS.get(name, "")
    definition = topic_configs.DEFINITIONS.get(name)
    return "" if definition is None else definition.default(ctx.services.config)
