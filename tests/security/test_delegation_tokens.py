"""Delegation tokens with Kafka's own tool and the Java 4.4 clients: a token made
with kafka-delegation-tokens logs a producer and a consumer in with SCRAM and
tokenauth=true, as its owner; renew and expire work; an expired token no longer
logs in; tokens survive a restart."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import java, kafka_tools
from helpers.broker import BrokerFactory

from security.test_sasl import create_topic, sasl_broker

pytestmark = pytest.mark.timeout(240)

SETTINGS = {"delegation.token.secret.key": "token-test-key"}


def tokens_tool(bootstrap: str, config: Path, *args: str) -> list[str]:
    done = kafka_tools.run(
        "kafka-delegation-tokens", bootstrap, ["--command-config", str(config), *args]
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.lines()


def token_props(mechanism: str, token_id: str, hmac: str) -> dict[str, str]:
    module = "org.apache.kafka.common.security.scram.ScramLoginModule"
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.jaas.config": (
            f'{module} required username="{token_id}" password="{hmac}" tokenauth="true";'
        ),
    }


def test_a_token_made_with_kafkas_tool_logs_java_clients_in(
    broker_factory: BrokerFactory, unique_topic: str, tmp_path: Path
) -> None:
    broker = sasl_broker(broker_factory, SETTINGS)
    create_topic(broker.bootstrap, unique_topic)
    config = tmp_path / "admin.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="alice" password="alice-secret";\n'
    )
    created = tokens_tool(
        broker.bootstrap,
        config,
        "--create",
        "--max-life-time-period",
        "-1",
        "--renewer-principal",
        "User:bob",
    )
    token_id, hmac, owner, requester, renewers = created[-1].split()[:5]
    assert (owner, requester, renewers) == ("User:alice", "User:alice", "[User:bob]"), created

    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        props = token_props(mechanism, token_id, hmac)
        records = [java.record_line(value=f"{mechanism}-{i}", partition=0) for i in range(2)]
        produced = java.produce(broker.bootstrap, unique_topic, records=records, props=props)
        read = java.consume(
            broker.bootstrap,
            unique_topic,
            offset_reset=str(produced.records[0]["offset"]),
            partition=0,
            max_records=2,
            props=props,
        )
        assert [r["value"] for r in read.records] == [f"{mechanism}-{i}" for i in range(2)]

    renewed = tokens_tool(
        broker.bootstrap, config, "--renew", "--hmac", hmac, "--renew-time-period", "3600000"
    )
    assert any("Completed renew operation" in line for line in renewed), renewed
    broker.restart()
    described = tokens_tool(
        broker.bootstrap, config, "--describe", "--owner-principal", "User:alice"
    )
    assert any(line.startswith(token_id) for line in described), described

    expired = tokens_tool(
        broker.bootstrap, config, "--expire", "--hmac", hmac, "--expiry-time-period", "-1"
    )
    assert any("Completed expire operation" in line for line in expired), expired
    refused = java.produce(
        broker.bootstrap,
        unique_topic,
        props=token_props("SCRAM-SHA-256", token_id, hmac),
        check=False,
    )
    assert refused.error_type == "SaslAuthenticationException", refused.describe()
    described = tokens_tool(
        broker.bootstrap, config, "--describe", "--owner-principal", "User:alice"
    )
    assert not any(line.startswith(token_id) for line in described), described
