"""DescribeConfigs (32), v1-v4.

- TOPIC resources list every topic config: set ones with source
  DYNAMIC_TOPIC_CONFIG, the rest with the broker's value (DEFAULT_CONFIG, or
  STATIC_BROKER_CONFIG when the broker's configuration changed it).
- BROKER resources (name "" or this broker's id) list the broker's settings.
- GROUP resources list every group config: set ones with source GROUP_CONFIG, the
  rest with the broker's value (DEFAULT_CONFIG); the group need not exist.
- `configuration_keys` narrows the list; synonyms (v1+) and types (v3+) are
  filled; unknown topics answer UNKNOWN_TOPIC_OR_PARTITION.
- With ACLs a resource needs DESCRIBE_CONFIGS: on the cluster for broker resources
  (CLUSTER_AUTHORIZATION_FAILED), on the topic (TOPIC_AUTHORIZATION_FAILED) or the
  group (GROUP_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from odradek.broker.handlers.authorization import config_resource_refusal
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation
from odradek.broker.settings import group_configs, topic_configs
from odradek.broker.settings.config import _NAMES as BROKER_NAMES
from odradek.broker.settings.topic_configs import (
    DEFAULT_CONFIG,
    STATIC_BROKER_CONFIG,
    DescribedConfig,
)
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 1, 4

TOPIC, BROKER, GROUP = 2, 4, 32
GROUP_CONFIG = 8
CONFIG_TYPES = {"boolean": 1, "string": 2, "int": 3, "long": 5, "double": 6, "list": 7}


def _entry(config: DescribedConfig, type_name: str, synonyms: list[dict[str, Any]]) -> dict:
    return {
        "name": config.name,
        "value": config.value,
        "read_only": config.read_only,
        "config_source": config.source,
        "is_sensitive": config.is_sensitive,
        "synonyms": synonyms,
        "config_type": CONFIG_TYPES.get(type_name, 0),
        "documentation": None,
    }


def _topic_configs(ctx: RequestContext, name: str, with_synonyms: bool) -> list[dict[str, Any]]:
    topic = ctx.services.topics.get(name)
    assert topic is not None
    entries = []
    for described in topic_configs.describe(topic.configs, ctx.services.config):
        definition = topic_configs.DEFINITIONS[described.name]
        synonyms = []
        if with_synonyms:
            synonyms.append(
                {"name": described.name, "value": described.value, "source": described.source}
            )
            if described.source == topic_configs.DYNAMIC_TOPIC_CONFIG and definition.broker_name:
                synonyms.append(
                    {
                        "name": definition.broker_name,
                        "value": definition.default(ctx.services.config),
                        "source": DEFAULT_CONFIG,
                    }
                )
        entries.append(_entry(described, definition.type_name, synonyms))
    return entries


def _broker_configs(ctx: RequestContext, with_synonyms: bool) -> list[dict[str, Any]]:
    config = ctx.services.config
    values = {f.name: getattr(config, f.name) for f in fields(config)}
    entries = []
    for kafka_name, attr in sorted(BROKER_NAMES.items()):
        value = values[attr]
        text = (
            "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
        )
        described = DescribedConfig(kafka_name, text, STATIC_BROKER_CONFIG, read_only=True)
        synonyms = [{"name": kafka_name, "value": text, "source": STATIC_BROKER_CONFIG}]
        entries.append(_entry(described, "string", synonyms if with_synonyms else []))
    return entries


def _group_configs(ctx: RequestContext, group_id: str, with_synonyms: bool) -> list[dict]:
    store = ctx.services.group_configs
    own = store.of(group_id)
    entries = []
    for name, definition in sorted(group_configs.DEFINITIONS.items()):
        source = GROUP_CONFIG if name in own else DEFAULT_CONFIG
        value = store.value(group_id, name)
        described = DescribedConfig(name, value, source, read_only=False)
        synonyms = [{"name": name, "value": value, "source": source}] if with_synonyms else []
        entries.append(_entry(described, definition.type_name, synonyms))
    return entries


async def handle(ctx: RequestContext, request: Any) -> Reply:
    with_synonyms = getattr(request, "include_synonyms", False)
    results = []
    for resource in request.resources:
        result: dict[str, Any] = {
            "error_code": 0,
            "error_message": "",  # Kafka answers an empty message, also with some errors
            "resource_type": resource.resource_type,
            "resource_name": resource.resource_name,
            "configs": [],
        }
        refused = config_resource_refusal(
            ctx, Operation.DESCRIBE_CONFIGS, resource.resource_type, resource.resource_name
        )
        if refused:
            result["error_code"] = refused
            result["error_message"] = "Authorization failed."
        elif resource.resource_type == TOPIC:
            if ctx.services.topics.get(resource.resource_name) is None:
                result["error_code"] = ErrorCode.unknown_topic_or_partition
            else:
                result["configs"] = _topic_configs(ctx, resource.resource_name, with_synonyms)
        elif resource.resource_type == BROKER and resource.resource_name in (
            "",
            str(ctx.services.config.node_id),
        ):
            result["configs"] = _broker_configs(ctx, with_synonyms)
        elif resource.resource_type == GROUP and resource.resource_name:
            result["configs"] = _group_configs(ctx, resource.resource_name, with_synonyms)
        elif resource.resource_type == BROKER:
            result["error_code"] = ErrorCode.invalid_request
            result["error_message"] = (
                f"Unexpected broker id, expected {ctx.services.config.node_id} or empty "
                f"string, but received {resource.resource_name}"
            )
        else:
            result["error_code"] = ErrorCode.invalid_request
            result["error_message"] = "only topic, broker and group resources are described"
        keys = resource.configuration_keys
        if keys is not None:
            result["configs"] = [c for c in result["configs"] if c["name"] in keys]
        results.append(result)
    return {"throttle_time": 0, "results": results}
