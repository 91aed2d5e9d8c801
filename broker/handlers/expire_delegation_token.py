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

from kio.schema.expire_delegation_token.v2.request import ExpireDelegationTokenRequest

from odradek.broker.handlers import token_common
from odradek.broker.handlers.base import Reply, RequestContext

MIN_VERSION, MAX_VERSION = 1, 2

MS = datetime.timedelta(milliseconds=1)


async def handle(ctx: RequestContext, request: ExpireDelegationTokenRequest) -> Reply:
    answer = await token_common.refused_or_passed_on(ctx, 40, request)
    if answer is not None:
        return answer
    code, expiry = await token_common.expire(
        token_common.store(ctx),
        token_common.requester(ctx),
        bytes(request.hmac),
        request.expiry_time_period // MS,
        int(time.time() * 1000),
    )
    return token_common.expiry_answer(code, expiry)
