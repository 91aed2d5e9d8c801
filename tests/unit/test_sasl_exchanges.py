"""The SASL exchanges, JAAS parsing, the SASL listener settings and the SCRAM
credential file, as pure functions (no broker process)."""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path

import pytest

from odradek.broker.security.credentials import CredentialsFileError, CredentialStore
from odradek.broker.security.jaas import JaasError, jaas_config_for, parse_jaas_config, plain_users
from odradek.broker.security.sasl import (
    INVALID_PLAIN_CREDENTIALS,
    AuthenticationFailed,
    PlainExchange,
    ScramExchange,
)
from odradek.broker.security.sasl_listener import SaslConfigError, sasl_listener
from odradek.broker.security.scram import (
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    ScramCredential,
    ScramMechanism,
    credential_from_password,
)
from odradek.broker.settings.config import BrokerConfig

# RFC 7677, section 3
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def rfc_exchange(users: dict[str, ScramCredential] | None = None) -> ScramExchange:
    if users is None:
        users = {"user": credential_from_password(SCRAM_SHA_256, "pencil", 4096, RFC_SALT)}
    return ScramExchange(SCRAM_SHA_256, users.get, lambda: RFC_SERVER_NONCE)


def test_scram_sha_256_matches_the_rfc_7677_test_vector() -> None:
    exchange = rfc_exchange()
    assert exchange.step(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert not exchange.complete
    assert exchange.step(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert exchange.complete and not exchange.failed
    assert exchange.principal == "User:user"


def test_scram_refuses_a_wrong_password() -> None:
    users = {"user": credential_from_password(SCRAM_SHA_256, "not pencil", 4096, RFC_SALT)}
    exchange = rfc_exchange(users)
    exchange.step(RFC_CLIENT_FIRST)
    with pytest.raises(AuthenticationFailed, match="invalid credentials with SASL mechanism"):
        exchange.step(RFC_CLIENT_FINAL)
    assert exchange.failed and not exchange.complete and exchange.principal is None
    with pytest.raises(AuthenticationFailed):  # and nothing after that
        exchange.step(RFC_CLIENT_FINAL)


def test_scram_refuses_unknown_users_and_a_nonce_not_issued() -> None:
    with pytest.raises(AuthenticationFailed):
        rfc_exchange().step(b"n,,n=somebody,r=rOprNGfwEbeRWgbNEkqO")
    exchange = rfc_exchange()
    exchange.step(RFC_CLIENT_FIRST)
    with pytest.raises(AuthenticationFailed):
        exchange.step(RFC_CLIENT_FINAL.replace(b"$k0,", b"$k1,"))


@pytest.mark.parametrize(
    "client_first",
    [
        b"p=tls-server-end-point,,n=user,r=abc",  # channel binding asked for
        b"n,,n=user,r=abc,tokenauth=true",  # a delegation token
        b"n,a=other,n=user,r=abc",  # another authorization id
        b"n,,n=user",  # no nonce
        b"garbage",
        b"\xff\xfe",
    ],
)
def test_scram_refuses_client_first_messages_it_cannot_serve(client_first: bytes) -> None:
    exchange = rfc_exchange()
    with pytest.raises(AuthenticationFailed):
        exchange.step(client_first)
    assert exchange.failed


def test_scram_final_message_must_carry_the_gs2_header_and_a_proof() -> None:
    for final in (
        RFC_CLIENT_FINAL.replace(b"c=biws", b"c=eSws"),  # "y,," instead of "n,,"
        RFC_CLIENT_FINAL.split(b",p=")[0],
        RFC_CLIENT_FINAL[:-8] + b"!!!!!!!=",
    ):
        exchange = rfc_exchange()
        exchange.step(RFC_CLIENT_FIRST)
        with pytest.raises(AuthenticationFailed):
            exchange.step(final)


def client_proof(
    mechanism: ScramMechanism, password: str, server_first: str, client_first_bare: str
) -> tuple[str, bytes]:
    """A SCRAM client's final message (written out here, as a client computes it) and
    the server signature it expects."""
    fields = dict(item.split("=", 1) for item in server_first.split(","))
    salted = hashlib.pbkdf2_hmac(
        mechanism.hash_name, password.encode(), base64.b64decode(fields["s"]), int(fields["i"])
    )
    client_key = hmac.digest(salted, b"Client Key", mechanism.hash_name)
    without_proof = f"c=biws,r={fields['r']}"
    auth = f"{client_first_bare},{server_first},{without_proof}".encode()
    signature = hmac.digest(
        hashlib.new(mechanism.hash_name, client_key).digest(), auth, mechanism.hash_name
    )
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    server_key = hmac.digest(salted, b"Server Key", mechanism.hash_name)
    expected = hmac.digest(server_key, auth, mechanism.hash_name)
    return f"{without_proof},p={base64.b64encode(proof).decode()}", expected


def test_scram_sha_512_with_an_escaped_user_name() -> None:
    credential = credential_from_password(SCRAM_SHA_512, "s3cret", 8192)
    exchange = ScramExchange(SCRAM_SHA_512, {"a,b=c": credential}.get)
    bare = "n=a=2Cb=3Dc,r=clientnonce"
    server_first = exchange.step(f"n,,{bare}".encode()).decode()
    assert server_first.startswith("r=clientnonce") and server_first.endswith(",i=8192")
    final, expected = client_proof(SCRAM_SHA_512, "s3cret", server_first, bare)
    assert exchange.step(final.encode()) == b"v=" + base64.b64encode(expected)
    assert exchange.principal == "User:a,b=c"


def test_plain_checks_user_password_and_authorization_id() -> None:
    users = {"alice": "alice-secret"}
    ok = PlainExchange(users)
    assert ok.step(b"\0alice\0alice-secret") == b""
    assert ok.complete and ok.principal == "User:alice"
    assert PlainExchange(users).step(b"alice\0alice\0alice-secret") == b""
    cases = {
        b"\0alice\0wrong": INVALID_PLAIN_CREDENTIALS,
        b"\0bob\0alice-secret": INVALID_PLAIN_CREDENTIALS,
        b"bob\0alice\0alice-secret": "authorization id that is different from username",
        b"\0\0alice-secret": "username not specified",
        b"\0alice\0": "password not specified",
        b"alice-secret": "expected 3 tokens, got 1",
        b"a\0b\0c\0d\0e": "expected 3 tokens, got 4",
        b"\0alice\0\xff": "not UTF-8",
    }
    for token, message in cases.items():
        exchange = PlainExchange(users)
        with pytest.raises(AuthenticationFailed, match=message):
            exchange.step(token)
        assert exchange.failed and exchange.principal is None


JAAS_PLAIN = """
    org.apache.kafka.common.security.plain.PlainLoginModule required
    // the broker's own login, unused by a single broker
    username="admin" password="admin-secret"
    /* users */ user_admin="admin-secret"
    user_alice="with \\"quotes\\" and ; = inside"
    user_bob=bare-word.value;
"""


def test_jaas_config_with_comments_quotes_and_users() -> None:
    [module] = parse_jaas_config(JAAS_PLAIN)
    assert module.class_name == "org.apache.kafka.common.security.plain.PlainLoginModule"
    assert module.flag == "required"
    assert module.options["username"] == "admin"
    assert plain_users([module]) == {
        "admin": "admin-secret",
        "alice": 'with "quotes" and ; = inside',
        "bob": "bare-word.value",
    }


def test_jaas_config_with_several_modules() -> None:
    modules = parse_jaas_config(
        'com.example.Other optional a="1"; '
        'org.apache.kafka.common.security.plain.PlainLoginModule SUFFICIENT user_x="y";'
    )
    assert [(m.class_name, m.flag) for m in modules] == [
        ("com.example.Other", "optional"),
        ("org.apache.kafka.common.security.plain.PlainLoginModule", "sufficient"),
    ]
    assert plain_users(modules) == {"x": "y"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Login module not specified"),
        ("org.example.Module", "control flag not specified"),
        ("org.example.Module maybe;", "Invalid login module control flag 'maybe'"),
        ('org.example.Module required a="1"', "not terminated by semi-colon"),
        ("org.example.Module required a=;", "Value not specified for key 'a'"),
        ("org.example.Module required a;", "Value not specified for key 'a'"),
        ('org.example.Module required a="open;', "unterminated quoted value"),
        ("org.example.Module required /* open", "unterminated /\\* comment"),
    ],
)
def test_jaas_config_errors(text: str, message: str) -> None:
    with pytest.raises(JaasError, match=message):
        parse_jaas_config(text)


def test_per_listener_and_per_mechanism_jaas_settings_take_precedence() -> None:
    settings = {
        "sasl.jaas.config": "global",
        "listener.name.sasl_plaintext.sasl.jaas.config": "listener",
        "plain.sasl.jaas.config": "mechanism",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": "listener and mechanism",
    }
    assert jaas_config_for(settings, "SASL_PLAINTEXT", "PLAIN") == (
        "listener.name.sasl_plaintext.plain.sasl.jaas.config",
        "listener and mechanism",
    )
    assert jaas_config_for(settings, "OTHER", "PLAIN") == ("plain.sasl.jaas.config", "mechanism")
    assert jaas_config_for(settings, "SASL_PLAINTEXT", "SCRAM-SHA-256") == (
        "listener.name.sasl_plaintext.sasl.jaas.config",
        "listener",
    )
    assert jaas_config_for(settings, "OTHER", "SCRAM-SHA-512") == ("sasl.jaas.config", "global")
    assert jaas_config_for({}, "OTHER", "PLAIN") is None


def config(settings: dict[str, str]) -> BrokerConfig:
    broker_config = BrokerConfig()
    broker_config.apply(settings)
    return broker_config


def test_sasl_listener_settings() -> None:
    listener = sasl_listener(
        config(
            {
                "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS_PLAIN,
                "sasl.server.max.receive.size": "1000",
            }
        ),
        "SASL_PLAINTEXT",
    )
    assert listener.mechanisms == ("PLAIN", "SCRAM-SHA-512")
    assert listener.plain_users["admin"] == "admin-secret"
    assert listener.max_receive_size == 1000


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({}, "sasl.enabled.mechanisms: listener SASL_PLAINTEXT enables GSSAPI"),
        (
            {"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER"},
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms: .* enables OAUTHBEARER",
        ),
        ({"sasl.enabled.mechanisms": "PLAIN"}, "enables PLAIN but no JAAS config"),
        (
            {"sasl.enabled.mechanisms": "PLAIN", "plain.sasl.jaas.config": "broken"},
            "plain.sasl.jaas.config: Login module control flag not specified",
        ),
        (
            {"sasl.enabled.mechanisms": "SCRAM-SHA-256", "sasl.server.max.receive.size": "x"},
            "sasl.server.max.receive.size='x'",
        ),
    ],
)
def test_sasl_listener_settings_that_stop_the_broker(
    settings: dict[str, str], message: str
) -> None:
    with pytest.raises(SaslConfigError, match=message):
        sasl_listener(config(settings), "SASL_PLAINTEXT")


async def test_credentials_survive_a_new_store_and_a_damaged_file_is_reported(
    tmp_path: Path,
) -> None:
    store = CredentialStore(tmp_path)
    alice = credential_from_password(SCRAM_SHA_256, "pw", 4096)
    await store.change([("alice", "SCRAM-SHA-256", alice)], [])
    await store.change([("bob", "SCRAM-SHA-512", alice)], [])
    await store.change([], [("bob", "SCRAM-SHA-512")])
    again = CredentialStore(tmp_path)
    again.load()
    assert again.users() == {"alice": {"SCRAM-SHA-256": alice}}
    assert not list(tmp_path.glob("*.tmp"))
    store.path.write_text('{"version": 1, "credentials": [{"user": "x"}]}')
    with pytest.raises(CredentialsFileError, match="scram-credentials.json"):
        CredentialStore(tmp_path).load()
