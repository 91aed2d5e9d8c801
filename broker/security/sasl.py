"""The server side of the SASL mechanisms, sans-IO: each exchange takes the client's
tokens one at a time (``step``) and answers the server's.

- PLAIN (RFC 4616): one token ``authzid NUL user NUL password``, checked against
  the users the listener's PlainLoginModule names; an authzid other than the user
  is refused.
- SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677): client-first, server-first
  (nonce, salt, iterations), client-final (proof checked against the stored key),
  server-final (server signature). Unknown users, wrong proofs, a nonce other than
  the one issued and channel binding are refused. With the extension
  tokenauth=true the username is a delegation token's id and the credential is
  the token's (delegation_tokens.py): the principal is the token's owner and the
  exchange is `token_authenticated`.

A refusal raises AuthenticationFailed with the message the client is sent; the
exchange is then ``failed`` and the connection is closed after the answer. On
success ``principal`` is "User:<name>".
"""

from __future__ import annotations

import base64
import binascii
import hmac
import re
import secrets
from collections.abc import Callable, Mapping

from odradek.broker.security.scram import MIN_ITERATIONS, ScramCredential, ScramMechanism

PLAIN = "PLAIN"
INVALID_PLAIN_CREDENTIALS = "Authentication failed: Invalid username or password"
DIFFERENT_AUTHZID = (
    "Authentication failed: Client requested an authorization id that is different from username"
)


class AuthenticationFailed(Exception):
    """The client's credentials or tokens are refused; str() is what the client is told."""


class Exchange:
    """One authentication in progress on a connection."""

    mechanism = ""

    def __init__(self) -> None:
        self.complete = False
        self.failed = False
        self.principal: str | None = None
        self.token_authenticated = False

    def step(self, token: bytes) -> bytes:
        """The answer to the client's next token; raises AuthenticationFailed."""
        if self.complete or self.failed:
            raise AuthenticationFailed(f"Unexpected {self.mechanism} token: exchange is over")
        try:
            return self._step(token)
        except AuthenticationFailed:
            self.failed = True
            raise

    def _step(self, token: bytes) -> bytes:
        raise NotImplementedError

    def _succeed(self, user: str) -> None:
        self.complete = True
        self.principal = f"User:{user}"


class Refused(Exchange):
    """A handshake that was refused: the connection closes after its answer."""

    def __init__(self, mechanism: str) -> None:
        super().__init__()
        self.mechanism = mechanism
        self.failed = True


def must_close(exchange: object) -> bool:
    """Whether the connection closes once the answer to the current request is out."""
    return isinstance(exchange, Exchange) and exchange.failed


class PlainExchange(Exchange):
    mechanism = PLAIN

    def __init__(self, users: Mapping[str, str]) -> None:
        super().__init__()
        self._users = users

    def _step(self, token: bytes) -> bytes:
        try:
            text = token.decode()
        except UnicodeDecodeError:
            raise AuthenticationFailed("Invalid SASL/PLAIN response: not UTF-8") from None
        parts = text.split("\0")
        if len(parts) != 3:
            raise AuthenticationFailed(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {min(len(parts), 4)}"
            )
        authzid, user, password = parts
        if not user:
            raise AuthenticationFailed("Authentication failed: username not specified")
        if not password:
            raise AuthenticationFailed("Authentication failed: password not specified")
        expected = self._users.get(user)
        # compare even for an unknown user, so timing does not tell which users exist
        matches = hmac.compare_digest(password.encode(), (expected or "\0").encode())
        if expected is None or not matches:
            raise AuthenticationFailed(INVALID_PLAIN_CREDENTIALS)
        if authzid and authzid != user:
            raise AuthenticationFailed(DIFFERENT_AUTHZID)
        self._succeed(user)
        return b""


# RFC 5802 grammar pieces
_SASLNAME = r"(?:[^\x00,=]|=2C|=3D)+"
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"
_BASE64 = r"[A-Za-z0-9+/]*={0,2}"
_EXTENSIONS = r"(?:,[A-Za-z]+=[^,]*)*"
_CLIENT_FIRST = re.compile(
    rf"(?P<flag>[ny]),(?:a=(?P<authzid>{_SASLNAME}))?,"
    rf"(?P<bare>n=(?P<name>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE})(?P<ext>{_EXTENSIONS}))"
)
_CLIENT_FINAL = re.compile(
    rf"(?P<without_proof>c=(?P<binding>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS}),"
    rf"p=(?P<proof>{_BASE64})"
)


