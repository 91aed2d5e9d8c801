"""DescribeDelegationToken (41), v1-v3.

- Refused on a channel that may not ask for tokens
  (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED); without `delegation.token.secret.key`
  DELEGATION_TOKEN_AUTH_DISABLED. Both with no tokens.
- Owners null: every token the requester may see; an empty list: none. Otherwise
  the tokens of which one of the owners named is owner or renewer.
- A requester sees the tokens it owns or renews, and others' tokens with DESCRIBE
  on the DELEGATION_TOKEN resource (the token id) or DESCRIBE_TOKENS on the USER
  resource of the owner. Tokens past their expiry are listed until removed
  (every delegation.token.expiry.check.interval.ms).
- Each token with its HMAC and renewers; the requester from v3.
"""

from __future__ import annotations

from typing import Any

from kio.schema.describe_delegation_token.v3.request import DescribeDelegationTokenRequest

from odradek.broker.handlers import token_common
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.delegation_tokens import Token, split_principal
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 1, 3


def _principal(principal: str) -> dict[str, str]:
    kind, name = split_principal(principal)
    return {"principal_type": kind, "principal_name": name}


def _described(token: Token, hmac: bytes) -> dict[str, Any]:
    requester = split_principal(token.requester)
    return {
        **_principal(token.owner),
        "token_requester_principal_type": requester[0],
        "token_requester_principal_name": requester[1],
        "issue_timestamp": token.issue_ms,
        "expiry_timestamp": token.expiry_ms,
        "max_timestamp": token.max_ms,
        "token_id": token.token_id,
        "hmac": hmac,
        "renewers": [_principal(r) for r in token.renewers],
    }


def _answer(code: ErrorCode, tokens: list[dict[str, Any]]) -> dict[str, Any]:
    return {"error_code": code, "tokens": tokens, "throttle_time": 0}


async def handle(ctx: RequestContext, request: DescribeDelegationTokenRequest) -> Reply:
    if not token_common.allows_token_requests(ctx):
        return _answer(ErrorCode.delegation_token_request_not_allowed, [])
    store = ctx.services.delegation_tokens
    if not store.enabled:
        return _answer(ErrorCode.delegation_token_auth_disabled, [])
    owners = (
        None
        if request.owners is None
        else {f"{o.principal_type}:{o.principal_name}" for o in request.owners}
    )
    principal = ctx.session.principal

    def visible(token: Token) -> bool:
        if owners is not None and not any(token.owner_or_renewer(o) for o in owners):
            return False
        return (
            token.owner_or_renewer(principal)
            or ctx.allowed(Operation.DESCRIBE, ResourceType.DELEGATION_TOKEN, token.token_id)
            or ctx.allowed(Operation.DESCRIBE_TOKENS, ResourceType.USER, token.owner)
        )

    tokens = [
        _described(token, store.hmac_of(token.token_id))
        for token in store.tokens().values()
        if visible(token)
    ]
    return _answer(ErrorCode.none, tokens)
