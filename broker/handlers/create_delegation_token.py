"""CreateDelegationToken (38), v1-v3.

- Only over an authenticated channel that is not itself a token login (not
  PLAINTEXT, not SSL without a client certificate): otherwise
  DELEGATION_TOKEN_REQUEST_NOT_ALLOWED. Without `delegation.token.secret.key`
  DELEGATION_TOKEN_AUTH_DISABLED.
- The owner is the requester, or (v3) the owner principal named; a token for
  another owner needs CREATE_TOKENS on the USER resource of that owner
  ("User:<name>"), else DELEGATION_TOKEN_AUTHORIZATION_FAILED. Renewers must be
  User principals (INVALID_PRINCIPAL_TYPE).
- The token id is a random UUID, its HMAC the HMAC-SHA512 of the id keyed with the
  secret key. max timestamp = now + min(max_lifetime_ms if > 0,
  delegation.token.max.lifetime.ms); expiry = min(max, now +
  delegation.token.expiry.time.ms). The requester is answered from v3.
- Error answers carry owner and requester; timestamps -1 where the broker refuses,
  0 where the token rules do (as Kafka's broker and controller).
- In a cluster the broker passes the request on to the controller, which keeps the
  tokens in the metadata log, and answers once its own view has the token.
"""

from __future__ import annotations

import datetime
import time
import uuid
from typing import Any, cast

import structlog
from kio.schema.create_delegation_token.v3.request import CreateDelegationTokenRequest

from odradek.broker.cluster.admin import through_controller
from odradek.broker.cluster.node_client import NodeUnreachable
from odradek.broker.handlers import token_common
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.delegation_tokens import Token, split_principal, token_hmac
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 1, 3

log = structlog.get_logger("broker")

MS = datetime.timedelta(milliseconds=1)


def _answer(
    code: ErrorCode, owner: str, requester: str, timestamps: int, token: Token | None = None
) -> dict[str, Any]:
    owner_type, owner_name = split_principal(owner)
    requester_type, requester_name = split_principal(requester)
    return {
        "error_code": code,
        "principal_type": owner_type,
        "principal_name": owner_name,
        "token_requester_principal_type": requester_type,
        "token_requester_principal_name": requester_name,
        "issue_timestamp": token.issue_ms if token else timestamps,
        "expiry_timestamp": token.expiry_ms if token else timestamps,
        "max_timestamp": token.max_ms if token else timestamps,
        "token_id": token.token_id if token else "",
        "hmac": b"",
        "throttle_time": 0,
    }


async def handle(ctx: RequestContext, request: CreateDelegationTokenRequest) -> Reply:
    requester = token_common.requester(ctx)
    owner = requester
    if ctx.version >= 3 and request.owner_principal_name:
        owner = f"{request.owner_principal_type}:{request.owner_principal_name}"
    renewers = [f"{r.principal_type}:{r.principal_name}" for r in request.renewers]
    if not token_common.on_controller(ctx):
        if not token_common.allows_token_requests(ctx):
            refused = ErrorCode.delegation_token_request_not_allowed
            return _answer(refused, owner, requester, -1)
        if owner != requester and not ctx.allowed(
            Operation.CREATE_TOKENS, ResourceType.USER, owner
        ):
            refused = ErrorCode.delegation_token_authorization_failed
            return _answer(refused, owner, requester, -1)
        if any(r.principal_type != "User" for r in request.renewers):
            return _answer(ErrorCode.invalid_principal_type, owner, requester, -1)
        member = ctx.services.member
        if member is not None:
            kind, name = split_principal(owner)
            forwarded = {
                "owner_principal_type": kind,
                "owner_principal_name": name,
                "renewers": [r._asdict() for r in cast(Any, request.renewers)],
                "max_lifetime": request.max_lifetime,
            }
            try:
                return await through_controller(member, 38, 3, forwarded, requester)
            except NodeUnreachable:
                return _answer(ErrorCode.request_timed_out, owner, requester, -1)
    tokens = token_common.store(ctx)
    if not tokens.enabled:
        return _answer(ErrorCode.delegation_token_auth_disabled, owner, requester, 0)
    if any(r.principal_type != "User" for r in request.renewers):
        return _answer(ErrorCode.invalid_principal_type, owner, requester, 0)
    config = ctx.services.config
    now = int(time.time() * 1000)
    max_lifetime = config.delegation_token_max_lifetime_ms
    asked = request.max_lifetime // MS
    if asked > 0:
        max_lifetime = min(max_lifetime, asked)
    max_ms = token_common.saturated_sum(now, max_lifetime)
    expiry_ms = min(max_ms, token_common.saturated_sum(now, config.delegation_token_expiry_time_ms))
    token = Token(str(uuid.uuid4()), owner, requester, tuple(renewers), now, expiry_ms, max_ms)
    try:
        await tokens.change([token], [])
    except OSError as exc:
        log.error("delegation token not saved", error=str(exc))
        return _answer(ErrorCode.unknown_server_error, owner, requester, 0)
    log.info("delegation token created", token_id=token.token_id, owner=owner)
    answer = _answer(ErrorCode.none, owner, requester, 0, token)
    assert config.delegation_token_secret_key is not None
    answer["hmac"] = token_hmac(config.delegation_token_secret_key, token.token_id)
    return answer
