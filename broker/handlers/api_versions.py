"""ApiVersions (18), v0-v3.

- Lists exactly the versions this broker implements.
- A client asking a newer version than v3 gets UNSUPPORTED_VERSION in a v0 body
  that still lists the ranges (the server builds that answer, see server.py), so
  it can retry with a version it knows.
- Always answered with response header v0, even for flexible versions.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from odradek.broker.handlers.base import Api, Reply, RequestContext

MIN_VERSION, MAX_VERSION = 0, 3


def api_keys(apis: Iterable[Api]) -> list[dict[str, int]]:
    return [
        {"api_key": api.key, "min_version": api.min_version, "max_version": api.max_version}
        for api in apis
    ]


# ConsumerGroupHeartbeat and ConsumerGroupDescribe: listed only while
# group.coordinator.rebalance.protocols has "consumer", as Kafka does
CONSUMER_PROTOCOL_APIS = (68, 69)
# StreamsGroupHeartbeat and StreamsGroupDescribe: only while it has "streams"
STREAMS_PROTOCOL_APIS = (88, 89)


async def handle(ctx: RequestContext, request: Any) -> Reply:
    apis: list[Api] = list(ctx.services.apis_for(ctx.listener).values())
    protocols = ctx.services.config.group_coordinator_rebalance_protocols
    if "consumer" not in {p.strip() for p in protocols.split(",")}:
        apis = [api for api in apis if api.key not in CONSUMER_PROTOCOL_APIS]
    if "streams" not in {p.strip() for p in protocols.split(",")}:
        apis = [api for api in apis if api.key not in STREAMS_PROTOCOL_APIS]
    return {"error_code": 0, "api_keys": api_keys(apis), "throttle_time": 0}
