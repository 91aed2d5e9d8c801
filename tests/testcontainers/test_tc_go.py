"""testcontainers-go, modules/kafka v0.44.0 (made for confluentinc/confluent-local): its
Run starts the Odradek image with its own entrypoint and start script, and franz-go
produces, consumes as a group and commits and aborts transactions (go/)."""

from __future__ import annotations

import tc_scenario
from helpers.client_programs import run_json
from tc_programs import go_binary

from bench.podman_api import PodmanService


def test_kafka_module_runs_the_odradek_image(
    odradek_image: str, podman_service: PodmanService, container_label: str
) -> None:
    result = run_json(
        [str(go_binary()), "-image", odradek_image, "-label", container_label],
        env=podman_service.client_env(),
        timeout=150,
    )
    assert result["bootstrap"].startswith("localhost:"), result
    tc_scenario.check(result)
