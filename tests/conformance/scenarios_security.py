"""Scenarios of security: SaslHandshake and SaslAuthenticate (PLAIN and SCRAM, on a
PLAINTEXT and on a SASL listener), DescribeUserScramCredentials and
AlterUserScramCredentials, and ApiVersions. The ACL scenarios are in
scenarios_acls.py."""

from __future__ import annotations

import base64
import hashlib
import hmac
import struct
from collections.abc import Sequence
from typing import Any

from helpers.wire import WireClient

from conformance.harness import Run, scenario

SASL_HANDSHAKE, API_VERSIONS, SASL_AUTHENTICATE, METADATA = 17, 18, 36, 3
DESCRIBE_SCRAM, ALTER_SCRAM = 50, 51
SHA_256, SHA_512 = 1, 2
HASHES = {SHA_256: "sha256", SHA_512: "sha512"}
MECHANISM_NAMES = {SHA_256: "SCRAM-SHA-256", SHA_512: "SCRAM-SHA-512"}
SALT = b"conformance-salt"


def handshake(run: Run, client: WireClient, mechanism: str, quiet: bool = False) -> Any:
    if quiet:
        return run.quiet(SASL_HANDSHAKE, 1, {"mechanism": mechanism}, client)
    return run.call(SASL_HANDSHAKE, 1, {"mechanism": mechanism}, client, view=sorted_mechanisms)


def sorted_mechanisms(answer: Any) -> dict[str, Any]:
    """Kafka lists the enabled mechanisms in the order of a Java HashSet of them."""
    return {"error_code": answer.error_code, "mechanisms": sorted(answer.mechanisms)}


def authenticate(run: Run, client: WireClient, token: bytes, quiet: bool = False) -> Any:
    send = run.quiet if quiet else run.call
    return send(SASL_AUTHENTICATE, 2, {"auth_bytes": token}, client)


def closed(client: WireClient) -> bool:
    """Whether the broker closed the connection (within 3 s: Kafka waits a moment
    after a failed authentication)."""
    return client.is_closed_by_peer(timeout=3.0)


# -- SCRAM credentials ----------------------------------------------------------------


def salted(password: str, mechanism: int, iterations: int = 4096) -> bytes:
    return hashlib.pbkdf2_hmac(HASHES[mechanism], password.encode(), SALT, iterations)


def upsertion(user: str, password: str, mechanism: int, iterations: int = 4096) -> dict[str, Any]:
    return {
        "name": user,
        "mechanism": mechanism,
        "iterations": iterations,
        "salt": SALT,
        "salted_password": salted(password, mechanism, max(iterations, 1)),
    }


def alter_scram(
    run: Run,
    upsertions: Sequence[dict[str, Any]] = (),
    deletions: Sequence[tuple[str, int]] = (),
) -> Any:
    body = {
        "deletions": [{"name": user, "mechanism": mechanism} for user, mechanism in deletions],
        "upsertions": list(upsertions),
    }
    return run.call(ALTER_SCRAM, 0, body, view=sorted_alterations)


def sorted_alterations(answer: Any) -> dict[str, Any]:
    """Kafka answers the users in the order of a Java HashMap of them."""
    results = [
        {"user": r.user, "error_code": r.error_code, "error_message": r.error_message}
        for r in answer.results
    ]
    return {"results": sorted(results, key=lambda r: r["user"])}


def describe_scram(run: Run, users: list[str] | None) -> Any:
    names = None if users is None else [{"name": user} for user in users]
    return run.call(DESCRIBE_SCRAM, 0, {"users": names}, view=sorted_users)


def sorted_users(answer: Any) -> dict[str, Any]:
    """Kafka answers the users asked for in the order of a Java HashMap of them."""
    return {
        "error_code": answer.error_code,
        "error_message": answer.error_message,
        "results": sorted(
            (
                {
                    "user": result.user,
                    "error_code": result.error_code,
                    "error_message": result.error_message,
                    "credentials": sorted(
                        (int(i.mechanism), int(i.iterations)) for i in result.credential_infos
                    ),
                }
                for result in answer.results
            ),
            key=lambda result: (result["user"], result["error_code"]),
        ),
    }


