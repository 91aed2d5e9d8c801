"""DescribeConfigs (32), v1-v4, as Kafka 4.4's ConfigHelper answers it, on a broker's
listeners and on a controller's (a topic's configs there from the cluster's metadata).

- TOPIC resources list every topic config: set ones with source
  DYNAMIC_TOPIC_CONFIG, the rest with the broker's value (DEFAULT_CONFIG, or
  STATIC_BROKER_CONFIG when the broker's configuration changed it), in the order Kafka
  lists them. Synonyms: the topic's own value, then the broker setting's. An unusable
  name is INVALID_TOPIC_EXCEPTION, an unknown topic UNKNOWN_TOPIC_OR_PARTITION.
- BROKER resources: this broker's id lists the Kafka settings it reads, typed as Kafka
  types them, STATIC_BROKER_CONFIG where the configuration set them and DEFAULT_CONFIG
  otherwise, every one read-only (Odradek changes no broker setting at run time); a
  password (delegation.token.secret.key) is sensitive, its value null, in its synonyms
  too. The empty name (the cluster's dynamic defaults) lists none. Another id is
  INVALID_REQUEST.
  In a cluster, the replication throttle rates set on this broker follow, with source
  DYNAMIC_BROKER_CONFIG (unset ones are not listed).
- BROKER_LOGGER resources (this broker's id): the root logger and its level.
- GROUP resources list every group config: set ones with source GROUP_CONFIG, the
  rest with the broker's value (DEFAULT_CONFIG); the group need not exist. Kafka's
  internal group configs (streams.num.warmup.replicas, ...) only when set; synonyms
  are the group's value and the broker setting's.
- CLIENT_METRICS resources list metrics, interval.ms and match: set ones with source
  CLIENT_METRICS_CONFIG, the rest with their defaults (DEFAULT_CONFIG); the subscription
  need not exist; its name must not be empty (INVALID_REQUEST).
- `configuration_keys` narrows the list; types (v3+) are filled. With
  `include_documentation` (v3+) each config carries what it does in Odradek, declared
  with it (a broker setting's doc, a topic's, group's or client-metrics config's), and
  null without; a logger's documentation is empty either way, as Kafka's is.
- With ACLs a resource needs DESCRIBE_CONFIGS: on the cluster for broker resources
  (CLUSTER_AUTHORIZATION_FAILED), on the topic (TOPIC_AUTHORIZATION_FAILED) or the
  group (GROUP_AUTHORIZATION_FAILED); the refused resources are answered last.
"""

from __future__ import annotations

from typing import Any

from kio.schema.describe_configs.v4.request import DescribeConfigsRequest, DescribeConfigsResource

from odradek.broker.cluster import throttles
from odradek.broker.dataplane.topics import TopicError, check_topic_name
from odradek.broker.handlers.authorization import config_resource_refusal
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.observability import logs
from odradek.broker.security.resources import Operation
from odradek.broker.settings import client_metrics, group_configs, topic_configs
from odradek.broker.settings.broker_configs import DESCRIBE_ORDER
from odradek.broker.settings.config import SETTINGS, BrokerConfig, documentation
from odradek.broker.settings.setting import PASSWORD
from odradek.broker.settings.topic_configs import (
    DEFAULT_CONFIG,
    STATIC_BROKER_CONFIG,
    DescribedConfig,
)
from odradek.protocol.errors import ErrorCode, default_message

MIN_VERSION, MAX_VERSION = 1, 4

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
GROUP_CONFIG, DYNAMIC_BROKER_LOGGER_CONFIG, CLIENT_METRICS_CONFIG = 8, 6, 7
DYNAMIC_BROKER_CONFIG = 2
CONFIG_TYPES = {"boolean": 1, "string": 2, "int": 3, "long": 5, "double": 6, "list": 7}
_DEFAULTS = BrokerConfig()
TOPIC_ORDER = {name: index for index, name in enumerate(topic_configs.DESCRIBE_ORDER)}


