"""A broker's replication throttle rates (`leader.replication.throttled.rate`,
`follower.replication.throttled.rate`) changed by AlterConfigs or IncrementalAlterConfigs
on its BROKER resource, in a cluster: the only broker settings that change at run time.
The broker checks the values (a LONG, at least 0, in Kafka's words) and passes the
change on to the controller, which keeps every broker's rates in the metadata log
(broker/cluster/throttles.py); the answer comes once this broker's view has it.
SET sets a rate, DELETE takes it away (unlimited again); AlterConfigs sets the rates it
names and takes away the others."""

from __future__ import annotations

from typing import Any

from kio.schema.alter_configs.v2.request import AlterConfigsResource
from kio.schema.incremental_alter_configs.v1.request import (
    AlterConfigsResource as IncrementalResource,
)

from odradek.broker.cluster import throttles
from odradek.broker.cluster.admin import through_controller
from odradek.broker.cluster.node_client import NodeUnreachable
from odradek.broker.handlers.base import RequestContext
from odradek.broker.handlers.config_requests import BROKER, DELETE, OPERATION_NAMES, SET
from odradek.protocol.errors import ErrorCode

INCREMENTAL_ALTER_CONFIGS = 44

Operations = list[tuple[str, int, str | None]]  # (name, SET or DELETE, value)


def _operations(
    ctx: RequestContext, resource: AlterConfigsResource | IncrementalResource, incremental: bool
) -> Operations | tuple[ErrorCode, str]:
    """The rate changes asked for, or why they are refused."""
    operations: Operations = []
    for config in resource.configs:
        if config.name not in throttles.RATES:
            continue
        operation = getattr(config, "config_operation", SET) if incremental else SET
        if operation not in (SET, DELETE):
            return (
                ErrorCode.invalid_config,
                f"Can't {OPERATION_NAMES.get(operation, operation)} to key {config.name} "
                "because its type is not LIST.",
            )
        if operation == SET:
            problem = throttles.rate_problem(config.name, config.value or "")
            if problem is not None:
                return ErrorCode.invalid_config, problem
        operations.append((config.name, operation, config.value))
    if not incremental:  # AlterConfigs: the rates it does not name go
        named = {name for name, _, _ in operations}
        operations += [(name, DELETE, None) for name in throttles.RATES if name not in named]
    return operations


async def alter_rates(
    ctx: RequestContext,
    resource: AlterConfigsResource | IncrementalResource,
    incremental: bool,
    validate_only: bool,
    result: dict[str, Any],
) -> dict[str, Any]:
    member = ctx.services.member
    found = _operations(ctx, resource, incremental)
    if isinstance(found, tuple):
        result["error_code"], result["error_message"] = found
        return result
    if member is None or not found or validate_only:
        return result
    request = {
        "resources": [
            {
                "resource_type": BROKER,
                "resource_name": resource.resource_name,
                "configs": [
                    {"name": name, "config_operation": operation, "value": value}
                    for name, operation, value in found
                ],
            }
        ],
        "validate_only": False,
    }
    try:
        answer = await through_controller(member, INCREMENTAL_ALTER_CONFIGS, 1, request)
    except NodeUnreachable as exc:
        result["error_code"], result["error_message"] = ErrorCode.request_timed_out, str(exc)
        return result
    response = answer["responses"][0]
    result["error_code"], result["error_message"] = (
        response["error_code"],
        response["error_message"],
    )
    return result


def changed_rates(document: bytes | None, node: int, operations: Any) -> bytes:
    """The controller's side: the cluster's rates document after `operations` (SET,
    DELETE) on one broker's rates."""
    rates = throttles.decode_document(document)
    mine = rates.setdefault(node, {})
    for op in operations:
        if op.config_operation == DELETE:
            mine.pop(op.name, None)
        else:
            mine[op.name] = str(int((op.value or "0").strip()))
    return throttles.encode_document(rates)
