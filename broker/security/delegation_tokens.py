"""Delegation tokens, kept in the data directory (`delegation-tokens.json`) or, in a
cluster, in the controller's metadata log (document "delegation-tokens").

A token is its id (a random UUID), owner, requester, renewers and three times in
epoch milliseconds: issued, expiry (moved by renew and expire) and max (never
passed). Its password is the HMAC-SHA512 of the id (UTF-8) keyed with
`delegation.token.secret.key` (UTF-8), base64 for SCRAM logins; neither the HMAC nor
the key is ever written down, every broker of a cluster computes it from the key.

A SCRAM login with a token (username the token id, password the base64 HMAC,
extension tokenauth=true) checks a credential made from that password with the
mechanism's minimum iterations; the session's principal is the token's owner.
"""

from __future__ import annotations

import base64
import hmac as hmac_lib
import json
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from odradek.broker.security.scram import (
    MECHANISMS,
    MIN_ITERATIONS,
    ScramCredential,
    credential_from_password,
)
from odradek.storage.document_file import DocumentFile

FILE_NAME = "delegation-tokens.json"
FORMAT_VERSION = 1


class TokensFileError(RuntimeError):
    """The tokens file exists but cannot be read; the message names it."""


@dataclass(frozen=True)
class Token:
    token_id: str
    owner: str  # "User:<name>", as principals are written
    requester: str
    renewers: tuple[str, ...]
    issue_ms: int
    expiry_ms: int
    max_ms: int

    def expired(self, now_ms: int) -> bool:
        return self.max_ms < now_ms or self.expiry_ms < now_ms

    def owner_or_renewer(self, principal: str) -> bool:
        return principal == self.owner or principal in self.renewers


Tokens = dict[str, Token]  # by token id


class TokenStoreLike(Protocol):
    """A broker's TokenStore or the controller's ControllerTokens."""

    @property
    def enabled(self) -> bool: ...

    def tokens(self) -> Tokens: ...

    def by_hmac(self, hmac: bytes) -> Token | None: ...

    async def change(self, upserts: Iterable[Token], deletes: Iterable[str]) -> None: ...


def token_hmac(secret_key: str, token_id: str) -> bytes:
    return hmac_lib.digest(secret_key.encode(), token_id.encode(), "sha512")


def split_principal(principal: str) -> tuple[str, str]:
    """("User", "alice") of "User:alice"."""
    kind, _, name = principal.partition(":")
    return kind, name


class TokenStore:
    def __init__(self, data_dir: Path, secret_key: str | None) -> None:
        self.path = data_dir / FILE_NAME
        self.secret_key = secret_key
        self._tokens: Tokens = {}
        self._by_hmac: dict[bytes, str] = {}
        # (token id, mechanism) -> the SCRAM credential of the token's password
        self._credentials: dict[tuple[str, str], ScramCredential] = {}
        self._file = DocumentFile(
            self.path, "delegation tokens", encode_document, decode_document, TokensFileError
        )

    @property
    def enabled(self) -> bool:
        return self.secret_key is not None

    def load(self) -> None:
        tokens = self._file.read()
        if tokens is not None:
            self._set(tokens)

    def tokens(self) -> Tokens:
        return dict(self._tokens)

    def hmac_of(self, token_id: str) -> bytes:
        assert self.secret_key is not None
        return token_hmac(self.secret_key, token_id)

    def by_hmac(self, hmac: bytes) -> Token | None:
        token_id = self._by_hmac.get(hmac)
        return None if token_id is None else self._tokens.get(token_id)

    def login(
        self, token_id: str, mechanism: str, now_ms: int
    ) -> tuple[str, ScramCredential] | None:
        """(owner, credential) a SCRAM login with this token id is checked against."""
        token = self._tokens.get(token_id)
        if token is None or self.secret_key is None or token.expired(now_ms):
            return None
        credential = self._credentials.get((token_id, mechanism))
        if credential is None:
            password = base64.b64encode(self.hmac_of(token_id)).decode()
            credential = credential_from_password(
                MECHANISMS[mechanism], password, MIN_ITERATIONS, secrets.token_bytes(32)
            )
            self._credentials[(token_id, mechanism)] = credential
        return token.owner, credential

    async def change(self, upserts: Iterable[Token], deletes: Iterable[str]) -> None:
        """Apply token upserts and deletes (by id); returns once the file is durable.
        Raises OSError (nothing changed) if it cannot be written."""
        async with self._file.lock:
            tokens = changed(self.tokens(), upserts, deletes)
            await self._file.write(tokens)
            self._set(tokens)

    def adopt(self, document: bytes) -> None:
        """Every token as a cluster's metadata has them, kept in the file too."""
        tokens = self._file.adopted(document, self._tokens)
        if tokens is not None:
            self._set(tokens)

    def _set(self, tokens: Tokens) -> None:
        self._tokens = tokens
        self._credentials = {k: c for k, c in self._credentials.items() if k[0] in tokens}
        self._by_hmac = {} if self.secret_key is None else {self.hmac_of(t): t for t in tokens}


def changed(tokens: Tokens, upserts: Iterable[Token], deletes: Iterable[str]) -> Tokens:
    for token_id in deletes:
        tokens.pop(token_id, None)
    for token in upserts:
        tokens[token.token_id] = token
    return tokens


def encode_document(tokens: Tokens) -> bytes:
    document = {
        "version": FORMAT_VERSION,
        "tokens": [
            {
                "id": t.token_id,
                "owner": t.owner,
                "requester": t.requester,
                "renewers": list(t.renewers),
                "issue_ms": t.issue_ms,
                "expiry_ms": t.expiry_ms,
                "max_ms": t.max_ms,
            }
            for t in sorted(tokens.values(), key=lambda t: t.token_id)
        ],
    }
    return json.dumps(document, indent=1).encode()


def decode_document(document: bytes | None) -> Tokens:
    if not document:
        return {}
    data: Any = json.loads(document)
    if data.get("version") != FORMAT_VERSION:
        raise ValueError(f"unknown format version {data.get('version')!r}")
    tokens = [
        Token(
            token_id=str(e["id"]),
            owner=str(e["owner"]),
            requester=str(e["requester"]),
            renewers=tuple(str(r) for r in e["renewers"]),
            issue_ms=int(e["issue_ms"]),
            expiry_ms=int(e["expiry_ms"]),
            max_ms=int(e["max_ms"]),
        )
        for e in data["tokens"]
    ]
    return {t.token_id: t for t in tokens}
