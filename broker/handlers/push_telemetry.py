"""PushTelemetry (72), v0 (KIP-714): a client instance's metrics.

- A null or reserved client_instance_id (zero, or the one of all ones): INVALID_REQUEST.
- Then, as Kafka: after a terminating push, INVALID_REQUEST; too early,
  THROTTLING_QUOTA_EXCEEDED; another subscription id, UNKNOWN_SUBSCRIPTION_ID; an
  unknown compression type, UNSUPPORTED_COMPRESSION_TYPE; larger than
  telemetry.max.bytes, TELEMETRY_TOO_LARGE (broker/observability/client_telemetry.py).
- The metrics (an OTLP MetricsData message, compressed as the request says) go to
  /metrics, labelled by client_id and client_instance_id. A payload that cannot be
  read is INVALID_RECORD (what Kafka answers when its telemetry receiver fails).
- Always served (Kafka serves it only with a telemetry-receiving metrics reporter).
"""

from __future__ import annotations

import uuid

from kio.schema.push_telemetry.v0.request import PushTelemetryRequest

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.get_telemetry_subscriptions import client_attributes
from odradek.broker.observability import otlp
from odradek.broker.observability.client_telemetry import TelemetryRefusal
from odradek.protocol.errors import ErrorCode
from odradek.storage.records import decompress

MIN_VERSION, MAX_VERSION = 0, 0

RESERVED = (uuid.UUID(int=0), uuid.UUID(int=1))  # Kafka's Uuid.ZERO_UUID, METADATA_TOPIC_ID


def _answer(code: ErrorCode) -> Reply:
    return {"throttle_time": 0, "error_code": code}


async def handle(ctx: RequestContext, request: PushTelemetryRequest) -> Reply:
    instance_id = request.client_instance_id
    if instance_id is None or instance_id in RESERVED:
        return _answer(ErrorCode.invalid_request)
    telemetry = ctx.services.telemetry
    now = ctx.services.now_ms()
    instance = telemetry.instance(instance_id, client_attributes(ctx), now)
    payload = request.metrics or b""
    try:
        telemetry.check_push(
            instance,
            now,
            request.terminating,
            request.subscription_id,
            request.compression_type,
            len(payload),
        )
    except TelemetryRefusal as refusal:
        return _answer(refusal.code)
    if payload:
        try:
            raw = decompress(request.compression_type, memoryview(payload))
            if raw is None:
                return _answer(ErrorCode.invalid_record)
            telemetry.record(instance, otlp.points(bytes(raw)))
        except Exception:  # any codec's complaint about the payload
            return _answer(ErrorCode.invalid_record)
    return _answer(ErrorCode.none)
