"""The environments Testcontainers' Kafka modules give a Kafka image (Java's
org.testcontainers.kafka.KafkaContainer 2.0, Python's testcontainers 4.15, Go's
modules/kafka v0.44), read as the Odradek image reads them: listener names with a dash,
and KAFKA_REST_* variables, which are the REST Proxy's and not the broker's."""

from __future__ import annotations

import os
import re
from datetime import datetime
from pathlib import Path

import pytest

from odradek.broker import cli
from odradek.broker.settings.config import is_kafka_setting
from odradek.broker.settings.listeners import ListenerError, parse_protocol_map, resolve
from odradek.broker.settings.sources import settings_from_environment

# As KafkaHelper.envVars() and KafkaContainer.containerIsStarting() set them, with one
# withListener("kafka:19092"), which adds TC-0
JAVA = {
    "CLUSTER_ID": "4L6g3nShT-eMCtK--X86sw",
    "KAFKA_LISTENERS": "BROKER://0.0.0.0:9093,TC-0://0.0.0.0:19092,"
    "CONTROLLER://0.0.0.0:9094,PLAINTEXT://0.0.0.0:9092",
    "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://localhost:40123,BROKER://21c2d8ecdec8:9093,"
    "TC-0://kafka:19092",
    "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "BROKER:PLAINTEXT,PLAINTEXT:PLAINTEXT,"
    "CONTROLLER:PLAINTEXT,TC-0:PLAINTEXT",
    "KAFKA_INTER_BROKER_LISTENER_NAME": "BROKER",
    "KAFKA_PROCESS_ROLES": "broker,controller",
    "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
    "KAFKA_NODE_ID": "1",
    "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9094",
    "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
    "KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS": "1",
    "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
    "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
    "KAFKA_LOG_FLUSH_INTERVAL_MESSAGES": "9223372036854775807",
    "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
}

# testcontainers.community.kafka.KafkaContainer, ZooKeeper mode (its default)
PYTHON = {
    "KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9093,BROKER://0.0.0.0:9092",
    "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://localhost:40123,BROKER://10.88.0.7:9092",
    "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "BROKER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
    "KAFKA_INTER_BROKER_LISTENER_NAME": "BROKER",
    "KAFKA_BROKER_ID": "1",
    "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
    "KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS": "1",
    "KAFKA_LOG_FLUSH_INTERVAL_MESSAGES": "10000000",
    "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
    "KAFKA_ZOOKEEPER_CONNECT": "localhost:2181",
}

# The same with_kraft()
PYTHON_KRAFT = {
    **{k: v for k, v in PYTHON.items() if k != "KAFKA_ZOOKEEPER_CONNECT"},
    "CLUSTER_ID": "MkU3OEVBNTcwNTJENDM2Qk",
    "KAFKA_NODE_ID": "1",
    "KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9093,BROKER://0.0.0.0:9092,CONTROLLER://0.0.0.0:9094",
    "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "BROKER:PLAINTEXT,PLAINTEXT:PLAINTEXT,"
    "CONTROLLER:PLAINTEXT",
    "KAFKA_PROCESS_ROLES": "broker,controller",
    "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9094",
    "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
}

# testcontainers-go modules/kafka
GO = {
    **PYTHON_KRAFT,
    "KAFKA_REST_BOOTSTRAP_SERVERS": "PLAINTEXT://0.0.0.0:9093,BROKER://0.0.0.0:9092,"
    "CONTROLLER://0.0.0.0:9094",
    "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://localhost:40123,BROKER://21c2d8ecdec8:9092",
    "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
    "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
    "KAFKA_LOG_FLUSH_INTERVAL_MESSAGES": "9223372036854775807",
}
del GO["CLUSTER_ID"]


