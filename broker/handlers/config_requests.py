"""What AlterConfigs and IncrementalAlterConfigs check of a resource before its configs
are looked at, as Kafka 4.4's ConfigAdminManager and RuntimeLoggerManager do, with
their messages: a config named twice, null values, the resource type, a broker's id,
and the broker and logger resources themselves (Odradek changes no broker setting at
run time, and deleting a broker setting is a no-op; its one logger is "root", whose
level it only reports)."""

from __future__ import annotations

from collections.abc import Collection
from typing import cast

from kio.schema.alter_configs.v2.request import AlterableConfig as Config
from kio.schema.alter_configs.v2.request import AlterConfigsResource
from kio.schema.incremental_alter_configs.v1.request import AlterableConfig as IncrementalConfig
from kio.schema.incremental_alter_configs.v1.request import (
    AlterConfigsResource as IncrementalResource,
)

from odradek.broker.observability import logs
from odradek.protocol.errors import ErrorCode

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OPERATION_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}
LOG_LEVELS = ("DEBUG", "ERROR", "FATAL", "INFO", "TRACE", "WARN")

Problem = tuple[ErrorCode, str]


def _deletes(config: Config | IncrementalConfig, incremental: bool) -> bool:
    """An IncrementalAlterConfigs DELETE (whose value may be null)?"""
    return incremental and cast(IncrementalConfig, config).config_operation == DELETE


def _node_problem(name: str, node: int, unexpected: str) -> Problem | None:
    try:
        asked = int(name)
    except ValueError:
        return ErrorCode.invalid_request, f"Node id must be an integer, but it is: {name}"
    if asked != node:
        return ErrorCode.invalid_request, unexpected.format(node=node, asked=asked, name=name)
    return None


def resource_problem(
    resource: AlterConfigsResource | IncrementalResource,
    node: int,
    incremental: bool,
    validate_only: bool,
    dynamic: Collection[str] = (),
) -> Problem | None:
    """Why the resource cannot be altered at all, or None (topics and groups go on; a
    broker's, when every operation is a DELETE or changes a name of `dynamic`)."""
    configs: list[Config | IncrementalConfig] = list(resource.configs)
    names = [c.name for c in configs]
    if len(set(names)) != len(names):
        return ErrorCode.invalid_request, "Error due to duplicate config keys"
    nulls = [c.name for c in configs if c.value is None and not _deletes(c, incremental)]
    if nulls:
        return ErrorCode.invalid_request, f"Null value not supported for : {', '.join(nulls)}"
    kind, name = resource.resource_type, resource.resource_name
    if kind == BROKER_LOGGER and incremental:
        # incremental: the configs are IncrementalAlterConfigs'
        return _logger_problem(name, node, cast(list[IncrementalConfig], configs), validate_only)
    if kind == BROKER:
        if name:
            unexpected = "Unexpected broker id, expected {node}, but received {name}"
            problem = _node_problem(name, node, unexpected)
            if problem is not None:
                return problem
        # deleting a setting no change has set (none ever is here) is a no-op, as on Kafka;
        # in a cluster the replication throttle rates change (throttle_configs.py)
        changed = [
            c.name for c in configs if not _deletes(c, incremental) and c.name not in dynamic
        ]
        if not changed:
            return None
        fixed = ", ".join(changed)
        return ErrorCode.invalid_request, f"Cannot update these configs dynamically: [{fixed}]"
    if kind not in (TOPIC, CLIENT_METRICS, GROUP):
        return ErrorCode.invalid_request, f"Unknown resource type {kind}"
    return None


def _logger_problem(
    name: str, node: int, configs: list[IncrementalConfig], validate_only: bool
) -> Problem | None:
    unexpected = "Unexpected node id. Expected {node}, but received {asked}"
    problem = _node_problem(name, node, unexpected)
    if problem is not None:
        return problem
    for config in configs:
        operation = config.config_operation
        if operation in (APPEND, SUBTRACT):
            return (
                ErrorCode.invalid_request,
                f"{OPERATION_NAMES[operation]} operation is not allowed for the BROKER_LOGGER "
                "resource",
            )
        if operation not in (SET, DELETE):
            return (
                ErrorCode.invalid_request,
                f"Unknown operation type {operation} is not allowed for the BROKER_LOGGER resource",
            )
        if config.name != "root":
            return ErrorCode.invalid_config, f"Logger {config.name} does not exist!"
        if operation == DELETE:
            return (
                ErrorCode.invalid_request,
                "Removing the log level of the root logger is not allowed",
            )
        if config.value not in LOG_LEVELS:
            return (
                ErrorCode.invalid_config,
                f"Cannot set the log level of {config.name} to {config.value} as it is not a "
                f"supported log level. Valid log levels are {', '.join(LOG_LEVELS)}",
            )
    changes = [c for c in configs if c.value != logs.level()]
    if changes and not validate_only:
        return (
            ErrorCode.invalid_request,
            f"The log level is {logs.level()} until the broker restarts: Odradek does not "
            "change it at run time (start it with --log-level)",
        )
    return None
