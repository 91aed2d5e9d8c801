"""Scenarios of client telemetry (KIP-714): GetTelemetrySubscriptions (71) and
PushTelemetry (72) driven by a client-metrics subscription that matches the run's
client id, with the errors of pushing too early, with another subscription id, an
unknown compression type, too large a payload and after a terminating push. (The
reference Kafka has a telemetry-receiving metrics reporter, tests/reference/plugin.)"""

from __future__ import annotations

import time
import uuid
from typing import Any

from helpers.wire import WireClient

from conformance.harness import Run, scenario
from conformance.scenarios_client_metrics import CLIENT_METRICS, SET, settled
from conformance.scenarios_configs import incremental

GET_TELEMETRY_SUBSCRIPTIONS, PUSH_TELEMETRY = 71, 72
INTERVAL_MS = 500


def _uuid_hash(instance: uuid.UUID) -> int:
    hilo = (instance.int >> 64) ^ (instance.int & 0xFFFFFFFFFFFFFFFF)
    return ((hilo >> 32) ^ hilo) & 0xFFFFFFFF


def subscribed(answer: Any) -> dict[str, Any]:
    """The answer, its subscription id without the instance id's part (the id is the
    broker's random one)."""
    found = {
        "error_code": answer.error_code,
        "accepted_compression_types": answer.accepted_compression_types,
        "push_interval": answer.push_interval,
        "telemetry_max_bytes": answer.telemetry_max_bytes,
        "delta_temporality": answer.delta_temporality,
        "requested_metrics": answer.requested_metrics,
    }
    if answer.error_code == 0:
        found["subscription_crc"] = (answer.subscription_id & 0xFFFFFFFF) ^ _uuid_hash(
            answer.client_instance_id
        )
    return found


def push(
    run: Run,
    client: WireClient,
    instance: uuid.UUID | None,
    subscription: int,
    metrics: bytes = b"",
    compression: int = 0,
    terminating: bool = False,
) -> Any:
    body = {
        "client_instance_id": instance,
        "subscription_id": subscription,
        "terminating": terminating,
        "compression_type": compression,
        "metrics": metrics,
    }
    return run.call(PUSH_TELEMETRY, 0, body, client)


def subscribed_client(run: Run, metrics: str) -> tuple[str, WireClient, Any, int]:
    """A client-metrics subscription of `metrics` matching a new client's id, and that
    client's first GetTelemetrySubscriptions (kept as a step): the subscription's name,
    the client, its instance id and its subscription id."""
    name, client_id = run.name("sub"), run.name("app")
    changes = [
        ("metrics", SET, metrics),
        ("interval.ms", SET, str(INTERVAL_MS)),
        ("match", SET, f"client_id={client_id}"),
    ]
    incremental(run, [(CLIENT_METRICS, name, changes)])
    settled(run, name, "interval.ms", str(INTERVAL_MS))
    client = run.client()
    client.client_id = client_id
    get = {"client_instance_id": None}
    answer = run.call(GET_TELEMETRY_SUBSCRIPTIONS, 0, get, client, view=subscribed)
    return name, client, answer.client_instance_id, answer.subscription_id


@scenario("telemetry.subscribed", "a matching client: subscribed, pushing, too early, refused")
def _subscribed(run: Run) -> None:
    metrics = "org.apache.kafka.producer.,org.apache.kafka.consumer.fetch"
    _, client, instance, subscription = subscribed_client(run, metrics)
    again = {"client_instance_id": instance}
    run.call(GET_TELEMETRY_SUBSCRIPTIONS, 0, again, client, view=subscribed)  # too early
    push(run, client, instance, subscription)
    push(run, client, instance, subscription)  # too early
    time.sleep(INTERVAL_MS * 1.2 / 1000)
    push(run, client, instance, subscription + 1)  # in time, another subscription id
    time.sleep(INTERVAL_MS * 1.2 / 1000)
    run.call(GET_TELEMETRY_SUBSCRIPTIONS, 0, again, client, view=subscribed)
    push(run, client, instance, subscription, compression=9)
    time.sleep(INTERVAL_MS * 1.2 / 1000)
    push(run, client, instance, subscription, metrics=b"\0" * (1024 * 1024 + 1))
    push(run, client, instance, subscription, terminating=True)
    push(run, client, instance, subscription)  # after terminating


@scenario("telemetry.unsubscribed", "a client no subscription matches; bad instance ids")
def _unsubscribed(run: Run) -> None:
    client = run.client()
    client.client_id = run.name("nobody")
    instance = uuid.uuid4()
    answer = run.call(
        GET_TELEMETRY_SUBSCRIPTIONS, 0, {"client_instance_id": instance}, client, view=subscribed
    )
    run.record("own instance id kept", answer.client_instance_id == instance)
    push(run, client, instance, answer.subscription_id)
    push(run, client, None, 0)
    push(run, client, uuid.UUID(int=0), 0)


@scenario("telemetry.subscription-changed", "a client's subscription changed while it pushes")
def _changed(run: Run) -> None:
    name, client, instance, subscription = subscribed_client(run, "org.apache.kafka.producer.")
    incremental(run, [(CLIENT_METRICS, name, [("metrics", SET, "org.apache.kafka.consumer.")])])
    settled(run, name, "metrics", "org.apache.kafka.consumer.")
    push(run, client, instance, subscription)  # the old id
    incremental(run, [(CLIENT_METRICS, name, [("interval.ms", SET, "400")])])
    settled(run, name, "interval.ms", "400")
    # re-evaluated: asks again at once
    again = {"client_instance_id": instance}
    run.call(GET_TELEMETRY_SUBSCRIPTIONS, 0, again, client, view=subscribed)
