"""ApiVersions (18), v0-v3.

- Lists exactly the versions this broker implements.
- A client asking a newer version than v3 gets UNSUPPORTED_VERSION in a v0 body
  that lists ApiVersions' own range, as Kafka's (the server builds that answer, see
  server.py), so it can retry with a version it knows.
- v3+: a client software name or version that is not letters, digits, '-' and '.'
  (starting and ending with a letter or digit) answers INVALID_REQUEST, as Kafka.
- Always answered with response header v0, even for flexible versions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from odradek.broker.handlers.base import Api, Reply, RequestContext
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 3


def api_keys(apis: Iterable[Api]) -> list[dict[str, int]]:
    return [
        {"api_key": api.key, "min_version": api.min_version, "max_version": api.max_version}
        for api in apis
    ]


# ConsumerGroupHeartbeat and ConsumerGroupDescribe: listed only while
# group.coordinator.rebalance.protocols has "consumer", as Kafka does
CONSUMER_PROTOCOL_APIS = (68, 69)
# StreamsGroupHeartbeat, StreamsGroupDescribe and StreamsGroupTopologyDescriptionUpdate:
# only while it has "streams"
STREAMS_PROTOCOL_APIS = (88, 89, 93)


# what v3+ requires of client_software_name and client_software_version (Kafka's)
SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


async def handle(ctx: RequestContext, request: Any) -> Reply:
    if ctx.version >= 3 and not (
        SOFTWARE.fullmatch(request.client_software_name)
        and SOFTWARE.fullmatch(request.client_software_version)
    ):
        return {"error_code": ErrorCode.invalid_request, "api_keys": [], "throttle_time": 0}
    if ctx.version >= 3:
        ctx.session.client_software_name = request.client_software_name
        ctx.session.client_software_version = request.client_software_version
    apis: list[Api] = list(ctx.services.apis_for(ctx.listener).values())
    protocols = ctx.services.config.group_coordinator_rebalance_protocols
    if "consumer" not in {p.strip() for p in protocols.split(",")}:
        apis = [api for api in apis if api.key not in CONSUMER_PROTOCOL_APIS]
    if "streams" not in {p.strip() for p in protocols.split(",")}:
        apis = [api for api in apis if api.key not in STREAMS_PROTOCOL_APIS]
    return {"error_code": 0, "api_keys": api_keys(apis), "throttle_time": 0}
