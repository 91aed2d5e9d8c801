"""Scenarios of delegation tokens (CreateDelegationToken, RenewDelegationToken,
ExpireDelegationToken, DescribeDelegationToken) and SCRAM logins with a token, on
the secure pair (both brokers with a delegation.token.secret.key). Token ids, HMACs
and times are random or the clock's: the views keep what both brokers must agree on."""

from __future__ import annotations

import base64
import time
from typing import Any

from helpers.wire import WireClient

from conformance.harness import Run, scenario
from conformance.scenarios_security import (
    HASHES,
    SHA_256,
    SHA_512,
    authenticate,
    closed,
    handshake,
    scram_login,
)

CREATE, RENEW, EXPIRE, DESCRIBE = 38, 39, 40, 41
HOUR_MS, DAY_MS, WEEK_MS = 3600000, 86400000, 604800000


def plain_client(run: Run, user: str = "alice") -> WireClient:
    """A connection to the SASL listener logged in with PLAIN (alice or admin)."""
    client = run.client(sasl=True)
    handshake(run, client, "PLAIN", quiet=True)
    password = {"alice": "alice-secret", "admin": "admin-secret"}[user]
    answer = authenticate(run, client, f"\0{user}\0{password}".encode(), quiet=True)
    assert answer.error_code == 0, answer
    return client


def created_view(answer: Any) -> dict[str, Any]:
    issued = answer.issue_timestamp
    view: dict[str, Any] = {
        "error_code": answer.error_code,
        "owner": (answer.principal_type, answer.principal_name),
        "token_id": bool(answer.token_id),
        "hmac bytes": len(answer.hmac),
    }
    if hasattr(answer, "token_requester_principal_name"):
        view["requester"] = (
            answer.token_requester_principal_type,
            answer.token_requester_principal_name,
        )
    if issued is None or answer.error_code != 0:
        times = (issued, answer.expiry_timestamp, answer.max_timestamp)
        view["times"] = [None if t is None else int(t.timestamp() * 1000) for t in times]
    else:
        view["expiry after issue"] = int((answer.expiry_timestamp - issued).total_seconds() * 1000)
        view["max after issue"] = int((answer.max_timestamp - issued).total_seconds() * 1000)
    return view


def expiry_view(answer: Any) -> dict[str, Any]:
    """The error, and where the new expiry lies from now (to the minute)."""
    expiry = answer.expiry_timestamp
    view: dict[str, Any] = {"error_code": answer.error_code}
    if expiry is None or answer.error_code != 0:
        view["expiry"] = None if expiry is None else int(expiry.timestamp() * 1000)
    else:
        view["expiry from now, minutes"] = round((expiry.timestamp() - time.time()) / 60)
    return view


def described(answer: Any, token_ids: set[str]) -> dict[str, Any]:
    """The error and the tokens among `token_ids`, in id order, ids left out."""
    tokens = sorted((t for t in answer.tokens if t.token_id in token_ids), key=lambda t: t.token_id)
    return {
        "error_code": answer.error_code,
        "tokens": [
            {
                "owner": (t.principal_type, t.principal_name),
                "requester": (
                    getattr(t, "token_requester_principal_type", None),
                    getattr(t, "token_requester_principal_name", None),
                ),
                "renewers": sorted((r.principal_type, r.principal_name) for r in t.renewers),
                "max after issue, minutes": round((t.max_timestamp - t.issue_timestamp) / 60000),
                "expiry after issue, minutes": round(
                    (t.expiry_timestamp - t.issue_timestamp) / 60000
                ),
                "hmac bytes": len(t.hmac),
            }
            for t in tokens
        ],
    }


def create_body(version: int, renewers: list[tuple[str, str]], owner: str | None = None) -> dict:
    body: dict[str, Any] = {
        "renewers": [{"principal_type": k, "principal_name": n} for k, n in renewers],
        "max_lifetime": -1,
    }
    if version >= 3:
        body["owner_principal_type"] = "User" if owner else None
        body["owner_principal_name"] = owner
    return body


def describe(run: Run, client: WireClient, version: int, token_ids: set[str], owners: Any) -> None:
    run.call(
        DESCRIBE,
        version,
        {"owners": owners},
        client,
        view=lambda answer: described(answer, token_ids),
    )


def token_login(run: Run, token_id: str, hmac: bytes, mechanism: int) -> Any:
    """A SCRAM exchange with tokenauth=true: its final answer (or the first's error)."""
    client = run.client(sasl=True)
    password = base64.b64encode(hmac).decode()
    final = scram_login(
        run, client, token_id, password, mechanism, record=False, extensions=",tokenauth=true"
    )
    return client, final