def own_users(run: Run) -> Any:
    """DescribeUserScramCredentials of every user, keeping this run's own (other
    scenarios make users too)."""

    def ours(answer: Any) -> dict[str, Any]:
        kept = sorted_users(answer)
        kept["results"] = [r for r in kept["results"] if r["user"].startswith(run.prefix)]
        return kept

    return run.call(DESCRIBE_SCRAM, 0, {"users": None}, view=ours)


def until_stored(run: Run, user: str, credentials: list[tuple[int, int]]) -> None:
    """Wait until the user's (mechanism, iterations) are these (Kafka's brokers learn
    of a change from the controller a moment after it is answered)."""

    def stored(answer: Any) -> list[tuple[int, int]]:
        return sorted(
            (int(i.mechanism), int(i.iterations)) for i in answer.results[0].credential_infos
        )

    run.until(
        lambda: run.quiet(DESCRIBE_SCRAM, 0, {"users": [{"name": user}]}),
        lambda answer: stored(answer) == credentials,
    )


@scenario("scram.upsert-describe-delete", "SCRAM credentials made, listed, replaced, removed")
def _scram_valid(run: Run) -> None:
    user, other = run.name("sam"), run.name("sue")
    alter_scram(run, [upsertion(user, "pw", SHA_256), upsertion(other, "pw", SHA_512, 8192)])
    until_stored(run, other, [(SHA_512, 8192)])
    alter_scram(run, [upsertion(user, "pw", SHA_512, 8192)])
    until_stored(run, user, [(SHA_256, 4096), (SHA_512, 8192)])
    describe_scram(run, [user, other])
    own_users(run)
    alter_scram(run, [upsertion(user, "other", SHA_256, 5000)])
    until_stored(run, user, [(SHA_256, 5000), (SHA_512, 8192)])
    describe_scram(run, [user])
    alter_scram(run, deletions=[(user, SHA_512)])
    until_stored(run, user, [(SHA_256, 5000)])
    describe_scram(run, [user])
    alter_scram(run, deletions=[(user, SHA_256), (other, SHA_512)])
    until_stored(run, user, [])
    until_stored(run, other, [])
    describe_scram(run, [user, other])


@scenario("scram.bad-alterations", "unknown mechanism, iterations out of range, a user twice")
def _scram_invalid(run: Run) -> None:
    user, other = run.name("u"), run.name("v")
    alter_scram(run, [upsertion(user, "pw", SHA_256) | {"mechanism": 0}])
    alter_scram(run, [upsertion(user, "pw", SHA_256) | {"mechanism": 7}])
    alter_scram(run, [upsertion(user, "pw", SHA_256, 4095)])
    alter_scram(run, [upsertion(user, "pw", SHA_256, 16385)])
    alter_scram(run, [upsertion(user, "pw", SHA_256), upsertion(user, "pw", SHA_512)])
    alter_scram(run, [upsertion(user, "pw", SHA_256)], deletions=[(user, SHA_512)])
    alter_scram(run, [upsertion(other, "pw", SHA_256) | {"name": ""}])
    alter_scram(run, deletions=[(other, SHA_256)])
    alter_scram(run, deletions=[(other, 0)])
    describe_scram(run, [user, other])


@scenario("scram.describe-unknown", "describing unknown users, a user twice, an empty list")
def _scram_describe_unknown(run: Run) -> None:
    describe_scram(run, [run.name("nobody")])
    describe_scram(run, [run.name("twice"), run.name("twice")])
    describe_scram(run, [])
    describe_scram(run, [""])


# -- SASL on a PLAINTEXT listener, and ApiVersions --------------------------------------


@scenario("sasl.plaintext-listener", "SaslHandshake and SaslAuthenticate where SASL is not on")
def _sasl_plaintext(run: Run) -> None:
    client = run.client()
    handshake(run, client, "PLAIN")
    authenticate(run, client, b"\0alice\0alice-secret")
    run.record("connection closed", closed(client))


def api_versions_view(answer: Any) -> dict[str, Any]:
    """The error and which security APIs are served (each broker serves many others;
    where the version ranges differ, test_api_versions_side_by_side prints it)."""
    keep = {17, 18, 36, 29, 30, 31, 50, 51}
    return {
        "error_code": answer.error_code,
        "api_keys": sorted(a.api_key for a in answer.api_keys if a.api_key in keep),
    }


