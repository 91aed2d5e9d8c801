"""AlterConfigs (33), v0-v2: replace a topic's, a group's or a client-metrics
subscription's whole set of configs.

- Names not given return to the broker default (that is AlterConfigs'
  semantics; IncrementalAlterConfigs changes single names).
- First, as Kafka (broker/handlers/config_requests.py): a name given twice, a null
  value, an unknown resource type are INVALID_REQUEST; broker resources cannot be
  changed at run time here (INVALID_REQUEST, in Kafka's words for its static ones).
- Unknown topic: UNKNOWN_TOPIC_OR_PARTITION; unknown name or bad value:
  INVALID_CONFIG. validate_only changes nothing.
- A group need not exist to have configs (broker/settings/group_configs.py).
- A client-metrics subscription (broker/settings/client_metrics.py) is made by setting
  its configs and removed with the last of them; its name must not be empty.
- With ACLs a resource needs ALTER_CONFIGS: on the cluster for broker resources
  (CLUSTER_AUTHORIZATION_FAILED), on the topic (TOPIC_AUTHORIZATION_FAILED) or the
  group (GROUP_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kio.schema.alter_configs.v2.request import AlterConfigsRequest, AlterConfigsResource
from kio.schema.incremental_alter_configs.v1.request import (
    AlterConfigsResource as IncrementalResource,
)

from odradek.broker.cluster import throttles
from odradek.broker.dataplane.topics import TopicError
from odradek.broker.handlers.authorization import config_resource_refusal
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.config_requests import (
    BROKER,
    BROKER_LOGGER,
    CLIENT_METRICS,
    GROUP,
    resource_problem,
)
from odradek.broker.handlers.throttle_configs import alter_rates
from odradek.broker.security.resources import Operation
from odradek.broker.settings import client_metrics, topic_configs
from odradek.broker.settings.group_configs import GroupConfigError
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 2
# v0-v2 have the same fields: typed as the newest (IncrementalAlterConfigs' as its v1)


async def alter_resource(
    ctx: RequestContext,
    resource: AlterConfigsResource | IncrementalResource,
    validate_only: bool,
    change: Callable[[Mapping[str, str]], dict[str, str]],
    incremental: bool = False,
) -> dict[str, Any]:
    """Shared by both alter APIs: `change` maps the topic's configs to the new ones."""
    result: dict[str, Any] = {
        "error_code": 0,
        "error_message": None,
        "resource_type": resource.resource_type,
        "resource_name": resource.resource_name,
    }
    refused = config_resource_refusal(
        ctx, Operation.ALTER_CONFIGS, resource.resource_type, resource.resource_name
    )
    if refused:
        result["error_code"] = refused
        return result
    node = ctx.services.config.node_id
    in_cluster = ctx.services.member is not None
    dynamic = throttles.RATES if in_cluster and resource.resource_name else ()
    problem = resource_problem(resource, node, incremental, validate_only, dynamic)
    if problem is not None:
        result["error_code"], result["error_message"] = problem
        return result
    if resource.resource_type == BROKER and resource.resource_name and in_cluster:
        return await alter_rates(ctx, resource, incremental, validate_only, result)
    if resource.resource_type in (BROKER_LOGGER, BROKER):
        return result  # the logger's level, already as asked; a broker's deletes, no-ops
    if resource.resource_type == GROUP:
        _alter_group(ctx, resource.resource_name, change, result)
    elif resource.resource_type == CLIENT_METRICS:
        _alter_client_metrics(ctx, resource.resource_name, change, result)
    if resource.resource_type in (GROUP, CLIENT_METRICS):
        configs = result.pop("configs", None)
        if configs is not None and not validate_only:
            await _set_named(ctx, resource.resource_type, resource.resource_name, configs, result)
        return result
    topic = ctx.services.topics.get(resource.resource_name)
    if topic is None:
        result["error_code"] = ErrorCode.unknown_topic_or_partition
        result["error_message"] = f"The topic '{resource.resource_name}' does not exist."
        return result
    try:
        new = change(topic.configs)
        topic_configs.validate(new)
        ctx.services.topics.check_configs(new)
    except TopicError as exc:
        result["error_code"] = exc.code
        result["error_message"] = exc.message
        return result
    if not validate_only:
        try:
            await ctx.services.set_topic_configs(topic.name, new)
        except TopicError as exc:
            result["error_code"] = exc.code
            result["error_message"] = exc.message
    return result


def _alter_group(
    ctx: RequestContext,
    group_id: str,
    change: Callable[[Mapping[str, str]], dict[str, str]],
    result: dict[str, Any],
) -> None:
    """The group's new configs, checked, in result["configs"]; else the error."""
    store = ctx.services.group_configs
    if not group_id:
        result["error_code"] = ErrorCode.invalid_request
        result["error_message"] = "a group resource needs a group id"
        return
    try:
        new = change(store.of(group_id))
        store.validate(new)
    except (TopicError, GroupConfigError) as exc:
        result["error_code"] = ErrorCode.invalid_config
        result["error_message"] = str(exc) if isinstance(exc, GroupConfigError) else exc.message
        return
    result["configs"] = new


def _alter_client_metrics(
    ctx: RequestContext,
    name: str,
    change: Callable[[Mapping[str, str]], dict[str, str]],
    result: dict[str, Any],
) -> None:
    """The subscription's new configs, checked, in result["configs"]; else the error."""
    store = ctx.services.client_metrics
    try:
        new = change(store.of(name))
        client_metrics.validate(name, new)
    except TopicError as exc:
        result["error_code"], result["error_message"] = exc.code, exc.message
        return
    except client_metrics.ClientMetricsError as exc:
        result["error_code"], result["error_message"] = exc.code, exc.message
        return
    result["configs"] = new


async def _set_named(
    ctx: RequestContext,
    resource_type: int,
    name: str,
    configs: dict[str, str],
    result: dict[str, Any],
) -> None:
    try:
        await ctx.services.set_named_configs(resource_type, name, configs)
    except TopicError as exc:
        result["error_code"], result["error_message"] = exc.code, exc.message


async def handle(ctx: RequestContext, request: AlterConfigsRequest) -> Reply:
    responses = []
    for resource in request.resources:
        given: dict[str, str] = {c.name: c.value for c in resource.configs if c.value is not None}

        def replace_all(_old: Mapping[str, str], given: dict[str, str] = given) -> dict[str, str]:
            return dict(given)

        responses.append(await alter_resource(ctx, resource, request.validate_only, replace_all))
    return {"throttle_time": 0, "responses": responses}
