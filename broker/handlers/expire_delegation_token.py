"""ExpireDelegationToken (40), v1-v2.

- The token is named by its HMAC. Refused on a channel that may not ask for tokens
  (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, expiry -1); without
  `delegation.token.secret.key` DELEGATION_TOKEN_AUTH_DISABLED.
- An unknown HMAC is DELEGATION_TOKEN_NOT_FOUND, a requester neither owner nor
  renewer DELEGATION_TOKEN_OWNER_MISMATCH.
- A negative period removes the token at once (even one already expired; the
  answer's expiry is now); otherwise a token past its expiry or max timestamp is
  DELEGATION_TOKEN_EXPIRED, and the new expiry is now + period, never past the max
  timestamp.
- In a cluster the controller changes it (the broker passes the request on).
"""

from __future__ import annotations

import datetime
import time
from typing import Any

from kio.schema.expire_delegation_token.v2.request import ExpireDelegationTokenRequest

from odradek.broker.cluster.admin import through_controller
from odradek.broker.cluster.node_client import NodeUnreachable
from odradek.broker.handlers import token_common
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 1, 2

MS = datetime.timedelta(milliseconds=1)


def _answer(code: ErrorCode, expiry_ms: int) -> dict[str, Any]:
    return {"error_code": code, "expiry_timestamp": expiry_ms, "throttle_time": 0}


async def handle(ctx: RequestContext, request: ExpireDelegationTokenRequest) -> Reply:
    if not token_common.on_controller(ctx):
        if not token_common.allows_token_requests(ctx):
            return _answer(ErrorCode.delegation_token_request_not_allowed, -1)
        member = ctx.services.member
        if member is not None:
            principal = ctx.session.principal
            try:
                return await through_controller(member, 40, ctx.version, request, principal)
            except NodeUnreachable:
                return _answer(ErrorCode.request_timed_out, -1)
    code, expiry = await token_common.expire(
        token_common.store(ctx),
        token_common.requester(ctx),
        bytes(request.hmac),
        request.expiry_time_period // MS,
        int(time.time() * 1000),
    )
    return _answer(code, expiry)
