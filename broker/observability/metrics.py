"""Prometheus metrics, served on `--metrics-port` at /metrics."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar

from prometheus_client import REGISTRY, Counter, Gauge, start_http_server
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)


class RequestStats(Collector):
    """Requests handled and their latency, per API (odradek_requests_total and the
    odradek_request_latency_seconds histogram), and bytes in and out. Kept as plain
    numbers that the event loop adds to (a prometheus_client child takes a lock per
    update, which every request would pay) and read when scraped."""

    def __init__(self) -> None:
        self.sums: dict[str, float] = {}
        self.buckets: dict[str, list[int]] = {}
        self.bytes_in = 0  # record batch bytes appended
        self.bytes_out = 0  # response bytes sent

    def observe(self, api: str, seconds: float) -> None:
        counts = self.buckets.get(api)
        if counts is None:
            counts = self.buckets[api] = [0] * (len(LATENCY_BUCKETS) + 1)
            self.sums[api] = 0.0
        self.sums[api] += seconds
        counts[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1

    def collect(self) -> Iterator[Metric]:
        total = CounterMetricFamily("odradek_requests", "Requests handled", labels=["api"])
        latency = HistogramMetricFamily(
            "odradek_request_latency_seconds", "Time to handle a request", labels=["api"]
        )
        for api, counts in list(self.buckets.items()):
            total.add_metric([api], sum(counts))
            cumulative, so_far = [], 0
            for bound, count in zip((*LATENCY_BUCKETS, float("inf")), counts, strict=True):
                so_far += count
                cumulative.append((floatToGoString(bound), so_far))
            latency.add_metric([api], cumulative, sum_value=self.sums[api])
        yield total
        yield latency
        yield CounterMetricFamily(
            "odradek_bytes_in", "Record batch bytes appended", value=self.bytes_in
        )
        yield CounterMetricFamily("odradek_bytes_out", "Response bytes sent", value=self.bytes_out)


requests = RequestStats()
REGISTRY.register(requests)
connections = Gauge("odradek_connections", "Open client connections")
partitions = Gauge("odradek_partitions", "Partitions hosted")
log_size = Gauge("odradek_log_size_bytes", "Bytes in all partition logs")

# share groups (KIP-932)
share_acquired = Counter(
    "odradek_share_records_acquired_total", "Records handed to share-group members"
)
share_acknowledged = Counter(
    "odradek_share_records_acknowledged_total",
    "Records acknowledged by share-group members, by type (accept, release, reject)",
    ["type"],
)
T = TypeVar("T")
ACKNOWLEDGE_TYPES = {1: "accept", 2: "release", 3: "reject"}


def count_acknowledgements(batches: list[tuple[int, int, tuple[int, ...]]]) -> None:
    """Count the records of accepted acknowledgement batches by type (one type for the
    whole batch, or one per offset)."""
    for first, last, types in batches:
        if len(types) == 1:
            name = ACKNOWLEDGE_TYPES.get(types[0])
            if name is not None:
                share_acknowledged.labels(name).inc(last - first + 1)
            continue
        for kind in types:
            name = ACKNOWLEDGE_TYPES.get(kind)
            if name is not None:
                share_acknowledged.labels(name).inc()


class StateCollector(Collector):
    """Metrics read from the broker's state when scraped. The state belongs to the event
    loop's thread and the scrape runs on another: a read that meets a dict changing
    under it is tried again."""

    def __init__(
        self,
        gauges: Mapping[str, tuple[str, Callable[[], float]]],
        counters: Mapping[str, tuple[str, Callable[[], float]]],
        by_label: Mapping[str, tuple[str, str, Callable[[], Mapping[str, int]]]],
    ) -> None:
        self.gauges, self.counters, self.by_label = gauges, counters, by_label

    def collect(self) -> Iterator[Metric]:
        for name, (doc, read) in self.gauges.items():
            yield GaugeMetricFamily(name, doc, value=_read(read, 0.0))
        for name, (doc, read) in self.counters.items():
            yield CounterMetricFamily(name, doc, value=_read(read, 0.0))
        for name, (doc, label, read_map) in self.by_label.items():
            family = GaugeMetricFamily(name, doc, labels=[label])
            empty: Mapping[str, int] = {}
            for value, count in _read(read_map, empty).items():
                family.add_metric([value], count)
            yield family


def _read(read: Callable[[], T], default: T) -> T:
    for _ in range(5):
        try:
            return read()
        except RuntimeError:  # changed size during iteration
            continue
    return default


_state_collector: list[Collector] = []


def read_state_with(collector: Collector) -> None:
    """Serve `collector`'s metrics in place of any earlier one (one broker per process,
    but a process may start one again)."""
    for old in _state_collector:
        REGISTRY.unregister(old)
    _state_collector[:] = [collector]
    REGISTRY.register(collector)


def serve(host: str, port: int) -> None:
    start_http_server(port, addr=host)
