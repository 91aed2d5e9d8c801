"""Delegation tokens are the cluster's: made through one broker, kept by the
controller, and a client logs in with one (SCRAM, tokenauth) on another broker."""

from __future__ import annotations

import time
from pathlib import Path

from helpers import java, kafka_tools
from security.test_delegation_tokens import token_props
from security.test_sasl import MECHANISMS, PLAIN_JAAS

from odradek.broker.testing.broker import free_port
from odradek.testing import Cluster

SESSION_MS = 2000


def with_sasl_listeners(cluster: Cluster) -> dict[int, str]:
    """Each broker gets a SASL_PLAINTEXT listener beside its PLAINTEXT one (which the
    brokers keep among themselves); the new listeners' addresses, by node."""
    addresses = {}
    for node_id, broker in cluster.nodes.items():
        port = free_port(cluster.host)
        broker.overrides.update(
            {
                "listeners": f"PLAINTEXT://{cluster.host}:{broker.port},"
                f"SASL_PLAINTEXT://{cluster.host}:{port}",
                "listener.security.protocol.map": (
                    "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT"
                ),
                "inter.broker.listener.name": "PLAINTEXT",
                "sasl.enabled.mechanisms": ",".join(MECHANISMS),
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
            }
        )
        addresses[node_id] = f"{cluster.host}:{port}"
    return addresses


def test_a_token_made_on_one_broker_logs_in_on_another(tmp_path: Path) -> None:
    settings = {"delegation.token.secret.key": "cluster-token-key"}
    cluster = Cluster(3, tmp_path, overrides=settings, session_timeout_ms=SESSION_MS)
    sasl = with_sasl_listeners(cluster)
    with cluster:
        config = tmp_path / "alice.properties"
        config.write_text(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
            "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
            'required username="alice" password="alice-secret";\n'
        )
        done = kafka_tools.run(
            "kafka-delegation-tokens",
            sasl[1],
            ["--command-config", str(config), "--create", "--max-life-time-period", "-1"],
        )
        assert done.returncode == 0, done.stdout + done.stderr
        token_id, hmac = done.lines()[-1].split()[:2]
        files = [b.data_dir / "delegation-tokens.json" for b in cluster.nodes.values()]
        deadline = time.monotonic() + 10
        while not all(f.exists() and token_id in f.read_text() for f in files):
            assert time.monotonic() < deadline, "the token did not reach every broker"
            time.sleep(0.1)
        # a client logs in with the token on another broker than the one that made it
        listed = java.admin(
            sasl[3], "list-topics", props=token_props("SCRAM-SHA-256", token_id, hmac)
        )
        assert listed.returncode == 0, listed.describe()
