"""DeleteAcls (31), v1-v3.

- Needs ALTER on the cluster: otherwise every filter answers
  CLUSTER_AUTHORIZATION_FAILED. Without an authorizer configured every filter answers
  SECURITY_DISABLED, as on Kafka.
- Each filter selects ACLs as in DescribeAcls and answers with the ACLs it matched
  (an ACL two filters match is listed under both). A filter with the UNKNOWN code
  (0) in a field closes the connection, as Kafka's request parsing does; one with
  another code Kafka does not know answers INVALID_REQUEST ("Unknown patternFilter.",
  "Unknown entryFilter."), the others still apply.
- Every matched ACL is removed at once, durably, before the answer; a failed write
  answers UNKNOWN_SERVER_ERROR for every filter and removes nothing.
- In a cluster the broker asked passes the request on to the controller and answers
  once its own view has the change.
"""

from __future__ import annotations

from typing import Any

from kio.schema.delete_acls.v3.request import DeleteAclsRequest

from odradek.broker.handlers.acl_common import acl_store, refuse_unknown_codes
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.acls import AclBinding, AclFilter
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 1, 3
# v1-v3 have the same fields: typed as the newest


def _failed(code: ErrorCode, message: str) -> dict[str, Any]:
    return {"error_code": code, "error_message": message, "matching_acls": []}


def _matched(binding: AclBinding) -> dict[str, Any]:
    return {
        "error_code": 0,
        "error_message": None,
        "resource_type": binding.resource_type,
        "resource_name": binding.name,
        "pattern_type": binding.pattern_type,
        "principal": binding.principal,
        "host": binding.host,
        "operation": binding.operation,
        "permission_type": binding.permission,
    }


async def handle(ctx: RequestContext, request: DeleteAclsRequest) -> Reply:
    refuse_unknown_codes("DeleteAcls", request.filters)
    count = len(request.filters)

    def every_filter_failed(code: ErrorCode, message: str) -> Reply:
        return {"throttle_time": 0, "filter_results": [_failed(code, message)] * count}

    store, answer = await acl_store(ctx, 31, request, every_filter_failed)
    if store is None:
        return answer
    filters = [
        AclFilter.from_wire(
            f.resource_type_filter,
            f.resource_name_filter,
            f.pattern_type_filter,
            f.principal_filter,
            f.host_filter,
            f.operation,
            f.permission_type,
        )
        for f in request.filters
    ]
    problems = [f.problem() for f in filters]
    usable = [f for f, problem in zip(filters, problems, strict=True) if problem is None]
    try:
        matched = iter(await store.delete(usable))
    except OSError as exc:
        return every_filter_failed(ErrorCode.unknown_server_error, f"cannot store the ACLs: {exc}")
    results = []
    for problem in problems:
        if problem is not None:
            results.append(_failed(ErrorCode.invalid_request, problem))
        else:
            bindings = next(matched)
            results.append(
                {
                    "error_code": 0,
                    "error_message": None,
                    "matching_acls": [_matched(b) for b in bindings],
                }
            )
    return {"throttle_time": 0, "filter_results": results}
