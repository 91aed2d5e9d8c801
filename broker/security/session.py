"""Who is on the other end of a connection, as the security layers establish it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ANONYMOUS = "User:ANONYMOUS"


@dataclass(slots=True)
class Session:
    security_protocol: str  # of the listener: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
    client_host: str = ""
    principal: str = ANONYMOUS  # "User:<name>", as Kafka's principals are written
    # False on SASL listeners until SaslAuthenticate succeeds: until then only
    # ApiVersions and the SASL requests are answered
    authenticated: bool = True
    token_authenticated: bool = False  # logged in with a delegation token
    mechanism: str | None = None  # chosen with SaslHandshake
    exchange: Any = None  # the SASL exchange in progress (sasl.py)
    # SaslHandshake v0: the tokens that follow are bare frames, not SaslAuthenticate
    raw_tokens: bool = False
    # set by a request over its client quota: the connection reads nothing more from
    # the client for this many milliseconds (then back to 0)
    throttle_ms: int = 0
    # as ApiVersions v3+ told them (Kafka's "unknown" until then)
    client_software_name: str = "unknown"
    client_software_version: str = "unknown"

    @classmethod
    def for_listener(cls, security_protocol: str) -> Session:
        return cls(security_protocol, authenticated=not security_protocol.startswith("SASL"))
