"""Testcontainers' Kafka modules (Java, Python, Go) run the Odradek image through
podman's Docker API: one API service and one image build for the session. Every
container started here carries the session's label and is removed at the end, even when
a program was stopped before it could remove its own."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.containers import BROKER_IMAGE, build_broker_image, remove_labelled_containers
from helpers.env import require_executable

from bench.podman_api import PodmanService


@pytest.fixture(scope="session")
def odradek_image() -> str:
    require_executable("podman", "make install-test installs it")
    build_broker_image()
    return BROKER_IMAGE


@pytest.fixture(scope="session")
def podman_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PodmanService]:
    require_executable("podman", "make install-test installs it")
    service = PodmanService(Path(tmp_path_factory.mktemp("podman")))
    service.start()
    yield service
    service.stop()


@pytest.fixture(scope="session")
def container_label(podman_service: PodmanService) -> Iterator[str]:
    """KEY=VALUE for the containers the session starts."""
    label = f"odradek.test.session={uuid.uuid4().hex[:12]}"
    yield label
    remove_labelled_containers(label)