def _entry(
    config: DescribedConfig,
    config_type: int,
    synonyms: list[tuple[str, str | None, int]],
    doc: str | None,
) -> dict[str, Any]:
    return {
        "name": config.name,
        "value": config.value,
        "read_only": config.read_only,
        "config_source": config.source,
        "is_sensitive": config.is_sensitive,
        "synonyms": [{"name": n, "value": v, "source": s} for n, v, s in synonyms],
        "config_type": config_type,
        "documentation": doc,
    }


def _topic_configs(
    ctx: RequestContext, name: str, with_synonyms: bool, with_docs: bool
) -> list[dict[str, Any]]:
    check_topic_name(name)
    configs = _configs_of_topic(ctx, name)
    if configs is None:
        raise TopicError(ErrorCode.unknown_topic_or_partition, "")
    broker = ctx.services.config
    entries = []
    described = topic_configs.describe(configs, broker)
    for config in sorted(described, key=lambda c: TOPIC_ORDER.get(c.name, len(TOPIC_ORDER))):
        definition = topic_configs.DEFINITIONS[config.name]
        synonyms = topic_configs.synonyms(config, broker) if with_synonyms else []
        doc = definition.doc if with_docs else None
        entries.append(_entry(config, CONFIG_TYPES.get(definition.type_name, 0), synonyms, doc))
    return entries


def _configs_of_topic(ctx: RequestContext, name: str) -> dict[str, str] | None:
    """The topic's own configs: on a controller listener, as the cluster's metadata has
    them (a controller hosts no topic); else as this broker's topic has them."""
    services = ctx.services
    if not ctx.listener.controller:
        topic = services.topics.get(name)
        return None if topic is None else topic.configs
    view = services.controller.metadata_view() if services.controller is not None else None
    if view is None and services.member is not None:
        view = services.member.view
    state = None if view is None else view.topics.get(name)
    return None if state is None else dict(state.configs)


def _text(value: object) -> str | None:
    if value is None:
        return None
    return str(value).lower() if isinstance(value, bool) else str(value)


def _broker_configs(
    ctx: RequestContext, name: str, with_synonyms: bool, with_docs: bool
) -> list[dict]:
    config = ctx.services.config
    node = config.node_id
    if not name:
        return []  # the cluster's dynamic defaults: Odradek has none
    if _node_id(name, "Broker id must be an integer, but it is: ") != node:
        raise TopicError(
            ErrorCode.invalid_request,
            f"Unexpected broker id, expected {node} or empty string, but received {name}",
        )
    entries = []
    for kafka_name in DESCRIBE_ORDER:
        attribute, declared = SETTINGS[kafka_name]
        config_type = declared.config_type
        sensitive = config_type == PASSWORD
        value = None if sensitive else _text(getattr(config, attribute))
        static = kafka_name in config.raw
        described = DescribedConfig(
            kafka_name,
            value,
            STATIC_BROKER_CONFIG if static else DEFAULT_CONFIG,
            read_only=True,
            is_sensitive=sensitive,
        )
        synonyms: list[tuple[str, str | None, int]] = []
        if static:
            synonyms.append((kafka_name, value, STATIC_BROKER_CONFIG))
        default = _text(getattr(_DEFAULTS, attribute))
        if default is not None:
            synonyms.append((kafka_name, None if sensitive else default, DEFAULT_CONFIG))
        doc = documentation(kafka_name) if with_docs else None
        entries.append(_entry(described, config_type, synonyms if with_synonyms else [], doc))
    member = ctx.services.member
    if member is not None:  # the replication throttle rates set on this broker
        rates = throttles.decode_document(member.view.documents.get(throttles.DOCUMENT))
        for rate, value in sorted(rates.get(node, {}).items()):
            described = DescribedConfig(rate, value, DYNAMIC_BROKER_CONFIG)
            synonyms = [(rate, value, DYNAMIC_BROKER_CONFIG)] if with_synonyms else []
            entries.append(_entry(described, CONFIG_TYPES["long"], synonyms, None))
    return entries


def _logger_configs(ctx: RequestContext, name: str) -> list[dict[str, Any]]:
    node = ctx.services.config.node_id
    if not name:
        raise TopicError(ErrorCode.invalid_request, "Broker id must not be empty")
    if _node_id(name, "Broker id must be an integer, but it is: ") != node:
        raise TopicError(
            ErrorCode.invalid_request,
            f"Unexpected broker id, expected {node} but received {name}",
        )
    root = DescribedConfig("root", logs.level(), DYNAMIC_BROKER_LOGGER_CONFIG)
    return [_entry(root, 0, [], "")]  # Kafka's loggers have no documentation, but not null