SOFTWARE = {"client_software_name": "conformance", "client_software_version": "1.0"}


def this_node(run: Run) -> tuple[str, int]:
    """The cluster id and node id of the broker the run talks to."""
    answer = run.quiet(METADATA, 12, {"topics": [], "allow_auto_topic_creation": False})
    return answer.cluster_id, answer.brokers[0].node_id


@scenario("api-versions.valid", "ApiVersions v0, v3, v4 and v5 (naming this cluster and node)")
def _api_versions(run: Run) -> None:
    run.call(API_VERSIONS, 0, {}, view=api_versions_view)
    for version in (3, 4, 5):
        run.call(API_VERSIONS, version, SOFTWARE, view=api_versions_view)
    cluster_id, node_id = this_node(run)
    expected = {**SOFTWARE, "cluster_id": cluster_id, "node_id": node_id}
    run.call(API_VERSIONS, 5, expected, view=api_versions_view)


@scenario("api-versions.invalid", "a version past the broker's, a bad client software name")
def _api_versions_invalid(run: Run) -> None:
    client = run.client()
    correlation, data = client.request_bytes(API_VERSIONS, 3, SOFTWARE)
    # the same request claiming v9: size (4 bytes), api key (2), then the version
    client.send_raw(data[:6] + struct.pack(">h", 9) + data[8:])
    answer = client.read_response(API_VERSIONS, 0, correlation)
    listed = [a.api_key for a in answer.api_keys]
    run.answered(API_VERSIONS, 9, {"error_code": answer.error_code, "api_keys": listed})
    for name, version in (("bad name!", "1"), ("ok", ""), ("-x", "1.0"), ("x", "1.0-")):
        software = {"client_software_name": name, "client_software_version": version}
        run.call(API_VERSIONS, 3, software)
    cluster_id, node_id = this_node(run)
    for expected in (
        {"cluster_id": cluster_id, "node_id": -1},
        {"cluster_id": None, "node_id": node_id},
        {"cluster_id": "another-cluster", "node_id": node_id},
        {"cluster_id": cluster_id, "node_id": node_id + 1},
        {"cluster_id": "", "node_id": node_id},
    ):
        run.call(API_VERSIONS, 5, {**SOFTWARE, **expected}, view=api_versions_view)
    run.call(API_VERSIONS, 5, {"client_software_name": "-x", "client_software_version": "1"})


# -- SASL on a SASL_PLAINTEXT listener --------------------------------------------------


@scenario("sasl.plain", "PLAIN: handshake, login, a second login refused", secure=True)
def _sasl_plain(run: Run) -> None:
    client = run.client(sasl=True)
    run.call(API_VERSIONS, 3, SOFTWARE, client, view=api_versions_view)
    handshake(run, client, "PLAIN")
    authenticate(run, client, b"\0alice\0alice-secret")
    metadata = run.quiet(METADATA, 12, {"topics": [], "allow_auto_topic_creation": False}, client)
    run.record("metadata after login", len(metadata.brokers))
    handshake(run, client, "PLAIN")
    authenticate(run, client, b"\0alice\0alice-secret")
    run.record("connection closed", closed(client))


@scenario("sasl.plain-refused", "PLAIN: a wrong password, an unknown user", secure=True)
def _sasl_plain_refused(run: Run) -> None:
    for token in (b"\0alice\0wrong", b"\0nobody\0x", b"alice\0alice\0alice-secret", b"garbage"):
        client = run.client(sasl=True)
        handshake(run, client, "PLAIN", quiet=True)
        authenticate(run, client, token)
        run.record("connection closed", closed(client))


@scenario("sasl.bad-handshakes", "an unknown mechanism, a second handshake", secure=True)
def _sasl_bad_handshakes(run: Run) -> None:
    client = run.client(sasl=True)
    handshake(run, client, "GSSAPI")
    run.record("connection closed", closed(client))
    client = run.client(sasl=True)
    handshake(run, client, "PLAIN")
    handshake(run, client, "PLAIN")
    run.record("connection closed", closed(client))


@scenario("sasl.authenticate-first", "SaslAuthenticate before any handshake", secure=True)
def _sasl_authenticate_first(run: Run) -> None:
    client = run.client(sasl=True)
    try:
        authenticate(run, client, b"\0alice\0alice-secret")
    except ConnectionError:
        run.record("answer", "the connection closed")


