"""testcontainers-python 4.15, testcontainers.community.kafka.KafkaContainer (made for
confluentinc/cp-kafka): the Odradek image in its default mode (ZooKeeper's, which
Odradek serves as one node) and with with_kraft(), which wants an image tag of 7.0.0 or
later; confluent-kafka produces, consumes as a group and commits and aborts
transactions. with_kraft() makes the node a cluster of one, which holds the transaction
log only with the replication factor set to 1, as on Kafka (the module sets it for the
offsets topic alone)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import tc_scenario
from helpers.containers import BROKER_IMAGE_CP_TAG
from testcontainers.community.kafka import KafkaContainer
from testcontainers.core.config import ConnectionMode, testcontainers_config

from bench.podman_api import PodmanService


@pytest.fixture
def testcontainers_settings(
    podman_service: PodmanService, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """The service's environment; testcontainers reads part of it when imported, so its
    configuration is set too."""
    for name, value in podman_service.client_env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(testcontainers_config, "tc_host_override", "localhost")
    monkeypatch.setattr(
        testcontainers_config, "connection_mode_override", ConnectionMode.docker_host
    )
    monkeypatch.setattr(testcontainers_config, "ryuk_disabled", True)
    yield


@pytest.mark.usefixtures("testcontainers_settings")
@pytest.mark.parametrize("kraft", [False, True], ids=["default", "with_kraft"])
def test_kafka_container_runs_the_odradek_image(
    odradek_image: str, container_label: str, kraft: bool
) -> None:
    key, _, value = container_label.partition("=")
    kafka = KafkaContainer(BROKER_IMAGE_CP_TAG if kraft else odradek_image)
    kafka.with_kwargs(labels={key: value})
    if kraft:
        kafka.with_kraft()
        kafka.with_env("KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR", "1")
        kafka.with_env("KAFKA_TRANSACTION_STATE_LOG_MIN_ISR", "1")
    began = time.monotonic()
    with kafka:
        ready = time.monotonic() - began
        bootstrap = kafka.get_bootstrap_server()
        assert bootstrap.startswith("localhost:")
        tc_scenario.check(tc_scenario.run(bootstrap))
        logs = b"".join(kafka.get_logs()).decode(errors="replace")
    wanted = "Kafka Server started" if kraft else "[KafkaServer id=1] started"
    assert wanted in logs
    print(f"ready in {ready:.2f} s")
