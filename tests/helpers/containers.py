"""Podman and podman-compose for the image tests: building the images (once per
session), running compose, removing a session's containers."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from helpers.broker import REPO_ROOT

DOCKER_DIR = REPO_ROOT / "docker"
CONTAINERS_CONF = DOCKER_DIR / "podman" / "containers.conf"
BASE_IMAGE = "localhost/odradek-python-base:bookworm"
BROKER_IMAGE = "localhost/odradek:test"
APP_IMAGE = "localhost/odradek-example-app:test"
# The broker image again, under a tag that reads as a Confluent Platform version: the
# Python Testcontainers module's with_kraft() accepts images tagged 7.0.0 or later only
BROKER_IMAGE_CP_TAG = "localhost/odradek:7.6.0"
# pip inside `podman build` may sit behind a TLS-inspecting proxy whose CA only the
# host's bundle holds: mounted for the build, never copied into an image.
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


def podman_env() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)}


def run(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        list(command),
        cwd=REPO_ROOT,
        env=dict(env) if env is not None else podman_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and done.returncode != 0:
        raise AssertionError(
            f"{' '.join(command)} exited with {done.returncode}\n"
            f"--- stdout ---\n{done.stdout[-4000:]}\n--- stderr ---\n{done.stderr[-4000:]}"
        )
    return done


def _build_command() -> list[str]:
    ca: list[str] = []
    if HOST_CA_BUNDLE.exists():
        ca = [
            "--build-arg",
            f"PIP_CERT={HOST_CA_BUNDLE}",
            "-v",
            f"{HOST_CA_BUNDLE}:{HOST_CA_BUNDLE}:ro",
        ]
    return ["podman", "build", "--format", "docker", "--build-arg", f"BASE={BASE_IMAGE}", *ca]


@contextlib.contextmanager
def one_build_at_a_time() -> Iterator[None]:
    """Test processes running side by side (pytest -n) build the images in turn: the
    second build finds the first one's layers."""
    with open(Path(tempfile.gettempdir()) / "odradek-image-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@functools.cache
def build_broker_image() -> None:
    """The base image (once per machine), then the broker image, once per session."""
    with one_build_at_a_time():
        run([str(DOCKER_DIR / "build-base-image.sh"), BASE_IMAGE], timeout=600)
        run([*_build_command(), "-f", "docker/Dockerfile", "-t", BROKER_IMAGE, "."], timeout=600)
        run(["podman", "tag", BROKER_IMAGE, BROKER_IMAGE_CP_TAG])


@functools.cache
def build_images() -> None:
    """The broker image, then the example application's."""
    build_broker_image()
    with one_build_at_a_time():
        run([*_build_command(), "-t", APP_IMAGE, "docker/example-app"], timeout=600)


def podman_compose() -> str:
    beside_python = Path(sys.executable).parent / "podman-compose"
    found = str(beside_python) if beside_python.exists() else shutil.which("podman-compose")
    if found is None:
        raise AssertionError("podman-compose is not installed (make install-test installs it)")
    return found


def passes_health_check(container: str) -> bool:
    return run(["podman", "healthcheck", "run", container], check=False, timeout=30).returncode == 0


def container_logs(container: str) -> str:
    done = run(["podman", "logs", container], check=False)
    return done.stdout + done.stderr


class _Project:
    """A compose project: `self(...)` runs podman-compose on its files."""

    def __init__(self, project: str, files: Sequence[str], env: dict[str, str]) -> None:
        self.project = project
        self.files = [part for name in files for part in ("-f", name)]
        self.env = {**podman_env(), "ODRADEK_IMAGE": BROKER_IMAGE, **env}

    def __call__(
        self, *args: str, check: bool = True, timeout: float = 180
    ) -> subprocess.CompletedProcess[str]:
        command = [podman_compose(), "-p", self.project, *self.files, *args]
        return run(command, env=self.env, timeout=timeout, check=check)


class Compose(_Project):
    """One compose project of docker/compose.yaml (+ the example applications)."""

    def __init__(self, project: str, external_port: int) -> None:
        super().__init__(
            project,
            ["docker/compose.yaml", "docker/compose.example.yaml"],
            {"ODRADEK_EXAMPLE_IMAGE": APP_IMAGE, "ODRADEK_EXTERNAL_PORT": str(external_port)},
        )
        self.external_port = external_port

    @property
    def bootstrap(self) -> str:
        return f"localhost:{self.external_port}"

    @property
    def broker_container(self) -> str:
        return f"{self.project}_kafka_1"

    def wait_healthy(self, timeout: float = 30) -> float:
        """Seconds until the image's health check passes."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if passes_health_check(self.broker_container):
                return time.monotonic() - started
            time.sleep(0.1)
        logs = self.logs()
        raise AssertionError(f"{self.broker_container} not healthy in {timeout} s\n{logs}")

    def state(self) -> tuple[str, int]:
        done = run(
            [
                "podman",
                "inspect",
                self.broker_container,
                "--format",
                "{{.State.Status}} {{.State.ExitCode}}",
            ]
        )
        status, code = done.stdout.split()
        return status, int(code)

    def logs(self) -> str:
        return container_logs(self.broker_container)


class ClusterCompose(_Project):
    """One compose project of docker/compose.cluster.yaml: three controllers, three
    brokers."""

    CONTROLLERS = ("controller-1", "controller-2", "controller-3")  # node ids 1, 2, 3
    BROKERS = ("kafka-1", "kafka-2", "kafka-3")  # node ids 4, 5, 6

    def __init__(self, project: str, ports: Sequence[int], session_timeout_ms: int) -> None:
        super().__init__(
            project,
            ["docker/compose.cluster.yaml"],
            {
                "ODRADEK_SESSION_TIMEOUT_MS": str(session_timeout_ms),
                # heartbeats well inside the session, as Kafka's defaults have them
                # (2 s in 9 s): at the session's length every beat would come too late
                "ODRADEK_HEARTBEAT_INTERVAL_MS": str(max(session_timeout_ms // 8, 50)),
                **{f"ODRADEK_PORT_{i + 1}": str(port) for i, port in enumerate(ports)},
            },
        )
        self.ports = list(ports)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"localhost:{port}" for port in self.ports)

    def container(self, service: str) -> str:
        return f"{self.project}_{service}_1"

    def service_of(self, node_id: int) -> str:
        return (self.CONTROLLERS + self.BROKERS)[node_id - 1]

    def wait_healthy(self, services: Sequence[str], timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        for service in services:
            while not passes_health_check(self.container(service)):
                if time.monotonic() > deadline:
                    raise AssertionError(f"{service} not healthy\n{self.logs(service)}")
                time.sleep(0.2)

    def logs(self, *services: str) -> str:
        """The services' logs (all of them by default), for a failure's message."""
        return "\n".join(
            f"--- {service}\n{container_logs(self.container(service))}"
            for service in services or (*self.CONTROLLERS, *self.BROKERS)
        )


def remove_labelled_containers(label: str) -> None:
    """Remove the containers with `label` (KEY=VALUE), running or not, with their volumes."""
    listed = run(["podman", "ps", "-a", "-q", "--filter", f"label={label}"], check=False)
    ids = listed.stdout.split()
    if ids:
        run(["podman", "rm", "-f", "-v", *ids], check=False)
