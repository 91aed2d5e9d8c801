"""ListConfigResources (74), v0-v1 (ListClientMetricsResources until Kafka 4.1).

- v0 lists the client-metrics subscriptions.
- v1 lists the resources of the types asked (every type when none is): groups with
  configs of their own, client-metrics subscriptions, this broker's logger, the brokers,
  every topic (internal ones too), in that order. A type other than TOPIC, BROKER,
  BROKER_LOGGER, CLIENT_METRICS and GROUP answers UNSUPPORTED_VERSION and nothing else.
- With ACLs it needs DESCRIBE_CONFIGS on the cluster (CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from kio.schema.list_config_resources.v0.request import (
    ListConfigResourcesRequest as ListConfigResourcesRequestV0,
)
from kio.schema.list_config_resources.v1.request import (
    ListConfigResourcesRequest as ListConfigResourcesRequestV1,
)

from odradek.broker.handlers.authorization import cluster_allowed
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.config_requests import (
    BROKER,
    BROKER_LOGGER,
    CLIENT_METRICS,
    GROUP,
    TOPIC,
)
from odradek.broker.handlers.metadata import live_brokers
from odradek.broker.security.resources import Operation
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 1

SUPPORTED = (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)


async def handle(
    ctx: RequestContext, request: ListConfigResourcesRequestV0 | ListConfigResourcesRequestV1
) -> Reply:
    if not cluster_allowed(ctx, Operation.DESCRIBE_CONFIGS):
        return _answer(ErrorCode.cluster_authorization_failed, [])
    supported = SUPPORTED if ctx.version >= 1 else (CLIENT_METRICS,)
    asked = set(getattr(request, "resource_types", ())) or set(supported)
    if asked - set(supported):
        return _answer(ErrorCode.unsupported_version, [])
    services = ctx.services
    found: list[tuple[str, int]] = []
    if GROUP in asked:
        found += [(group_id, GROUP) for group_id in services.group_configs.configs]
    if CLIENT_METRICS in asked:
        found += [(name, CLIENT_METRICS) for name in services.client_metrics.names()]
    brokers = [str(node_id) for node_id in live_brokers(ctx)]
    if BROKER_LOGGER in asked:
        found += [(node_id, BROKER_LOGGER) for node_id in brokers]
    if BROKER in asked:
        found += [(node_id, BROKER) for node_id in brokers]
    if TOPIC in asked:
        found += [(topic.name, TOPIC) for topic in services.topics]
    return _answer(ErrorCode.none, found)


def _answer(code: ErrorCode, found: list[tuple[str, int]]) -> Reply:
    return {
        "throttle_time": 0,
        "error_code": code,
        "config_resources": [
            {"resource_name": name, "resource_type": kind} for name, kind in found
        ],
    }
