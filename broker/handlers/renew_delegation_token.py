"""RenewDelegationToken (39), v1-v2.

- The token is named by its HMAC. Refused on a channel that may not ask for tokens
  (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, expiry -1); without
  `delegation.token.secret.key` DELEGATION_TOKEN_AUTH_DISABLED.
- An unknown HMAC is DELEGATION_TOKEN_NOT_FOUND, a token past its expiry or max
  timestamp DELEGATION_TOKEN_EXPIRED, a requester neither owner nor renewer
  DELEGATION_TOKEN_OWNER_MISMATCH (expiry 0 with these).
- The new expiry is now + min(renew_period_ms if > 0,
  delegation.token.expiry.time.ms), never past the max timestamp.
- In a cluster the controller renews it (the broker passes the request on).
"""

from __future__ import annotations

import datetime
import time

from kio.schema.renew_delegation_token.v2.request import RenewDelegationTokenRequest

from odradek.broker.handlers import token_common
from odradek.broker.handlers.base import Reply, RequestContext

MIN_VERSION, MAX_VERSION = 1, 2

MS = datetime.timedelta(milliseconds=1)


async def handle(ctx: RequestContext, request: RenewDelegationTokenRequest) -> Reply:
    answer = await token_common.refused_or_passed_on(ctx, 39, request)
    if answer is not None:
        return answer
    code, expiry = await token_common.renew(
        token_common.store(ctx),
        token_common.requester(ctx),
        bytes(request.hmac),
        request.renew_period // MS,
        ctx.services.config.delegation_token_expiry_time_ms,
        int(time.time() * 1000),
    )
    return token_common.expiry_answer(code, expiry)
