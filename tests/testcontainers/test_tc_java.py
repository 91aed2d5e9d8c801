"""Testcontainers for Java, org.testcontainers:testcontainers-kafka 2.0.5: its
KafkaContainer (made for apache/kafka) runs the Odradek image on a network of its own
with an extra listener (withListener, named TC-0), and the Apache Kafka Java client 4.4
produces, consumes as a group and commits and aborts transactions (java/)."""

from __future__ import annotations

import tc_scenario
from helpers.client_programs import run_json
from helpers.env import require_executable
from tc_programs import JAVA_DIR, JAVA_MAIN, java_classpath

from bench.podman_api import PodmanService


def test_kafka_container_runs_the_odradek_image(
    odradek_image: str, podman_service: PodmanService, container_label: str
) -> None:
    java = require_executable("java", "install a JDK 17")
    result = run_json(
        [
            java,
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp",
            java_classpath(),
            JAVA_MAIN,
            odradek_image,
            container_label,
        ],
        env=podman_service.client_env(),
        timeout=150,
        cwd=str(JAVA_DIR),
    )
    assert result["bootstrap"].startswith("localhost:"), result
    assert result["extra_listener_health"] == 0, result  # TC-0, asked inside the network
    tc_scenario.check(result)
