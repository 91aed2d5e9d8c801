"""Client quotas as the handlers apply them (broker/dataplane/quotas.py measures).

- Produce counts the request's size against `producer_byte_rate`, Fetch (a
  consumer's) its records against `consumer_byte_rate`; every request from a client
  counts the time spent handling it against `request_percentage` (the percentage of
  one second, as Kafka counts a request handler thread's time).
- The throttle time is the larger of the two; the answer carries it and the
  connection is muted that long (session.throttle_ms, see network/connection.py).
- CreateTopics, DeleteTopics and CreatePartitions count their partitions against
  `controller_mutation_rate` (mutation_quota; strict from the version Kafka's is).
- Requests through the controller listener and a follower's fetches are not counted
  (they are the cluster's, as Kafka exempts them).
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from odradek.broker.dataplane.quotas import MutationQuota
from odradek.broker.handlers.base import RequestContext
from odradek.broker.settings.client_quotas import REQUEST_PERCENTAGE

PERCENT_PER_SECOND = 100.0


def user_of(ctx: RequestContext) -> str:
    """The principal's name, as a quota's user entity names it."""
    return ctx.session.principal.partition(":")[2]


def client_of(ctx: RequestContext) -> str:
    return ctx.header.client_id or ""


def request_time_throttle(ctx: RequestContext, now_ms: int) -> int:
    """Count the time this request took against request_percentage; the throttle
    time that calls for."""
    if ctx.listener.controller:
        return 0
    spent = time.perf_counter() - ctx.started
    return ctx.services.quotas.record(
        REQUEST_PERCENTAGE, user_of(ctx), client_of(ctx), spent * PERCENT_PER_SECOND, now_ms
    )


def byte_throttle(ctx: RequestContext, kind: str, size: int, now_ms: int) -> int:
    if ctx.listener.controller:
        return 0
    return ctx.services.quotas.record(kind, user_of(ctx), client_of(ctx), size, now_ms)


def as_ms(throttle: int | timedelta) -> int:
    """A reply's throttle time (an answer forwarded from another broker has a timedelta)."""
    if isinstance(throttle, timedelta):
        return round(throttle.total_seconds() * 1000)
    return throttle


def mute(ctx: RequestContext, throttle_ms: int) -> None:
    """The connection reads nothing more from the client for `throttle_ms`."""
    if throttle_ms > ctx.session.throttle_ms:
        ctx.session.throttle_ms = throttle_ms


def mutation_quota(ctx: RequestContext, strict_since: int) -> MutationQuota:
    """The client's controller_mutation_rate, strict from version `strict_since`."""
    quotas = ctx.services.quotas
    strict = ctx.version >= strict_since
    if ctx.listener.controller or not quotas.enabled:
        return MutationQuota(None, strict)
    now_ms = ctx.services.now_ms()
    return quotas.mutation_quota(user_of(ctx), client_of(ctx), strict, now_ms)


def mutation_throttled(ctx: RequestContext, quota: MutationQuota, reply: dict[str, Any]) -> Any:
    """The answer with the wait the quota called for, the connection muted that long."""
    throttle = quota.throttle_ms(ctx.services.now_ms())
    if throttle:
        mute(ctx, throttle)
        reply["throttle_time"] = throttle
    return reply
