"""What the delegation token requests share: who may ask, and the changes to a token
as Kafka's controller makes them (on one node of its own, or on the controller of a
cluster, where a broker passes the requests on with the requester's principal as the
client id, as Kafka's brokers wrap them with the principal)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kio.schema.expire_delegation_token.v2.request import ExpireDelegationTokenRequest
from kio.schema.renew_delegation_token.v2.request import RenewDelegationTokenRequest

from odradek.broker.cluster.admin import through_controller
from odradek.broker.cluster.node_client import NodeUnreachable
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.delegation_tokens import TokenStoreLike
from odradek.broker.security.session import ANONYMOUS
from odradek.protocol.errors import ErrorCode


def allows_token_requests(ctx: RequestContext) -> bool:
    """Only over an authenticated channel that is not itself a token login."""
    session = ctx.session
    if session.token_authenticated or session.security_protocol == "PLAINTEXT":
        return False
    return not (session.security_protocol == "SSL" and session.principal == ANONYMOUS)


def on_controller(ctx: RequestContext) -> bool:
    """A request a broker passed on to this controller."""
    return ctx.listener.controller and ctx.services.controller is not None


def requester(ctx: RequestContext) -> str:
    """The principal a request is made for: on the controller, the one its broker named."""
    return ctx.header.client_id or ANONYMOUS if on_controller(ctx) else ctx.session.principal


def store(ctx: RequestContext) -> TokenStoreLike:
    controller = ctx.services.controller
    if on_controller(ctx) and controller is not None:
        return controller.tokens
    return ctx.services.delegation_tokens


def expiry_answer(code: ErrorCode, expiry_ms: int) -> dict[str, Any]:
    """The answer of RenewDelegationToken and ExpireDelegationToken."""
    return {"error_code": code, "expiry_timestamp": expiry_ms, "throttle_time": 0}


async def refused_or_passed_on(
    ctx: RequestContext,
    api_key: int,
    request: RenewDelegationTokenRequest | ExpireDelegationTokenRequest,
) -> Reply | None:
    """Renew and Expire on a broker: refused over a channel that may not ask for
    tokens, or, in a cluster, passed on to the controller (with the requester's
    principal) and its answer given; None where this node decides."""
    if on_controller(ctx):
        return None
    if not allows_token_requests(ctx):
        return expiry_answer(ErrorCode.delegation_token_request_not_allowed, -1)
    member = ctx.services.member
    if member is None:
        return None
    try:
        return await through_controller(
            member, api_key, ctx.version, request, ctx.session.principal
        )
    except NodeUnreachable:
        return expiry_answer(ErrorCode.request_timed_out, -1)


def saturated_sum(now_ms: int, period_ms: int) -> int:
    return min(now_ms + period_ms, 2**63 - 1)


async def renew(
    tokens: TokenStoreLike,
    principal: str,
    hmac: bytes,
    period_ms: int,
    default_period_ms: int,
    now_ms: int,
) -> tuple[ErrorCode, int]:
    """(error, new expiry) of RenewDelegationToken."""
    if not tokens.enabled:
        return ErrorCode.delegation_token_auth_disabled, 0
    token = tokens.by_hmac(hmac)
    if token is None:
        return ErrorCode.delegation_token_not_found, 0
    if token.expired(now_ms):
        return ErrorCode.delegation_token_expired, 0
    if not token.owner_or_renewer(principal):
        return ErrorCode.delegation_token_owner_mismatch, 0
    period = min(default_period_ms, period_ms) if period_ms > 0 else default_period_ms
    expiry = min(token.max_ms, now_ms + period)
    await tokens.change([replace(token, expiry_ms=expiry)], [])
    return ErrorCode.none, expiry


async def expire(
    tokens: TokenStoreLike, principal: str, hmac: bytes, period_ms: int, now_ms: int
) -> tuple[ErrorCode, int]:
    """(error, new expiry) of ExpireDelegationToken: a negative period removes the token."""
    if not tokens.enabled:
        return ErrorCode.delegation_token_auth_disabled, 0
    token = tokens.by_hmac(hmac)
    if token is None:
        return ErrorCode.delegation_token_not_found, 0
    if not token.owner_or_renewer(principal):
        return ErrorCode.delegation_token_owner_mismatch, 0
    if period_ms < 0:
        await tokens.change([], [token.token_id])
        return ErrorCode.none, now_ms
    if token.expired(now_ms):
        return ErrorCode.delegation_token_expired, 0
    expiry = min(token.max_ms, saturated_sum(now_ms, period_ms))
    await tokens.change([replace(token, expiry_ms=expiry)], [])
    return ErrorCode.none, expiry
