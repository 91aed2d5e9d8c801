"""DescribeUserScramCredentials (50), v0.

- Names the SCRAM mechanisms and iteration counts stored for each user asked
  (users null or empty: every user with a credential). Salts and keys are never
  returned.
- A user without any credential is RESOURCE_NOT_FOUND; a user named twice in one
  request is DUPLICATE_RESOURCE (Kafka's messages).
- Needs DESCRIBE on the cluster; otherwise CLUSTER_AUTHORIZATION_FAILED for the
  whole request, and (as Kafka) once more for each user asked, without its name.
- On a cluster's controller listener, the cluster's credentials as the active
  controller keeps them; another controller answers NOT_CONTROLLER.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kio.schema.describe_user_scram_credentials.v0.request import (
    DescribeUserScramCredentialsRequest,
)

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import CLUSTER_NAME, Operation, ResourceType
from odradek.broker.security.scram import MECHANISMS
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 0

DUPLICATE = "Cannot describe SCRAM credentials for the same user twice in a single request: "
NOT_FOUND = "Attempt to describe a user credential that does not exist: "


def _result(user: str, code: ErrorCode, message: str, infos: list[Any]) -> dict[str, Any]:
    return {"user": user, "error_code": code, "error_message": message, "credential_infos": infos}


async def handle(ctx: RequestContext, request: DescribeUserScramCredentialsRequest) -> Reply:
    if not ctx.allowed(Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        # as Kafka's error answer: the error again for each user asked, unnamed
        refused, message = ErrorCode.cluster_authorization_failed, "Cluster authorization failed."
        return {
            "throttle_time": 0,
            "error_code": refused,
            "error_message": message,
            "results": [_result("", refused, message, []) for _ in request.users or ()],
        }
    stored = ctx.services.scram_credentials.users()
    controller = ctx.services.controller
    if ctx.listener.controller and controller is not None:  # the cluster's own credentials
        if not controller.is_active:
            code = ErrorCode.not_controller
            return {"throttle_time": 0, "error_code": code, "error_message": None, "results": []}
        stored = controller.credentials.users()
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
                    "",
                    [{"mechanism": code, "iterations": iterations} for code, iterations in infos],
                )
            )
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "error_message": "",
        "results": results,
    }
