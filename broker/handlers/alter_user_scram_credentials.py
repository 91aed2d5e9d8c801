"""AlterUserScramCredentials (51), v0.

- Upsertions carry user, mechanism (1: SCRAM-SHA-256, 2: SCRAM-SHA-512),
  iterations, the client's salt and the salted password it computed; the broker
  keeps salt, iterations, stored key and server key (broker/security/credentials.py,
  durable before the answer). Deletions name user and mechanism.
- Per user, as Kafka's controller: an empty name or an empty salt / salted
  password is UNACCEPTABLE_CREDENTIAL, an unknown mechanism
  UNSUPPORTED_SASL_MECHANISM, iterations below 4096 or above 16384
  UNACCEPTABLE_CREDENTIAL, deleting a credential that does not exist
  RESOURCE_NOT_FOUND, and a user altered twice in one request (whatever the
  mechanisms) DUPLICATE_RESOURCE. Users with an error are left unchanged; the
  others are applied.
- Needs ALTER on the cluster; otherwise every user is CLUSTER_AUTHORIZATION_FAILED.
- Connections already authenticated stay so; the change applies to new logins.
- In a cluster the broker asked passes the request on to the controller (the
  credentials live in the metadata log, every broker follows) and answers once its
  own view has the change.
"""

from __future__ import annotations

from typing import Any

import structlog
from kio.schema.alter_user_scram_credentials.v0.request import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)

from odradek.broker.cluster.admin import through_controller
from odradek.broker.cluster.controller_documents import ControllerCredentials
from odradek.broker.cluster.node_client import NodeUnreachable
from odradek.broker.handlers.authorization import needs_permission
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.credentials import CredentialStore
from odradek.broker.security.resources import CLUSTER_NAME, Operation, ResourceType
from odradek.broker.security.scram import (
    BY_TYPE_CODE,
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    credential_from_salted_password,
)
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 0

log = structlog.get_logger("broker")

Problem = tuple[ErrorCode, str]
DUPLICATE: Problem = (
    ErrorCode.duplicate_resource,
    "A user credential cannot be altered twice in the same request",
)


def _name_and_mechanism_problem(name: str, mechanism: int) -> Problem | None:
    if not name:
        return ErrorCode.unacceptable_credential, "Username must not be empty"
    if mechanism not in BY_TYPE_CODE:
        return ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"
    return None


def _upsertion_problem(upsertion: ScramCredentialUpsertion) -> Problem | None:
    problem = _name_and_mechanism_problem(upsertion.name, upsertion.mechanism)
    if problem is not None:
        return problem
    if upsertion.iterations < MIN_ITERATIONS:
        return ErrorCode.unacceptable_credential, "Too few iterations"
    if upsertion.iterations > MAX_ITERATIONS:
        return ErrorCode.unacceptable_credential, "Too many iterations"
    if not upsertion.salt or not upsertion.salted_password:
        return ErrorCode.unacceptable_credential, "Salt and salted password must not be empty"
    return None


def _result(user: str, code: ErrorCode, message: str | None) -> dict[str, Any]:
    return {"user": user, "error_code": code, "error_message": message}


def _all_failed(request: AlterUserScramCredentialsRequest, code: ErrorCode, message: str) -> Reply:
    """The same error for every user named, each once."""
    names = [d.name for d in request.deletions] + [u.name for u in request.upsertions]
    users = dict.fromkeys(names)
    return {"throttle_time": 0, "results": [_result(user, code, message) for user in users]}


async def handle(ctx: RequestContext, request: AlterUserScramCredentialsRequest) -> Reply:
    on_controller = ctx.listener.controller and ctx.services.controller is not None
    if not on_controller and not ctx.allowed(Operation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        refused = ErrorCode.cluster_authorization_failed
        message = needs_permission(ctx, "AlterUserScramCredentials", Operation.ALTER)
        return _all_failed(request, refused, message)
    member = ctx.services.member
    if not on_controller and member is not None:
        try:
            return await through_controller(member, 51, ctx.version, request)
        except NodeUnreachable as exc:
            return _all_failed(request, ErrorCode.request_timed_out, str(exc))
    store: CredentialStore | ControllerCredentials = ctx.services.scram_credentials
    if on_controller and ctx.services.controller is not None:
        store = ctx.services.controller.credentials  # the cluster's, in the metadata log
    problems: dict[str, Problem] = {}
    deletions: dict[str, ScramCredentialDeletion] = {}
    upsertions: dict[str, ScramCredentialUpsertion] = {}
    for deletion in request.deletions:
        name = deletion.name
        if name in problems:
            continue
        if deletions.pop(name, None) is not None:
            problems[name] = DUPLICATE
            continue
        problem = _name_and_mechanism_problem(name, deletion.mechanism)
        if problem is None and store.get(name, BY_TYPE_CODE[deletion.mechanism].name) is None:
            problem = (
                ErrorCode.resource_not_found,
                "Attempt to delete a user credential that does not exist",
            )
        if problem is None:
            deletions[name] = deletion
        else:
            problems[name] = problem
    for upsertion in request.upsertions:
        name = upsertion.name
        if name in problems:
            continue
        if deletions.pop(name, None) is not None or upsertions.pop(name, None) is not None:
            problems[name] = DUPLICATE
            continue
        problem = _upsertion_problem(upsertion)
        if problem is None:
            upsertions[name] = upsertion
        else:
            problems[name] = problem

    deletes = [(d.name, BY_TYPE_CODE[d.mechanism].name) for d in deletions.values()]
    upserts = []
    for u in upsertions.values():
        mechanism = BY_TYPE_CODE[u.mechanism]
        credential = credential_from_salted_password(
            mechanism, bytes(u.salt), bytes(u.salted_password), u.iterations
        )
        upserts.append((u.name, mechanism.name, credential))
    applied = [*deletions, *upsertions]
    if applied:
        try:
            await store.change(upserts, deletes)
        except OSError as exc:
            log.error("SCRAM credentials not saved", path=str(store.path), error=str(exc))
            for name in applied:
                problems[name] = (ErrorCode.unknown_server_error, f"not saved: {exc.strerror}")
            applied = []
        else:
            log.info("SCRAM credentials altered", upserted=list(upsertions), deleted=deletes)
    results = [_result(name, ErrorCode.none, None) for name in applied]
    results += [_result(name, code, message) for name, (code, message) in problems.items()]
    return {"throttle_time": 0, "results": results}
