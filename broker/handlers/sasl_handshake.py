"""SaslHandshake (17), v0-v1.

- Chooses the mechanism of the SASL exchange that follows on a SASL_PLAINTEXT or
  SASL_SSL listener. It must be one of the listener's `sasl.enabled.mechanisms`:
  otherwise UNSUPPORTED_SASL_MECHANISM with the enabled list, and the connection
  is closed once the answer is out.
- v1: the client's tokens follow in SaslAuthenticate requests. v0: they follow as
  bare size-prefixed frames without a request header (sasl_authenticate.raw_token).
- A second handshake before authentication completes is ILLEGAL_SASL_STATE and
  closes the connection. After authentication, or on a listener without SASL,
  it is ILLEGAL_SASL_STATE and the connection stays: there is no re-authentication
  (session lifetime 0, as Kafka with `connections.max.reauth.ms` 0). Those answers
  list no mechanisms, as Kafka's.
"""

from __future__ import annotations

import structlog
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.sasl import Refused
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 1
# v0 and v1 have the same fields: typed as the newest

log = structlog.get_logger("broker")


async def handle(ctx: RequestContext, request: SaslHandshakeRequest) -> Reply:
    session = ctx.session
    sasl = ctx.services.sasl_listeners.get(ctx.listener.name)
    enabled = list(sasl.mechanisms) if sasl is not None else []
    if sasl is None or session.authenticated:
        return {"error_code": ErrorCode.illegal_sasl_state, "mechanisms": []}
    if session.exchange is not None:
        session.exchange = Refused(request.mechanism)
        return {"error_code": ErrorCode.illegal_sasl_state, "mechanisms": []}
    if request.mechanism not in sasl.mechanisms:
        log.info(
            "SASL mechanism refused",
            mechanism=request.mechanism,
            enabled=enabled,
            client=session.client_host,
        )
        session.exchange = Refused(request.mechanism)
        return {"error_code": ErrorCode.unsupported_sasl_mechanism, "mechanisms": enabled}
    session.mechanism = request.mechanism
    session.exchange = sasl.new_exchange(
        request.mechanism, ctx.services.scram_credentials, ctx.services.delegation_tokens
    )
    session.raw_tokens = ctx.version == 0
    return {"error_code": ErrorCode.none, "mechanisms": enabled}
