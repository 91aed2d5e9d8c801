"""DescribeCluster (60), v0-v2: the live brokers with their endpoints on the listener
asked (one node of its own: itself, also the controller); v2 marks each broker fenced
or not, and lists the fenced ones too when asked (include_fenced_brokers). The cluster's authorized
operations when asked for (none without DESCRIBE on the cluster). Asked for the
controllers' endpoints (v1), a broker answers MISMATCHED_ENDPOINT_TYPE, for another
type UNSUPPORTED_ENDPOINT_TYPE, in Kafka's words."""

from __future__ import annotations

from kio.schema.describe_cluster.v0.request import DescribeClusterRequest as V0
from kio.schema.describe_cluster.v1.request import DescribeClusterRequest as V1
from kio.schema.describe_cluster.v2.request import DescribeClusterRequest as V2

from odradek.broker.handlers.authorization import NOT_REQUESTED, cluster_authorized_operations
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.metadata import brokers
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 2

DescribeClusterRequest = V0 | V1 | V2

BROKERS_ENDPOINT, CONTROLLERS_ENDPOINT = 1, 2


async def handle(ctx: RequestContext, request: DescribeClusterRequest) -> Reply:
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
            {"broker_id": node_id, "host": host, "port": port, "rack": rack, "is_fenced": fenced}
            for node_id, (host, port, rack, fenced) in brokers(
                ctx, getattr(request, "include_fenced_brokers", False)
            ).items()
        ],
        "cluster_authorized_operations": operations,
    }
