"""`odradek health`: is a broker answering? It sends ApiVersions, the request every
Kafka client sends first, and exits 0 if the answer is well formed and without error.
Made for container health checks, so it imports nothing heavy and never hangs."""

from __future__ import annotations

import argparse
import os
import socket
import struct
import sys
import time

API_VERSIONS = 18
CORRELATION_ID = 7
CLIENT_ID = b"odradek-health"
MAX_RESPONSE = 1 << 20


class Unhealthy(Exception):
    pass


def api_versions_request() -> bytes:
    """An ApiVersions v0 request frame (its body is empty)."""
    header = struct.pack(">hhih", API_VERSIONS, 0, CORRELATION_ID, len(CLIENT_ID)) + CLIENT_ID
    return struct.pack(">i", len(header)) + header


def check_api_versions_response(frame: bytes) -> int:
    """The number of APIs the broker lists; raises Unhealthy for anything else."""
    if len(frame) < 10:
        raise Unhealthy(f"short ApiVersions response ({len(frame)} bytes)")
    correlation_id, error_code, count = struct.unpack_from(">ihi", frame)
    if correlation_id != CORRELATION_ID:
        raise Unhealthy(f"response to another request (correlation id {correlation_id})")
    if error_code != 0:
        raise Unhealthy(f"ApiVersions answered error code {error_code}")
    if count <= 0:
        raise Unhealthy("the broker lists no APIs")
    return int(count)


def probe(host: str, port: int, timeout: float) -> int:
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(api_versions_request())
        size = struct.unpack(">i", _read(sock, 4))[0]
        if not 0 < size <= MAX_RESPONSE:
            raise Unhealthy(f"response size {size} is not plausible")
        return check_api_versions_response(_read(sock, size))


def _read(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise Unhealthy("the broker closed the connection")
        data += chunk
    return bytes(data)


def default_bootstrap(kafka_listeners: str, controller_listener_names: str = "") -> str:
    """Where a health check inside the broker's container finds it: the first listener
    that is not a controller's (the first of all on a controller of its own), on the
    loopback address when it listens on every interface."""
    controllers = {n.strip().upper() for n in controller_listener_names.split(",")}
    endpoints = [part.strip() for part in kafka_listeners.split(",") if "://" in part]
    brokers = [e for e in endpoints if e.rpartition("://")[0].upper() not in controllers]
    first = (brokers or endpoints or [""])[0]
    if not first:
        return "127.0.0.1:9092"
    host, _, port = first.rpartition("://")[2].rpartition(":")
    if host in ("", "0.0.0.0", "[::]"):
        host = "127.0.0.1"
    return f"{host}:{port}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="odradek health", description="Exit 0 if the broker answers ApiVersions."
    )
    parser.add_argument(
        "--bootstrap",
        default=None,
        help="HOST:PORT to ask (default: the first of KAFKA_LISTENERS that is not in "
        "KAFKA_CONTROLLER_LISTENER_NAMES, else 127.0.0.1:9092)",
    )
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds (2)")
    args = parser.parse_args(argv)
    if args.bootstrap is None:
        args.bootstrap = default_bootstrap(
            os.environ.get("KAFKA_LISTENERS", ""),
            os.environ.get("KAFKA_CONTROLLER_LISTENER_NAMES", ""),
        )
    host, _, port = args.bootstrap.rpartition(":")
    started = time.monotonic()
    try:
        apis = probe(host.strip("[]") or "127.0.0.1", int(port), args.timeout)
    except (OSError, ValueError, Unhealthy) as exc:
        print(f"unhealthy: {args.bootstrap}: {exc}", file=sys.stderr)
        return 1
    elapsed_ms = (time.monotonic() - started) * 1000
    print(f"healthy: {args.bootstrap} lists {apis} APIs ({elapsed_ms:.1f} ms)")
    return 0
