"""GetTelemetrySubscriptions (71), v0 (KIP-714): what a client instance is to push.

- A null or zero client_instance_id gets a new random id; the instance's metrics,
  push interval and subscription id come from the client-metrics subscriptions that
  match it (broker/observability/client_telemetry.py), with the accepted compression
  types (zstd, lz4, gzip, snappy), telemetry.max.bytes and delta temporality.
- Asking again sooner than the push interval: THROTTLING_QUOTA_EXCEEDED.
- Always served (Kafka serves it only with a telemetry-receiving metrics reporter).
"""

from __future__ import annotations

import uuid

from kio.schema.get_telemetry_subscriptions.v0.request import GetTelemetrySubscriptionsRequest

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.observability.client_telemetry import (
    ACCEPTED_COMPRESSION,
    TelemetryRefusal,
)
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 0

ZERO_UUID = uuid.UUID(int=0)


def client_attributes(ctx: RequestContext) -> dict[str, str]:
    """What a subscription's `match` patterns are matched against."""
    host, _, port = ctx.connection_id.rpartition(":")
    session = ctx.session
    return {
        "client_id": ctx.header.client_id or "",
        "client_software_name": session.client_software_name,
        "client_software_version": session.client_software_version,
        "client_source_address": host,
        "client_source_port": port,
    }


async def handle(ctx: RequestContext, request: GetTelemetrySubscriptionsRequest) -> Reply:
    telemetry = ctx.services.telemetry
    instance_id = request.client_instance_id
    if instance_id is None or instance_id == ZERO_UUID:
        instance_id = uuid.uuid4()
        while instance_id in telemetry.instances:
            instance_id = uuid.uuid4()
    now = ctx.services.now_ms()
    instance = telemetry.instance(instance_id, client_attributes(ctx), now)
    try:
        telemetry.check_get(instance, now)
    except TelemetryRefusal as refusal:
        return {"throttle_time": 0, "error_code": refusal.code}
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "client_instance_id": instance_id,
        "subscription_id": instance.subscription_id,
        "accepted_compression_types": list(ACCEPTED_COMPRESSION),
        "push_interval": instance.interval_ms,
        "telemetry_max_bytes": telemetry.max_bytes,
        "delta_temporality": True,
        "requested_metrics": list(instance.metrics),
    }
