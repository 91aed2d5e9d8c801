"""SCRAM credentials (RFC 5802, RFC 7677) for SCRAM-SHA-256 and SCRAM-SHA-512.

The broker keeps, per user and mechanism, what Kafka keeps: the salt, the
iteration count, StoredKey = H(HMAC(SaltedPassword, "Client Key")) and
ServerKey = HMAC(SaltedPassword, "Server Key"), never the password.
SaltedPassword is PBKDF2-HMAC with the mechanism's hash.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

MIN_ITERATIONS = 4096  # Kafka's minimum for both mechanisms
MAX_ITERATIONS = 16384  # what Kafka's controller accepts at most
DEFAULT_ITERATIONS = 4096


@dataclass(frozen=True)
class ScramMechanism:
    name: str  # as SASL names it: SCRAM-SHA-256
    hash_name: str  # as hashlib names it
    type_code: int  # as the admin APIs carry it (ScramMechanism.type())

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.digest(key, data, self.hash_name)

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def salted_password(self, password: bytes, salt: bytes, iterations: int) -> bytes:
        return hashlib.pbkdf2_hmac(self.hash_name, password, salt, iterations)


SCRAM_SHA_256 = ScramMechanism("SCRAM-SHA-256", "sha256", 1)
SCRAM_SHA_512 = ScramMechanism("SCRAM-SHA-512", "sha512", 2)
MECHANISMS = {m.name: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}
BY_TYPE_CODE = {m.type_code: m for m in MECHANISMS.values()}


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def credential_from_salted_password(
    mechanism: ScramMechanism, salt: bytes, salted_password: bytes, iterations: int
) -> ScramCredential:
    """What AlterUserScramCredentials upsertions carry (the client salts) made storable."""
    client_key = mechanism.hmac(salted_password, b"Client Key")
    return ScramCredential(
        salt=salt,
        stored_key=mechanism.hash(client_key),
        server_key=mechanism.hmac(salted_password, b"Server Key"),
        iterations=iterations,
    )


def credential_from_password(
    mechanism: ScramMechanism,
    password: str,
    iterations: int = DEFAULT_ITERATIONS,
    salt: bytes | None = None,
) -> ScramCredential:
    salt = salt if salt is not None else secrets.token_bytes(32)
    salted = mechanism.salted_password(password.encode(), salt, iterations)
    return credential_from_salted_password(mechanism, salt, salted, iterations)
