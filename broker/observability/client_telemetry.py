"""Client telemetry (KIP-714): which metrics each client instance is asked to push and
how often, from the client-metrics subscriptions that match it, and the metrics pushed,
kept for Prometheus (/metrics) labelled by client_id and client_instance_id.

As Kafka 4.4's ClientMetricsManager:
- A client instance matches a subscription when every `match` pattern matches the
  whole of its attribute (client_instance_id, client_id, client_software_name and
  _version, client_source_address and _port). Its metrics are the union of its
  subscriptions' ("*" alone when one has "*"), its interval the smallest of theirs
  (300000 ms when none matches); its subscription id a CRC32C of those (the metrics
  in Java HashSet order, then the interval) XOR the Java hash of its id. A change of
  the subscriptions re-evaluates an instance on its next request, which then starts
  afresh: it may ask for its new subscription at once.
- A GetTelemetrySubscriptions sooner than the interval after the instance's last
  request, or a push sooner than the interval after its last push (a push right after
  a GetTelemetrySubscriptions is always in time), is THROTTLING_QUOTA_EXCEEDED.
- A push is checked for, in order: an earlier terminating push (INVALID_REQUEST), its
  time (above; a terminating push is never too early), its subscription id
  (UNKNOWN_SUBSCRIPTION_ID), its compression type (UNSUPPORTED_COMPRESSION_TYPE) and
  its size against telemetry.max.bytes (TELEMETRY_TOO_LARGE).
- Instances unheard of for max(60 s, 3 intervals) are forgotten, with their metrics;
  beyond 16384 instances, the least recently heard of.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from crc32c import crc32c
from prometheus_client import REGISTRY
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from odradek.broker.observability.otlp import Point
from odradek.broker.settings.client_metrics import DEFAULTS, INTERVAL_MS, ClientMetricsStore
from odradek.coordinator.partitioning import java_string_hash
from odradek.protocol.errors import ErrorCode

DEFAULT_INTERVAL_MS = int(DEFAULTS[INTERVAL_MS])
CACHE_EXPIRY_MS = 60000
ACCEPTED_COMPRESSION = (4, 3, 1, 2)  # zstd, lz4, gzip, snappy: Kafka's order
KNOWN_COMPRESSION = range(5)
MAX_SERIES = 20000  # pushed samples kept in all
MAX_INSTANCES = 16384  # as Kafka's cache of client instances: the least recent go first


class TelemetryRefusal(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def java_hash_set_order(items: list[str]) -> list[str]:
    """The iteration order of a java.util.HashSet the items were added to, in order."""
    capacity = 16
    while len(items) > capacity * 0.75:
        capacity *= 2

    def bucket(item: str) -> int:
        h = java_string_hash(item) & 0xFFFFFFFF  # as Java's >>> sees it
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(dict.fromkeys(items), key=bucket)


def subscription_id(metrics: list[str], interval_ms: int, instance_id: uuid.UUID) -> int:
    text = "[" + ", ".join(metrics) + "]" + str(interval_ms)
    crc = crc32c(text.encode())
    bits = instance_id.int
    hilo = (bits >> 64) ^ (bits & 0xFFFFFFFFFFFFFFFF)
    uuid_hash = ((hilo >> 32) ^ hilo) & 0xFFFFFFFF
    value = crc ^ uuid_hash
    return value - (1 << 32) if value >= 1 << 31 else value


@dataclass
class Instance:
    instance_id: uuid.UUID
    attributes: dict[str, str]
    version: int
    metrics: list[str]
    interval_ms: int
    subscription_id: int
    last_get_ms: int = 0
    last_push_ms: int = 0
    last_seen_ms: int = 0
    terminating: bool = False
    counters: dict[tuple[str, tuple[tuple[str, str], ...]], float] = field(default_factory=dict)
    gauges: dict[tuple[str, tuple[tuple[str, str], ...]], float] = field(default_factory=dict)


class ClientTelemetry(Collector):
    def __init__(self, store: ClientMetricsStore, max_bytes: int) -> None:
        self.store = store
        self.max_bytes = max_bytes
        self.instances: dict[uuid.UUID, Instance] = {}  # the least recently heard of first
        self._swept_ms = 0

    def instance(
        self, instance_id: uuid.UUID, attributes: Mapping[str, str], now_ms: int
    ) -> Instance:
        self._forget_quiet(now_ms)
        found = self.instances.pop(instance_id, None)
        if found is None or found.version < self.store.version:
            known = dict(attributes) if found is None else found.attributes
            known["client_instance_id"] = str(instance_id)
            fresh = self._evaluate(instance_id, known)
            if found is not None:  # starts afresh (may ask at once), but for its metrics
                fresh.counters, fresh.gauges = found.counters, found.gauges
            found = fresh
        self.instances[instance_id] = found
        found.last_seen_ms = now_ms
        while len(self.instances) > MAX_INSTANCES:
            del self.instances[next(iter(self.instances))]
        return found

    def _evaluate(self, instance_id: uuid.UUID, attributes: dict[str, str]) -> Instance:
        metrics: list[str] = []
        interval = DEFAULT_INTERVAL_MS
        everything = False
        for subscription in self.store.subscriptions():
            if subscription.matches(attributes):
                everything = everything or "*" in subscription.metrics
                metrics += subscription.metrics
                interval = min(interval, subscription.interval_ms)
        ordered = ["*"] if everything else java_hash_set_order(metrics)
        return Instance(
            instance_id,
            attributes,
            self.store.version,
            ordered,
            interval,
            subscription_id(ordered, interval, instance_id),
        )

    def _forget_quiet(self, now_ms: int) -> None:
        if now_ms - self._swept_ms < 1000:
            return
        self._swept_ms = now_ms
        quiet = [
            key
            for key, instance in self.instances.items()
            if now_ms - instance.last_seen_ms > max(CACHE_EXPIRY_MS, 3 * instance.interval_ms)
        ]
        for key in quiet:
            del self.instances[key]

    def check_get(self, instance: Instance, now_ms: int) -> None:
        if now_ms - max(instance.last_get_ms, instance.last_push_ms) < instance.interval_ms:
            raise TelemetryRefusal(
                ErrorCode.throttling_quota_exceeded,
                f"Request from the client [{instance.instance_id}] arrived before the next "
                "push interval time",
            )
        instance.last_get_ms = now_ms

    def check_push(
        self,
        instance: Instance,
        now_ms: int,
        terminating: bool,
        subscription: int,
        compression: int,
        size: int,
    ) -> None:
        try:
            self._check_push(instance, now_ms, terminating, subscription, compression, size)
        finally:
            instance.terminating = instance.terminating or terminating

    def _check_push(
        self,
        instance: Instance,
        now_ms: int,
        terminating: bool,
        subscription: int,
        compression: int,
        size: int,
    ) -> None:
        client = instance.instance_id
        if instance.terminating:
            raise TelemetryRefusal(
                ErrorCode.invalid_request,
                f"Client [{client}] sent the previous request with state terminating to TRUE, "
                "can not acceptany requests after that",
            )
        in_time = instance.last_get_ms > instance.last_push_ms or (
            now_ms - instance.last_push_ms >= instance.interval_ms
        )
        if in_time:
            instance.last_push_ms = now_ms
        elif not terminating:
            raise TelemetryRefusal(
                ErrorCode.throttling_quota_exceeded,
                f"Request from the client [{client}] arrived before the next push interval time",
            )
        if subscription != instance.subscription_id:
            raise TelemetryRefusal(
                ErrorCode.unknown_subscription_id,
                f"Unknown client subscription id for the client [{client}]",
            )
        if compression not in KNOWN_COMPRESSION:
            raise TelemetryRefusal(
                ErrorCode.unsupported_compression_type,
                f"Unknown compression type [{compression}] is received in telemetry request "
                f"from [{client}]",
            )
        if size > self.max_bytes:
            raise TelemetryRefusal(
                ErrorCode.telemetry_too_large,
                f"Telemetry request from [{client}] is larger than the maximum allowed size "
                f"[{self.max_bytes}]",
            )

    def record(self, instance: Instance, points: list[Point]) -> None:
        """Keep the pushed samples: gauges as last pushed, monotonic sums (deltas, as
        asked) added up."""
        series = sum(len(i.counters) + len(i.gauges) for i in self.instances.values())
        for point in points:
            key = (point.metric, point.attributes)
            kept = instance.counters if point.monotonic_sum else instance.gauges
            if key not in kept and series >= MAX_SERIES:
                continue
            series += key not in kept
            if point.monotonic_sum:
                kept[key] = kept.get(key, 0.0) + point.value
            else:
                kept[key] = point.value

    def collect(self) -> Iterator[Metric]:
        gauges: dict[str, list[tuple[dict[str, str], float]]] = {}
        counters: dict[str, list[tuple[dict[str, str], float]]] = {}
        for instance in list(self.instances.values()):
            client = {
                "client_id": instance.attributes.get("client_id", ""),
                "client_instance_id": str(instance.instance_id),
            }
            for kept, families in ((instance.gauges, gauges), (instance.counters, counters)):
                for (metric, attributes), value in list(kept.items()):
                    labels = {_label(k): v for k, v in attributes} | client
                    families.setdefault(_metric_name(metric), []).append((labels, value))
        for name, samples in gauges.items():
            yield _family(GaugeMetricFamily, name, samples)
        for name, samples in counters.items():
            yield _family(CounterMetricFamily, name, samples)


def _metric_name(name: str) -> str:
    cleaned = "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in name)
    return cleaned if cleaned[:1].isalpha() else "_" + cleaned


def _label(name: str) -> str:
    cleaned = _metric_name(name)
    return "attr" + cleaned if cleaned.startswith("__") else cleaned


def _family(
    kind: type[GaugeMetricFamily] | type[CounterMetricFamily],
    name: str,
    samples: list[tuple[dict[str, str], float]],
) -> Metric:
    keys = sorted({key for labels, _value in samples for key in labels})
    family = kind(name, "pushed by clients (KIP-714)", labels=keys)
    for labels, value in samples:
        family.add_metric([labels.get(key, "") for key in keys], value)
    return family


_registered: list[ClientTelemetry] = []


def serve_on_metrics(telemetry: ClientTelemetry) -> None:
    """Show this broker's pushed metrics on /metrics (the last broker made, in a
    process that makes several)."""
    for old in _registered:
        REGISTRY.unregister(old)
    _registered[:] = [telemetry]
    REGISTRY.register(telemetry)