@scenario(
    "tokens.lifecycle", "tokens made, described, used to log in, renewed, expired", secure=True
)
def _tokens_lifecycle(run: Run) -> None:
    alice = plain_client(run)
    made = {}
    for version in (1, 2, 3):
        answer = run.call(
            CREATE, version, create_body(version, [("User", "bob")]), alice, view=created_view
        )
        made[version] = answer
    ids = {a.token_id for a in made.values()}
    admin = plain_client(run, "admin")
    first = made[3]
    # Kafka's brokers learn of a token from the controller a moment after it is made
    run.until(
        lambda: run.quiet(DESCRIBE, 3, {"owners": None}, admin),
        lambda answer: ids <= {t.token_id for t in answer.tokens},
    )
    for version in (1, 2, 3):
        describe(run, alice, version, ids, None)
    describe(run, admin, 3, ids, [{"principal_type": "User", "principal_name": "bob"}])
    describe(run, admin, 3, ids, [])
    for mechanism in (SHA_256, SHA_512):
        client, final = token_login(run, first.token_id, first.hmac, mechanism)
        run.record(f"token login {HASHES[mechanism]}", final.error_code)
        run.call(CREATE, 3, create_body(3, []), client, view=created_view)
        run.call(RENEW, 2, {"hmac": first.hmac, "renew_period": HOUR_MS}, client, view=expiry_view)
        run.call(DESCRIBE, 3, {"owners": None}, client, view=lambda a: described(a, ids))
    for version in (1, 2):
        run.call(
            RENEW,
            version,
            {"hmac": made[version].hmac, "renew_period": HOUR_MS},
            alice,
            view=expiry_view,
        )
        run.call(
            EXPIRE,
            version,
            {"hmac": made[version].hmac, "expiry_time_period": 2 * HOUR_MS},
            alice,
            view=expiry_view,
        )
    run.call(RENEW, 2, {"hmac": first.hmac, "renew_period": -1}, alice, view=expiry_view)
    run.call(EXPIRE, 2, {"hmac": first.hmac, "expiry_time_period": -1}, alice, view=expiry_view)
    run.until(
        lambda: run.quiet(DESCRIBE, 3, {"owners": None}, alice),
        lambda answer: first.token_id not in {t.token_id for t in answer.tokens},
    )
    describe(run, alice, 3, ids, None)
    client, final = token_login(run, first.token_id, first.hmac, SHA_512)
    run.record("login with an expired token", final.error_code)
    run.record("connection closed", closed(client))
    run.call(RENEW, 2, {"hmac": first.hmac, "renew_period": HOUR_MS}, alice, view=expiry_view)


@scenario("tokens.refused", "token requests refused: channel, owner, renewers, hmac", secure=True)
def _tokens_refused(run: Run) -> None:
    plaintext = run.client()
    run.call(CREATE, 3, create_body(3, []), plaintext, view=created_view)
    run.call(RENEW, 2, {"hmac": b"x", "renew_period": HOUR_MS}, plaintext, view=expiry_view)
    run.call(EXPIRE, 2, {"hmac": b"x", "expiry_time_period": -1}, plaintext, view=expiry_view)
    run.call(DESCRIBE, 3, {"owners": None}, plaintext)
    alice = plain_client(run)
    run.call(CREATE, 3, create_body(3, [], owner="bob"), alice, view=created_view)
    run.call(CREATE, 3, create_body(3, [("Group", "g")]), alice, view=created_view)
    run.call(CREATE, 1, create_body(1, [("Group", "g")]), alice, view=created_view)
    for version in (1, 2):
        body = {"hmac": b"no such token", "renew_period": HOUR_MS}
        run.call(RENEW, version, body, alice, view=expiry_view)
        body = {"hmac": b"no such token", "expiry_time_period": HOUR_MS}
        run.call(EXPIRE, version, body, alice, view=expiry_view)
    admin = plain_client(run, "admin")
    owned = run.call(CREATE, 3, create_body(3, [], owner="carol"), admin, view=created_view)
    run.until(
        lambda: run.quiet(DESCRIBE, 3, {"owners": None}, admin),
        lambda answer: owned.token_id in {t.token_id for t in answer.tokens},
    )
    run.call(RENEW, 2, {"hmac": owned.hmac, "renew_period": HOUR_MS}, alice, view=expiry_view)
    run.call(EXPIRE, 2, {"hmac": owned.hmac, "expiry_time_period": -1}, alice, view=expiry_view)
    run.call(RENEW, 2, {"hmac": owned.hmac, "renew_period": HOUR_MS}, admin, view=expiry_view)
    describe(run, alice, 3, {owned.token_id}, None)
    describe(run, admin, 3, {owned.token_id}, None)
    client, final = token_login(run, "not-a-token", b"x", SHA_256)
    run.record("login with an unknown token", final.error_code)
    run.record("connection closed", closed(client))
    run.call(EXPIRE, 2, {"hmac": owned.hmac, "expiry_time_period": -1}, admin, view=expiry_view)
