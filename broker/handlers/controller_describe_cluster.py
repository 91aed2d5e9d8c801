"""DescribeCluster (60) on the controller listener, v0-v2: the controllers, as an admin
client that bootstraps from them (`--bootstrap-controller`) finds them.

- Every voter of the quorum with its controller listener (this one's as it is
  advertised, the others' as controller.quorum.voters names them), and as the
  controller the quorum's leader (-1 while there is none).
- Asked for the brokers' endpoints: MISMATCHED_ENDPOINT_TYPE (INVALID_REQUEST at v0,
  which always asks for them); another type: UNSUPPORTED_ENDPOINT_TYPE, in Kafka's
  words, without the cluster id, as Kafka's.
- With ACLs it needs ALTER on the cluster, as on Kafka's controllers.
"""

from __future__ import annotations

from typing import Any

from kio.schema.describe_cluster.v0.request import DescribeClusterRequest as V0
from kio.schema.describe_cluster.v1.request import DescribeClusterRequest as V1
from kio.schema.describe_cluster.v2.request import DescribeClusterRequest as V2

from odradek.broker.handlers.authorization import (
    NOT_REQUESTED,
    acls_enabled,
    cluster_allowed,
    cluster_authorized_operations,
)
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 2
DescribeClusterRequest = V0 | V1 | V2
BROKERS_ENDPOINT, CONTROLLERS_ENDPOINT = 1, 2
NAMES = {BROKERS_ENDPOINT: "BROKER", CONTROLLERS_ENDPOINT: "CONTROLLER"}


async def handle(ctx: RequestContext, request: DescribeClusterRequest) -> Reply:
    config = ctx.services.config
    controller = ctx.services.controller
    answer: dict[str, Any] = {
        "throttle_time": 0,
        "error_code": 0,
        "error_message": None,
        "endpoint_type": CONTROLLERS_ENDPOINT,
        "cluster_id": config.cluster_id,
        "controller_id": -1,
        "brokers": [],
        "cluster_authorized_operations": NOT_REQUESTED,
    }
    wanted = getattr(request, "endpoint_type", BROKERS_ENDPOINT)  # (v0: the brokers)
    if wanted != CONTROLLERS_ENDPOINT:
        answer["cluster_id"] = ""
        if wanted in NAMES:  # (v0 has no error code for it)
            answer["error_code"] = (
                ErrorCode.mismatched_endpoint_type if ctx.version else ErrorCode.invalid_request
            )
            answer["error_message"] = (
                "The request was sent to an endpoint of type CONTROLLER, but we wanted an "
                f"endpoint of type {NAMES[wanted]}"
            )
        else:
            answer["error_code"] = ErrorCode.unsupported_endpoint_type
            answer["error_message"] = f"Unsupported endpoint type {wanted}"
        return answer
    if acls_enabled(ctx) and not cluster_allowed(ctx, Operation.ALTER):
        answer["error_code"] = ErrorCode.cluster_authorization_failed
        return answer
    if controller is None or controller.quorum is None:
        answer["error_code"] = ErrorCode.not_controller
        return answer
    quorum = controller.quorum
    own = ctx.listener
    for voter, (host, port) in sorted(quorum.voters.items()):
        if voter == quorum.node_id:
            host, port = own.advertised_host, own.advertised_port
        answer["brokers"].append(
            {"broker_id": voter, "host": host, "port": port, "rack": None, "is_fenced": False}
        )
    answer["controller_id"] = quorum.leader_id
    if request.include_cluster_authorized_operations:
        answer["cluster_authorized_operations"] = cluster_authorized_operations(ctx)
    return answer
