"""SaslAuthenticate (36), v0-v2, and the bare tokens that follow a SaslHandshake v0.

- Carries one client token of the exchange SaslHandshake chose (broker/security/
  sasl.py) and answers the server's token. When the exchange completes, the
  connection is authenticated as "User:<name>"; session_lifetime_ms (v1+) is 0:
  no re-authentication.
- A refused token (wrong password, unknown user, bad proof, malformed token) is
  SASL_AUTHENTICATION_FAILED with Kafka's message ("Authentication failed:
  Invalid username or password" for PLAIN), and the connection closes once the
  answer is out.
- Before a handshake, the connection closes without an answer (as Kafka's, where
  only ApiVersions and SaslHandshake may come first); after authentication,
  ILLEGAL_SASL_STATE and the connection stays.
- After a v0 handshake, each frame is a bare token and is answered by a bare
  size-prefixed token (`raw_token`); a refusal there just closes the connection,
  as v0 has no way to carry an error.
"""

from __future__ import annotations

from typing import Any

import structlog
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.network.connection import Chunks
from odradek.broker.security.sasl import AuthenticationFailed, Exchange, Refused
from odradek.broker.security.session import Session
from odradek.protocol.errors import ErrorCode
from odradek.protocol.header import SIZE_PREFIX, FrameError

MIN_VERSION, MAX_VERSION = 0, 2
# v0-v2 have the same fields: typed as the newest

log = structlog.get_logger("broker")


def _error(code: ErrorCode, message: str) -> dict[str, Any]:
    return {"error_code": code, "error_message": message, "auth_bytes": b""}


def _step(session: Session, exchange: Exchange, token: bytes) -> bytes:
    """The exchange's answer; marks the session authenticated when it completes."""
    try:
        answer = exchange.step(token)
    except AuthenticationFailed as exc:
        log.info(
            "authentication failed",
            mechanism=exchange.mechanism,
            client=session.client_host,
            reason=str(exc),
        )
        raise
    if exchange.complete:
        session.authenticated = True
        session.principal = exchange.principal or session.principal
        session.token_authenticated = exchange.token_authenticated
        session.exchange = None
        session.raw_tokens = False
        log.debug(
            "authenticated",
            principal=session.principal,
            mechanism=exchange.mechanism,
            client=session.client_host,
        )
    return answer


async def handle(ctx: RequestContext, request: SaslAuthenticateRequest) -> Reply:
    session = ctx.session
    if session.authenticated:
        return _error(
            ErrorCode.illegal_sasl_state,
            "SaslAuthenticate request received after successful authentication",
        )
    exchange = session.exchange
    if exchange is None:
        # as Kafka: only ApiVersions and SaslHandshake may come first, or it closes
        raise FrameError("SaslAuthenticate request before SaslHandshake")
    if not isinstance(exchange, Exchange) or exchange.failed:
        session.exchange = Refused(session.mechanism or "")
        return _error(
            ErrorCode.illegal_sasl_state, "SaslAuthenticate request received before SaslHandshake"
        )
    try:
        answer = _step(session, exchange, bytes(request.auth_bytes))
    except AuthenticationFailed as exc:
        return _error(ErrorCode.sasl_authentication_failed, str(exc))
    return {
        "error_code": ErrorCode.none,
        "error_message": "",
        "auth_bytes": answer,
        "session_lifetime": 0,
    }


def raw_token(session: Session, token: bytearray) -> Chunks:
    """The answer to a bare token after SaslHandshake v0; raises FrameError to close."""
    exchange = session.exchange
    if not isinstance(exchange, Exchange):
        raise FrameError("SASL token without an exchange in progress")
    try:
        answer = _step(session, exchange, bytes(token))
    except AuthenticationFailed as exc:
        raise FrameError(f"SASL authentication failed: {exc}") from None
    return [SIZE_PREFIX.pack(len(answer)) + answer]
