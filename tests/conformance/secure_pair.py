"""The second pair of brokers, for the scenarios that need an authorizer or a SASL
listener (`@scenario(..., secure=True)`): Apache Kafka 4.4 and Odradek with the same
settings. Each has a PLAINTEXT listener, where User:ANONYMOUS is a super user (the
scenarios' set-up and ACL administration go there), and a SASL_PLAINTEXT one with
PLAIN (users admin and alice) and SCRAM-SHA-256/512 (users the scenarios make, and
delegation tokens)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from helpers.broker import Broker, free_port
from helpers.reference_kafka import ReferenceKafka

PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret"}
PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" '
    + " ".join(f'user_{user}="{password}"' for user, password in PASSWORDS.items())
    + ";"
)
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

SECURITY = {
    "sasl.enabled.mechanisms": ",".join(MECHANISMS),
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
    # Kafka wants a login module for every mechanism it enables
    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
    "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS;User:admin",
    # delegation tokens are served only with a secret key
    "delegation.token.secret.key": "conformance-token-key",
}


@dataclass
class SecureBroker:
    bootstrap: str  # PLAINTEXT
    sasl_bootstrap: str  # SASL_PLAINTEXT


def start_kafka(base: Path) -> tuple[ReferenceKafka, SecureBroker]:
    plain, sasl, controller = free_port(), free_port(), free_port()
    kafka = ReferenceKafka(
        base,
        port=plain,
        controller_port=controller,
        extra={
            "node.id": "0",
            "controller.quorum.voters": f"0@127.0.0.1:{controller}",
            "listeners": (
                f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl},"
                f"CONTROLLER://127.0.0.1:{controller}"
            ),
            "advertised.listeners": (
                f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}"
            ),
            "listener.security.protocol.map": (
                "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"
            ),
            **SECURITY,
        },
    ).start()
    return kafka, SecureBroker(kafka.bootstrap, f"127.0.0.1:{sasl}")


def start_odradek(base: Path) -> tuple[Broker, SecureBroker]:
    plain, sasl = free_port(), free_port()
    listeners = f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}"
    broker = Broker(
        base / "data", port=plain, overrides={"listeners": listeners, **SECURITY}, log_dir=base
    ).start()
    return broker, SecureBroker(broker.bootstrap, f"127.0.0.1:{sasl}")
