"""podman's Docker-compatible API on a socket of its own, for Testcontainers' libraries
(which talk to a Docker daemon): the session service of tests/testcontainers and of
bench/testcontainers_start.py. Nothing here imports the tests."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# podman's settings for this host (runc, ulimits), as the Makefile exports them
CONTAINERS_CONF = REPO / "docker" / "podman" / "containers.conf"


class PodmanService:
    """podman's Docker-compatible API on a socket of its own (`podman system service`),
    for Testcontainers' libraries, which talk to a Docker daemon. The socket's name ends
    in podman.sock: testcontainers-go then uses podman's default network."""

    def __init__(self, directory: Path) -> None:
        self.socket = directory / "podman.sock"
        self.log = directory / "podman-service.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def docker_host(self) -> str:
        return f"unix://{self.socket}"

    def start(self, timeout: float = 30) -> None:
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                ["podman", "system", "service", "--time=0", self.docker_host],
                env={**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)},
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + timeout
        while not self.answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"podman system service did not answer\n{self.log_tail()}")
            time.sleep(0.1)

    def answers(self) -> bool:
        """GET /_ping answers 200."""
        try:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.settimeout(5)
                sock.connect(str(self.socket))
                sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: podman\r\n\r\n")
                return sock.recv(64).split(b" ")[1:2] == [b"200"]
        except OSError:
            return False

    def client_env(self) -> dict[str, str]:
        """The environment Testcontainers' libraries need to use this service from this
        host: the socket; localhost for mapped ports (the host has /.dockerenv, so they
        would take themselves to be in a container and use the gateway); no Ryuk, the
        reaper container, which no registry here can give."""
        return {
            **os.environ,
            "CONTAINERS_CONF": str(CONTAINERS_CONF),
            "DOCKER_HOST": self.docker_host,
            "TESTCONTAINERS_HOST_OVERRIDE": "localhost",
            "TESTCONTAINERS_RYUK_DISABLED": "true",
            "TESTCONTAINERS_CONNECTION_MODE": "docker_host",  # Python's
        }

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def log_tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return ""
