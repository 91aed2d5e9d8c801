"""DescribeAcls (29), v1-v3.

- Needs DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED); without an authorizer
  configured the answer is SECURITY_DISABLED, as on Kafka.
- The filter selects ACLs as the admin clients mean it: ANY for any resource type,
  pattern type, operation or permission, a null name / principal / host for any, and
  pattern type MATCH for every ACL that applies to the named resource (its literal
  ones, the "*" wildcard and the prefixed ones). Principal and host compare exactly.
- A filter with the UNKNOWN code (0) in a field closes the connection, as Kafka's
  request parsing does; another code Kafka does not know matches nothing.
- The ACLs come grouped by resource pattern.
- On a cluster's controller listener (`kafka-acls --bootstrap-controller`), the
  cluster's ACLs as the active controller keeps them; another controller answers
  NOT_CONTROLLER.
"""

from __future__ import annotations

from typing import Any

from kio.schema.describe_acls.v3.request import DescribeAclsRequest

from odradek.broker.handlers.acl_common import refuse_unknown_codes
from odradek.broker.handlers.authorization import cluster_allowed, needs_permission
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.acls import AclFilter, matching
from odradek.broker.security.authorizer import AclAuthorizer
from odradek.broker.security.resources import Operation
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 1, 3
# v1-v3 have the same fields: typed as the newest


def _error(code: ErrorCode, message: str) -> dict[str, Any]:
    return {"throttle_time": 0, "error_code": code, "error_message": message, "resources": []}


async def handle(ctx: RequestContext, request: DescribeAclsRequest) -> Reply:
    refuse_unknown_codes("DescribeAcls", [request])
    if not cluster_allowed(ctx, Operation.DESCRIBE):
        message = needs_permission(ctx, "DescribeAcls", Operation.DESCRIBE)
        return _error(ErrorCode.cluster_authorization_failed, message)
    authorizer = ctx.services.authorizer
    if not isinstance(authorizer, AclAuthorizer):
        return _error(ErrorCode.security_disabled, "No Authorizer is configured on the broker")
    acl_filter = AclFilter.from_wire(
        request.resource_type_filter,
        request.resource_name_filter,
        request.pattern_type_filter,
        request.principal_filter,
        request.host_filter,
        request.operation,
        request.permission_type,
    )
    found = authorizer.store.matching(acl_filter)
    controller = ctx.services.controller
    if ctx.listener.controller and controller is not None:  # the cluster's own ACLs
        if not controller.is_active:
            return _error(ErrorCode.not_controller, "This controller does not lead the quorum")
        found = matching(controller.acls.bindings, acl_filter)
    resources: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for binding in found:
        key = (binding.resource_type, binding.name, binding.pattern_type)
        resources.setdefault(key, []).append(
            {
                "principal": binding.principal,
                "host": binding.host,
                "operation": binding.operation,
                "permission_type": binding.permission,
            }
        )
    return {
        "throttle_time": 0,
        "error_code": 0,
        "error_message": "",
        "resources": [
            {"resource_type": kind, "resource_name": name, "pattern_type": pattern, "acls": acls}
            for (kind, name, pattern), acls in resources.items()
        ],
    }
