"""SCRAM credentials per user and mechanism, kept in the data directory.

`scram-credentials.json` holds salt, stored key, server key and iterations of each
credential (base64), never a password. Every change rewrites it whole: written to a
temporary file, fsynced, renamed over the old one and the directory fsynced, so a
crash leaves either the old file or the new one.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from odradek.broker.security.scram import MECHANISMS, ScramCredential
from odradek.storage.document_file import DocumentFile

FILE_NAME = "scram-credentials.json"
FORMAT_VERSION = 1


class CredentialsFileError(RuntimeError):
    """The credentials file exists but cannot be read; the message names it."""


class CredentialStore:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME
        # user -> mechanism name -> credential
        self._users: dict[str, dict[str, ScramCredential]] = {}
        self._file = DocumentFile(
            self.path, "SCRAM credentials", encode_document, _read, CredentialsFileError
        )

    def load(self) -> None:
        users = self._file.read()
        if users is not None:
            self._users = users

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def users(self) -> dict[str, dict[str, ScramCredential]]:
        return {user: dict(by_mechanism) for user, by_mechanism in self._users.items()}

    async def change(
        self,
        upserts: Iterable[tuple[str, str, ScramCredential]],
        deletes: Iterable[tuple[str, str]],
    ) -> None:
        """Apply (user, mechanism, credential) upserts and (user, mechanism) deletes;
        returns once the file is durable. Raises OSError (nothing changed) if it cannot
        be written."""
        async with self._file.lock:
            users = changed(self.users(), upserts, deletes)  # in use once written
            await self._file.write(users)
            self._users = users

    def adopt(self, document: bytes) -> None:
        """Every credential as a cluster's metadata has them, kept in the file too."""
        users = self._file.adopted(document, self._users)
        if users is not None:
            self._users = users


Users = dict[str, dict[str, ScramCredential]]


def changed(
    users: Users,
    upserts: Iterable[tuple[str, str, ScramCredential]],
    deletes: Iterable[tuple[str, str]],
) -> Users:
    """`users` after (user, mechanism) deletes, then (user, mechanism, credential) upserts."""
    for user, mechanism in deletes:
        by_mechanism = users.get(user, {})
        by_mechanism.pop(mechanism, None)
        if not by_mechanism:
            users.pop(user, None)
    for user, mechanism, credential in upserts:
        users.setdefault(user, {})[mechanism] = credential
    return users


def encode_document(users: Users) -> bytes:
    return json.dumps(_encode(users), indent=1).encode()


def decode_document(document: bytes | None) -> Users:
    return {} if not document else _decode(json.loads(document))


def _read(document: bytes) -> Users:
    """The credentials of scram-credentials.json; unlike decode_document, an empty file
    is refused rather than read as no users."""
    return _decode(json.loads(document))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _encode(users: dict[str, dict[str, ScramCredential]]) -> dict[str, Any]:
    return {
        "version": FORMAT_VERSION,
        "credentials": [
            {
                "user": user,
                "mechanism": mechanism,
                "salt": _b64(c.salt),
                "stored_key": _b64(c.stored_key),
                "server_key": _b64(c.server_key),
                "iterations": c.iterations,
            }
            for user, by_mechanism in sorted(users.items())
            for mechanism, c in sorted(by_mechanism.items())
        ],
    }


def _decode(document: Any) -> dict[str, dict[str, ScramCredential]]:
    if document.get("version") != FORMAT_VERSION:
        raise ValueError(f"unknown format version {document.get('version')!r}")
    users: dict[str, dict[str, ScramCredential]] = {}
    for entry in document["credentials"]:
        mechanism = entry["mechanism"]
        if mechanism not in MECHANISMS:
            raise ValueError(f"unknown mechanism {mechanism!r}")
        users.setdefault(str(entry["user"]), {})[mechanism] = ScramCredential(
            salt=base64.b64decode(entry["salt"], validate=True),
            stored_key=base64.b64decode(entry["stored_key"], validate=True),
            server_key=base64.b64decode(entry["server_key"], validate=True),
            iterations=int(entry["iterations"]),
        )
    return users
