"""The image's scripts (docker/image) run on the host, with an `odradek` that prints
its arguments: what the entrypoint starts or runs, what the Kafka tools stand-ins do.
tests/testcontainers runs them in the image, through Testcontainers' modules."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

IMAGE = Path(__file__).resolve().parents[2] / "docker" / "image"


@pytest.fixture
def fake_bin(tmp_path: Path) -> Path:
    odradek = tmp_path / "odradek"
    odradek.write_text('#!/bin/sh\necho "odradek $*"\n')
    odradek.chmod(0o755)
    (tmp_path / "odradek-entrypoint").symlink_to(IMAGE / "odradek-entrypoint")
    return tmp_path


def run(fake_bin: Path, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{fake_bin}:{os.environ['PATH']}"}
    return subprocess.run(
        [str(IMAGE / script), *args], env=env, capture_output=True, text=True, timeout=30
    )


BROKER = "odradek --environment --data-dir /var/lib/odradek --kafka-ready-lines"


def test_without_arguments_or_with_options_the_entrypoint_starts_the_broker(
    fake_bin: Path,
) -> None:
    assert run(fake_bin, "odradek-entrypoint").stdout == f"{BROKER}\n"
    options = run(fake_bin, "odradek-entrypoint", "--override", "num.partitions=3")
    assert options.stdout == f"{BROKER} --override num.partitions=3\n"
    # apache/kafka's command starts the same broker
    assert run(fake_bin, "kafka-run").stdout == f"{BROKER}\n"


def test_other_arguments_run_as_a_command(fake_bin: Path) -> None:
    # as Testcontainers' Java and Python modules give them
    done = run(fake_bin, "odradek-entrypoint", "sh", "-c", "echo started by $0; exit 3")
    assert (done.returncode, done.stdout) == (3, "started by sh\n")
    assert run(fake_bin, "odradek-entrypoint", "odradek", "health").stdout == "odradek health\n"


def test_kafka_broker_api_versions_asks_the_first_bootstrap_server(fake_bin: Path) -> None:
    script = "kafka-broker-api-versions.sh"
    done = run(fake_bin, script, "--bootstrap-server", "localhost:9092,other:9092")
    assert done.stdout == "odradek health --bootstrap localhost:9092\n"
    done = run(fake_bin, script, "--command-config", "x", "--bootstrap-server=kafka:29092")
    assert done.stdout == "odradek health --bootstrap kafka:29092\n"
    assert run(fake_bin, script).stdout == "odradek health\n"


def test_kafka_storage_formats_nothing_and_makes_uuids(fake_bin: Path) -> None:
    formatted = run(fake_bin, "kafka-storage", "format", "--ignore-formatted", "-t", "x", "-c", "f")
    assert formatted.returncode == 0
    first, second = (run(fake_bin, "kafka-storage", "random-uuid").stdout for _ in range(2))
    assert len(first.strip()) == 22 and first != second
    assert run(fake_bin, "kafka-storage", "info").returncode == 1


def test_the_confluent_scripts_are_executable_and_bash_config_is_sourced() -> None:
    for name in ("configure", "ensure", "launch", "run"):
        assert os.access(IMAGE / "confluent" / name, os.X_OK), name
    done = subprocess.run(
        ["sh", "-c", f". {IMAGE / 'confluent' / 'bash-config'} && echo sourced"],
        capture_output=True,
        text=True,
    )
    assert done.stdout == "sourced\n"