def _sasl_name(text: str) -> str:
    return text.replace("=2C", ",").replace("=3D", "=")


def _b64decode(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error:
        raise AuthenticationFailed("Invalid SCRAM message: bad base64") from None


def _server_nonce() -> str:
    return secrets.token_urlsafe(24)


class ScramExchange(Exchange):
    def __init__(
        self,
        mechanism: ScramMechanism,
        credential_of: Callable[[str], ScramCredential | None],
        server_nonce: Callable[[], str] = _server_nonce,
        token_login: Callable[[str], tuple[str, ScramCredential] | None] | None = None,
    ) -> None:
        super().__init__()
        self.mechanism = mechanism.name
        self._scram = mechanism
        self._credential_of = credential_of
        self._server_nonce = server_nonce
        self._token_login = token_login  # token id -> (owner, credential)
        self._owner = ""
        # Kafka tells the client no more than this when credentials are wrong, so that
        # the answer does not say whether the user exists
        self._refusal = (
            "Authentication failed during authentication due to invalid credentials "
            f"with SASL mechanism {mechanism.name}"
        )
        self._user = ""
        self._credential: ScramCredential | None = None
        self._gs2_header = b""
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""

    def _step(self, token: bytes) -> bytes:
        try:
            text = token.decode()
        except UnicodeDecodeError:
            raise AuthenticationFailed(self._refusal) from None
        if self._credential is None:
            return self._client_first(text)
        return self._client_final(text)

    def _client_first(self, text: str) -> bytes:
        if text.startswith("p="):
            raise AuthenticationFailed("Channel binding is not supported")
        match = _CLIENT_FIRST.fullmatch(text)
        if match is None:
            raise AuthenticationFailed(self._refusal)
        extensions = dict(
            item.split("=", 1) for item in match.group("ext").split(",") if "=" in item
        )
        user = _sasl_name(match.group("name"))
        authzid = match.group("authzid")
        credential: ScramCredential | None
        if extensions.get("tokenauth", "").lower() == "true":
            login = self._token_login(user) if self._token_login is not None else None
            if login is None:
                raise AuthenticationFailed(self._refusal)
            self._owner, credential = login
            self.token_authenticated = True
        else:
            credential = self._credential_of(user)
        if credential is None or credential.iterations < MIN_ITERATIONS:
            raise AuthenticationFailed(self._refusal)
        if authzid is not None and _sasl_name(authzid) != user:
            raise AuthenticationFailed(DIFFERENT_AUTHZID)
        self._user, self._credential = user, credential
        self._gs2_header = text[: match.start("bare")].encode()
        self._client_first_bare = match.group("bare")
        self._nonce = match.group("nonce") + self._server_nonce()
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        return self._server_first.encode()

    def _client_final(self, text: str) -> bytes:
        assert self._credential is not None
        match = _CLIENT_FINAL.fullmatch(text)
        if match is None:
            raise AuthenticationFailed(self._refusal)
        if _b64decode(match.group("binding")) != self._gs2_header:
            raise AuthenticationFailed(self._refusal)
        if match.group("nonce") != self._nonce:
            raise AuthenticationFailed(self._refusal)
        auth_message = ",".join(
            (self._client_first_bare, self._server_first, match.group("without_proof"))
        ).encode()
        proof = _b64decode(match.group("proof"))
        stored_key = self._credential.stored_key
        client_signature = self._scram.hmac(stored_key, auth_message)
        if len(proof) != len(client_signature):
            raise AuthenticationFailed(self._refusal)
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
        if not hmac.compare_digest(self._scram.hash(client_key), stored_key):
            raise AuthenticationFailed(self._refusal)
        server_signature = self._scram.hmac(self._credential.server_key, auth_message)
        self._credential = None
        self._succeed(self._user)
        if self.token_authenticated:
            self.principal = f"User:{self._owner.partition(':')[2]}"
        return b"v=" + base64.b64encode(server_signature)
