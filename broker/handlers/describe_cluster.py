"""DescribeCluster (60), v0-v1: the live brokers with their endpoints on the listener
asked (one node of its own: itself, also the controller). The cluster's authorized
operations when asked for (none without DESCRIBE on the cluster). Asked for the
controllers' endpoints (v1), a broker answers MISMATCHED_ENDPOINT_TYPE, for another
type UNSUPPORTED_ENDPOINT_TYPE, in Kafka's words."""

from __future__ import annotations

from typing import Any

from odradek.broker.handlers.authorization import NOT_REQUESTED, cluster_authorized_operations
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.metadata import live_brokers
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 1

BROKERS_ENDPOINT, CONTROLLERS_ENDPOINT = 1, 2


async def handle(ctx: RequestContext, request: Any) -> Reply:
    config = ctx.services.config
    endpoint_type = getattr(request, "endpoint_type", BROKERS_ENDPOINT)
    if endpoint_type != BROKERS_ENDPOINT:
        # as Kafka's brokers: its controllers answer the controllers' endpoints
        code, message = (
            ErrorCode.unsupported_endpoint_type,
            (f"Unsupported endpoint type {endpoint_type}"),
        )
        if endpoint_type == CONTROLLERS_ENDPOINT:
            code, message = (
                ErrorCode.mismatched_endpoint_type,
                (
                    "The request was sent to an endpoint of type BROKER, but we wanted an "
                    "endpoint of type CONTROLLER"
                ),
            )
        return {
            "throttle_time": 0,
            "error_code": code,
            "error_message": message,
            "endpoint_type": BROKERS_ENDPOINT,
            "cluster_id": config.cluster_id,
            "controller_id": -1,
            "brokers": [],
        }
    operations = NOT_REQUESTED
    if request.include_cluster_authorized_operations:
        operations = cluster_authorized_operations(ctx)
    return {
        "throttle_time": 0,
        "error_code": 0,
        "error_message": None,
        "endpoint_type": endpoint_type,
        "cluster_id": config.cluster_id,
        "controller_id": config.node_id,
        "brokers": [
            {"broker_id": node_id, "host": host, "port": port, "rack": rack}
            for node_id, (host, port, rack) in live_brokers(ctx).items()
        ],
        "cluster_authorized_operations": operations,
    }
