"""Prometheus metrics, served on `--metrics-port` at /metrics."""

from __future__ import annotations

import functools
from typing import Any

from prometheus_client import Counter, Gauge, Histogram, start_http_server

requests = Counter("odradek_requests_total", "Requests handled", ["api"])
latency = Histogram(
    "odradek_request_latency_seconds",
    "Time to handle a request",
    ["api"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5),
)
bytes_in = Counter("odradek_bytes_in_total", "Record batch bytes appended")
bytes_out = Counter("odradek_bytes_out_total", "Response bytes sent")
connections = Gauge("odradek_connections", "Open client connections")
partitions = Gauge("odradek_partitions", "Partitions hosted")
log_size = Gauge("odradek_log_size_bytes", "Bytes in all partition logs")


def serve(host: str, port: int) -> None:
    start_http_server(port, addr=host)


@functools.cache
def for_api(api: str) -> tuple[Any, Any]:
    """The request counter and latency histogram of one API (label lookups are not free)."""
    return requests.labels(api), latency.labels(api)
