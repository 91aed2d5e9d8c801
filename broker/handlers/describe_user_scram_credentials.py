"""DescribeUserScramCredentials (50), v0.

- Names the SCRAM mechanisms and iteration counts stored for each user asked
  (users null or empty: every user with a credential). Salts and keys are never
  returned.
- A user without any credential is RESOURCE_NOT_FOUND; a user named twice in one
  request is DUPLICATE_RESOURCE (Kafka's messages).
- Needs DESCRIBE on the cluster; otherwise CLUSTER_AUTHORIZATION_FAILED for the
  whole request.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import CLUSTER_NAME, Operation, ResourceType
from odradek.broker.security.scram import MECHANISMS
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 0

DUPLICATE = "Cannot describe SCRAM credentials for the same user twice in a single request: "
NOT_FOUND = "Attempt to describe a user credential that does not exist: "


def _result(user: str, code: ErrorCode, message: str | None, infos: list[Any]) -> dict[str, Any]:
    return {"user": user, "error_code": code, "error_message": message, "credential_infos": infos}


async def handle(ctx: RequestContext, request: Any) -> Reply:
    if not ctx.allowed(Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.cluster_authorization_failed,
            "error_message": "Cluster authorization failed.",
            "results": [],
        }
    stored = ctx.services.scram_credentials.users()
    asked = [user.name for user in request.users or ()]
    times_asked = Counter(asked)
    results = []
    for user in dict.fromkeys(asked) if asked else sorted(stored):
        if times_asked[user] > 1:
            results.append(_result(user, ErrorCode.duplicate_resource, DUPLICATE + user, []))
        elif user not in stored:
            results.append(_result(user, ErrorCode.resource_not_found, NOT_FOUND + user, []))
        else:
            infos = sorted(
                (MECHANISMS[mechanism].type_code, credential.iterations)
                for mechanism, credential in stored[user].items()
            )
            results.append(
                _result(
                    user,
                    ErrorCode.none,
                    None,
                    [{"mechanism": code, "iterations": iterations} for code, iterations in infos],
                )
            )
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "error_message": None,
        "results": results,
    }