def _node_id(name: str, not_a_number: str) -> int:
    try:
        return int(name)
    except ValueError:
        raise TopicError(ErrorCode.invalid_request, not_a_number + name) from None


def _group_configs(
    ctx: RequestContext, group_id: str, with_synonyms: bool, with_docs: bool
) -> list[dict]:
    if not group_id:
        raise TopicError(ErrorCode.invalid_request, "Group name must not be empty")
    store = ctx.services.group_configs
    own = store.of(group_id)
    entries = []
    for name, definition in sorted(group_configs.DEFINITIONS.items()):
        if definition.internal and name not in own:
            continue  # as Kafka: an internal config shows only once the group sets it
        source = GROUP_CONFIG if name in own else DEFAULT_CONFIG
        value = group_configs.described_value(name, store.value(group_id, name))
        described = DescribedConfig(name, value, source, read_only=False)
        synonyms: list[tuple[str, str | None, int]] = []
        if with_synonyms:
            if name in own:
                synonyms.append((name, value, source))
            default = definition.default(ctx.services.config)
            broker_value = group_configs.described_value(name, default)
            synonyms.append((definition.broker_name, broker_value, DEFAULT_CONFIG))
        config_type = CONFIG_TYPES.get(definition.type_name, 0)
        doc = definition.doc if with_docs else None
        entries.append(_entry(described, config_type, synonyms, doc))
    return entries


def _client_metrics_configs(
    ctx: RequestContext, name: str, with_synonyms: bool, with_docs: bool
) -> list[dict]:
    if not name:
        raise TopicError(
            ErrorCode.invalid_request, "Client metrics subscription name must not be empty"
        )
    own = ctx.services.client_metrics.of(name)
    entries = []
    for key, type_name in sorted(client_metrics.TYPES.items()):
        value = own.get(key, client_metrics.DEFAULTS[key])
        if type_name == "list":
            value = client_metrics.list_value(value)
        source = CLIENT_METRICS_CONFIG if key in own else DEFAULT_CONFIG
        described = DescribedConfig(key, value, source, read_only=False)
        synonyms: list[tuple[str, str | None, int]] = []
        if with_synonyms and key in own:
            synonyms.append((key, value, source))
        doc = client_metrics.DOCS[key] if with_docs else None
        entries.append(_entry(described, CONFIG_TYPES[type_name], synonyms, doc))
    return entries


def _configs(
    ctx: RequestContext, resource: DescribeConfigsResource, with_synonyms: bool, with_docs: bool
) -> list[dict[str, Any]]:
    kind, name = resource.resource_type, resource.resource_name
    if kind == TOPIC:
        return _topic_configs(ctx, name, with_synonyms, with_docs)
    if kind == BROKER:
        return _broker_configs(ctx, name, with_synonyms, with_docs)
    if kind == BROKER_LOGGER:
        return _logger_configs(ctx, name)
    if kind == GROUP:
        return _group_configs(ctx, name, with_synonyms, with_docs)
    if kind == CLIENT_METRICS:
        return _client_metrics_configs(ctx, name, with_synonyms, with_docs)
    invalid = ErrorCode.invalid_request
    raise TopicError(invalid, default_message(invalid) or "")


async def handle(ctx: RequestContext, request: DescribeConfigsRequest) -> Reply:
    with_synonyms = request.include_synonyms
    with_docs = getattr(request, "include_documentation", False)  # v3+
    results = []
    refused_results = []
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
            result["error_message"] = default_message(refused)
            refused_results.append(result)
            continue
        try:
            configs = _configs(ctx, resource, with_synonyms, with_docs)
        except TopicError as exc:
            result["error_code"] = exc.code
            result["error_message"] = exc.message
            results.append(result)
            continue
        keys = resource.configuration_keys
        if keys is not None:
            configs = [c for c in configs if c["name"] in keys]
        result["configs"] = configs
        results.append(result)
    return {"throttle_time": 0, "results": results + refused_results}
