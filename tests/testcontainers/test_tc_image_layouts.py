"""The image's Kafka layouts under plain podman, as the modules and CI services use
them: Confluent's command starts the broker as process 1, which prints Kafka's ready
lines, answers apache/kafka's health command, leaves Confluent's scripts writable and
stops cleanly on SIGTERM."""

from __future__ import annotations

import time
import uuid

from helpers.containers import container_logs, run


def test_confluent_run_starts_the_broker_in_the_foreground(
    odradek_image: str, container_label: str
) -> None:
    name = f"odradek-layout-{uuid.uuid4().hex[:8]}"
    run(
        ["podman", "run", "-d", "--name", name, "--label", container_label]
        + ["-e", "KAFKA_NODE_ID=3", odradek_image, "/etc/confluent/docker/run"]
    )
    try:
        deadline = time.monotonic() + 60
        while "Kafka Server started" not in (logs := container_logs(name)):
            assert time.monotonic() < deadline, logs
            time.sleep(0.2)
        assert "[KafkaServer id=3] started" in logs
        assert "Transitioning from RECOVERY to RUNNING" in logs
        probe = "/opt/kafka/bin/kafka-broker-api-versions.sh --bootstrap-server localhost:9092"
        assert run(["podman", "exec", name, "sh", "-c", probe]).returncode == 0
        # the modules append to configure and overwrite ensure, as the container's user
        run(["podman", "exec", name, "sh", "-c", "echo true >> /etc/confluent/docker/configure"])
        run(["podman", "exec", name, "sh", "-c", "echo '' > /etc/confluent/docker/ensure"])
        # process 1 is the broker: podman stop's SIGTERM reaches it
        command = run(["podman", "exec", name, "cat", "/proc/1/cmdline"]).stdout.split("\0")
        assert command[1].endswith("/odradek") and "--environment" in command, command
        began = time.monotonic()
        run(["podman", "stop", "-t", "20", name])
        assert time.monotonic() - began < 10
        state = run(["podman", "inspect", name, "--format", "{{.State.ExitCode}}"]).stdout
        assert state.strip() == "0", container_logs(name)
    finally:
        run(["podman", "rm", "-f", "-v", name], check=False)