@pytest.mark.parametrize(
    ("environment", "clients_port", "internal"),
    [
        (JAVA, 9092, ("BROKER", "21c2d8ecdec8", 9093)),
        (PYTHON, 9093, ("BROKER", "10.88.0.7", 9092)),
        (PYTHON_KRAFT, 9093, ("BROKER", "10.88.0.7", 9092)),
        (GO, 9093, ("BROKER", "21c2d8ecdec8", 9092)),
    ],
    ids=["java", "python", "python-kraft", "go"],
)
def test_each_modules_environment_starts_a_broker(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    environment: dict[str, str],
    clients_port: int,
    internal: tuple[str, str, int],
) -> None:
    for name in [n for n in os.environ if n.startswith(("KAFKA_", "CLUSTER_ID"))]:
        monkeypatch.delenv(name)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    config = cli.build_config(cli.parse_args(["--environment", "--data-dir", str(tmp_path)]))
    assert config.node_id == 1
    listeners = {x.name: x for x in config.resolved_listeners()}
    plaintext = listeners["PLAINTEXT"]
    assert (plaintext.port, plaintext.advertised_host, plaintext.advertised_port) == (
        clients_port,
        "localhost",
        40123,
    )
    name, host, port = internal
    assert (listeners[name].advertised_host, listeners[name].advertised_port) == (host, port)
    assert not any(key.startswith("rest.") for key in config.raw)


def test_a_listener_name_with_a_dash_as_javas_with_listener_adds() -> None:
    listeners = resolve(
        "PLAINTEXT://:9092,TC-0://:19092,tc_1.x://:19093",
        "PLAINTEXT://localhost:9092,tc-0://kafka:19092,TC_1.X://other:19093",
        "PLAINTEXT:PLAINTEXT,TC-0:PLAINTEXT,TC_1.X:PLAINTEXT",
    )
    assert [(x.name, x.advertised_host, x.advertised_port) for x in listeners] == [
        ("PLAINTEXT", "localhost", 9092),
        ("TC-0", "kafka", 19092),
        ("TC_1.X", "other", 19093),
    ]
    assert is_kafka_setting("listener.name.tc-0.max.connections")
    assert not is_kafka_setting("listener.name.tc-0.no.such.setting")


def test_listener_names_need_something_before_the_scheme_separator() -> None:
    with pytest.raises(ListenerError, match="NAME://host:port"):
        resolve("://:9092", None, "PLAINTEXT:PLAINTEXT")


def test_the_protocol_map_splits_at_the_last_colon_as_kafka() -> None:
    assert parse_protocol_map("A:B:PLAINTEXT, TC-0:SSL") == {"A:B": "PLAINTEXT", "TC-0": "SSL"}


def test_rest_proxy_variables_are_not_broker_settings() -> None:
    settings = settings_from_environment(
        {
            "KAFKA_REST_BOOTSTRAP_SERVERS": "PLAINTEXT://0.0.0.0:9093",
            "KAFKA_REST_HOST_NAME": "rest-proxy",
            "KAFKA_NUM_PARTITIONS": "3",
        }
    )
    assert settings == {"num.partitions": "3"}
    # alone, they leave the image's defaults in place
    assert settings_from_environment({"KAFKA_REST_LISTENERS": "http://0.0.0.0:8082"}) == {
        "listeners": "PLAINTEXT://:9092",
        "advertised.listeners": "PLAINTEXT://localhost:9092",
    }


def test_the_ready_lines_hold_what_each_module_waits_for() -> None:
    text = cli.kafka_ready_lines(1, datetime(2026, 11, 29, 10, 0, 0, 123456))
    lines = text.splitlines()
    assert len(lines) == 3
    assert all(line.startswith("[2026-11-29 10:00:00,123] INFO [") for line in lines)
    # the regular expressions of the Java and Go modules, Python's, Python's with_kraft()
    assert re.search(r".*Transitioning from RECOVERY to RUNNING.*", text)
    assert re.search(r".*\[KafkaServer id=\d+\] started.*", text)
    assert re.search(r".*Kafka Server started.*", text)
    # a controller of its own logs Kafka's server line alone
    controller = cli.kafka_ready_lines(1, datetime(2026, 11, 29), broker=False)
    assert "Kafka Server started" in controller and "RUNNING" not in controller
    assert cli.parse_args(["--kafka-ready-lines"]).kafka_ready_lines
    assert not cli.parse_args([]).kafka_ready_lines
