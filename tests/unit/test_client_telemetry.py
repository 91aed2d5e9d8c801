"""Client telemetry's pure parts: the OTLP reader, Java's hash-set order and the
subscription id (the conformance scenarios compare the ids with Kafka's)."""

from __future__ import annotations

import struct
import uuid

from odradek.broker.observability import otlp
from odradek.broker.observability.client_telemetry import (
    java_hash_set_order,
    subscription_id,
)


def _field(number: int, payload: bytes) -> bytes:
    return bytes([number << 3 | 2, len(payload)]) + payload


def _double(number: int, value: float) -> bytes:
    return bytes([number << 3 | 1]) + struct.pack("<d", value)


def test_points_of_a_gauge_and_a_monotonic_sum() -> None:
    attribute = _field(1, b"node.id") + _field(2, _field(1, b"1"))
    gauge_point = _double(4, 2.5) + _field(7, attribute)
    gauge = _field(1, b"org.apache.kafka.producer.rate") + _field(5, _field(1, gauge_point))
    sum_point = bytes([6 << 3 | 1]) + struct.pack("<q", 7)
    total = _field(1, b"org.apache.kafka.producer.total") + _field(
        7, _field(1, sum_point) + bytes([2 << 3, 1, 3 << 3, 1])
    )
    payload = _field(1, _field(2, _field(2, gauge) + _field(2, total)))
    assert otlp.points(payload) == [
        otlp.Point("org.apache.kafka.producer.rate", (("node.id", "1"),), 2.5, False),
        otlp.Point("org.apache.kafka.producer.total", (), 7.0, True),
    ]


def test_truncated_payloads_are_refused() -> None:
    try:
        otlp.points(b"\x0a\x05ab")
    except otlp.OtlpError:
        return
    raise AssertionError("a field running past the payload was read")


def test_java_hash_set_order() -> None:
    # java.util.HashSet of "b", "a", "c" iterates a, b, c (hashes 98, 97, 99)
    assert java_hash_set_order(["b", "a", "c"]) == ["a", "b", "c"]
    assert java_hash_set_order(["a", "a"]) == ["a"]


def test_subscription_id_depends_on_metrics_interval_and_instance() -> None:
    instance = uuid.UUID(int=5)
    first = subscription_id(["a"], 1000, instance)
    assert -(2**31) <= first < 2**31
    assert first != subscription_id(["a"], 2000, instance)
    assert first != subscription_id(["a"], 1000, uuid.UUID(int=6))
