"""CreateAcls (30), v1-v3.

- Needs ALTER on the cluster: otherwise every creation answers
  CLUSTER_AUTHORIZATION_FAILED. Without an authorizer configured every creation
  answers SECURITY_DISABLED, as on Kafka.
- A creation with the UNKNOWN code (0) as its resource type, pattern type, operation
  or permission closes the connection, as Kafka's request parsing does.
- Each other creation is checked on its own (INVALID_REQUEST with Kafka's message): a
  concrete resource type (not ANY / UNKNOWN), pattern type LITERAL or PREFIXED, a
  concrete operation, ALLOW or DENY, a non-empty resource name ("kafka-cluster" for
  the CLUSTER), a principal written Type:name, a host.
- The valid ones are stored together and durably before the answer; an ACL that
  already exists is not stored twice. A failed write answers UNKNOWN_SERVER_ERROR.
- v0 (no pattern type) is not served: Kafka 4 dropped it (KIP-896).
- In a cluster the broker asked passes the request on to the controller (which keeps
  the ACLs in the metadata log) and answers once its own view has them.
"""

from __future__ import annotations

from typing import Any

from kio.schema.create_acls.v3.request import CreateAclsRequest

from odradek.broker.handlers.acl_common import acl_store, refuse_unknown_codes
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.acls import AclBinding, creation_problem
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 1, 3
# v1-v3 have the same fields: typed as the newest


def _result(code: ErrorCode, message: str = "") -> dict[str, Any]:
    return {"error_code": code, "error_message": message}


async def handle(ctx: RequestContext, request: CreateAclsRequest) -> Reply:
    refuse_unknown_codes("CreateAcls", request.creations)
    count = len(request.creations)
    store, answer = await acl_store(
        ctx,
        30,
        request,
        lambda code, message: {"throttle_time": 0, "results": [_result(code, message)] * count},
    )
    if store is None:
        return answer
    results = []
    valid = []
    for creation in request.creations:
        binding = AclBinding.from_wire(
            creation.resource_type,
            creation.resource_name,
            creation.resource_pattern_type,
            creation.principal,
            creation.host,
            creation.operation,
            creation.permission_type,
        )
        problem = creation_problem(binding)
        if problem is None:
            valid.append(binding)
            results.append(_result(ErrorCode.none))
        else:
            results.append(_result(ErrorCode.invalid_request, problem))
    if valid:
        try:
            await store.create(valid)
        except OSError as exc:
            failed = _result(ErrorCode.unknown_server_error, f"cannot store the ACLs: {exc}")
            results = [failed if r["error_code"] == 0 else r for r in results]
    return {"throttle_time": 0, "results": results}