def scram_login(
    run: Run,
    client: WireClient,
    user: str,
    password: str,
    mechanism: int,
    record: bool,
    extensions: str = "",
) -> Any:
    """A SCRAM exchange; the final answer. The server's first message is never a step
    (its nonce is random): what it says is recorded, and the final answer kept, when
    `record`. `extensions` follow the nonce in the client's first message."""
    name = HASHES[mechanism]
    handshake(run, client, MECHANISM_NAMES[mechanism], quiet=not record)
    bare = f"n={user},r=conformancenonce{extensions}"
    first = authenticate(run, client, f"n,,{bare}".encode(), quiet=True)
    if first.error_code != 0:
        return first
    server_first = bytes(first.auth_bytes).decode()
    fields = dict(item.split("=", 1) for item in server_first.split(","))
    if record:
        said = {"salt": fields["s"], "iterations": fields["i"], "nonce": "r" in fields}
        run.record("server first", said)
    key = hashlib.pbkdf2_hmac(
        name, password.encode(), base64.b64decode(fields["s"]), int(fields["i"])
    )
    client_key = hmac.digest(key, b"Client Key", name)
    without_proof = f"c=biws,r={fields['r']}"
    auth = f"{bare},{server_first},{without_proof}".encode()
    signature = hmac.digest(hashlib.new(name, client_key).digest(), auth, name)
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True)))
    final_token = f"{without_proof},p={proof.decode()}".encode()
    final = authenticate(run, client, final_token, quiet=not record)
    if record:
        expected = hmac.digest(hmac.digest(key, b"Server Key", name), auth, name)
        signed = bytes(final.auth_bytes) == b"v=" + base64.b64encode(expected)
        run.record("server signature", signed)
    return final


def make_scram_user(run: Run, user: str, password: str, mechanism: int) -> None:
    body = {"deletions": [], "upsertions": [upsertion(user, password, mechanism)]}
    assert run.quiet(ALTER_SCRAM, 0, body).results[0].error_code == 0
    # Kafka's brokers learn of a new credential from the controller a moment later
    run.until(lambda: scram_client(run, user, password, mechanism), lambda c: c is not None)


def scram_client(run: Run, user: str, password: str, mechanism: int) -> WireClient | None:
    """A connection to the SASL listener logged in as the user, or None where the
    login fails; nothing of it is recorded."""
    client = run.client(sasl=True)
    try:
        if scram_login(run, client, user, password, mechanism, record=False).error_code == 0:
            return client
    except (ConnectionError, OSError):
        pass
    client.close()
    return None


@scenario("sasl.scram", "SCRAM-SHA-256 and -512 logins of users made just before", secure=True)
def _sasl_scram(run: Run) -> None:
    for mechanism in (SHA_256, SHA_512):
        user = run.name(f"sam{mechanism}")
        make_scram_user(run, user, "pw", mechanism)
        client = run.client(sasl=True)
        scram_login(run, client, user, "pw", mechanism, record=True)
        metadata = run.quiet(
            METADATA, 12, {"topics": [], "allow_auto_topic_creation": False}, client
        )
        run.record("metadata after login", len(metadata.brokers))


@scenario("sasl.scram-refused", "SCRAM: a wrong password, an unknown user", secure=True)
def _sasl_scram_refused(run: Run) -> None:
    user = run.name("sue")
    make_scram_user(run, user, "pw", SHA_256)
    client = run.client(sasl=True)
    handshake(run, client, "SCRAM-SHA-256", quiet=True)
    first = authenticate(run, client, f"n,,n={user},r=nonce".encode(), quiet=True)
    server_first = bytes(first.auth_bytes).decode()
    nonce = dict(item.split("=", 1) for item in server_first.split(","))["r"]
    proof = base64.b64encode(b"\0" * 32).decode()
    authenticate(run, client, f"c=biws,r={nonce},p={proof}".encode())
    run.record("connection closed", closed(client))
    client = run.client(sasl=True)
    handshake(run, client, "SCRAM-SHA-256", quiet=True)
    authenticate(run, client, f"n,,n={run.name('nobody')},r=nonce".encode())
    run.record("connection closed", closed(client))
