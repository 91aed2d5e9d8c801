"""ApiVersions (18), v0-v5.

- Lists exactly the versions this broker implements.
- A client asking a newer version than v5 gets UNSUPPORTED_VERSION in a v0 body
  that lists ApiVersions' own range, as Kafka's (the server builds that answer, see
  server.py), so it can retry with a version it knows.
- v3+: a client software name or version that is not letters, digits, '-' and '.'
  (starting and ending with a letter or digit) answers INVALID_REQUEST, as Kafka.
- v4 is v3 (its change is to the supported features, which this broker lists none of).
- v5 (KIP-1242): a client names the cluster and node it expects to reach; another
  cluster id or node id answers REBOOTSTRAP_REQUIRED, naming only one of the two
  INVALID_REQUEST.
- Always answered with response header v0, even for flexible versions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kio.schema.api_versions.v0.request import ApiVersionsRequest as V0
from kio.schema.api_versions.v1.request import ApiVersionsRequest as V1
from kio.schema.api_versions.v2.request import ApiVersionsRequest as V2
from kio.schema.api_versions.v3.request import ApiVersionsRequest as V3
from kio.schema.api_versions.v4.request import ApiVersionsRequest as V4

from odradek.broker.handlers.base import Api, Reply, RequestContext
from odradek.protocol.errors import ErrorCode
from odradek.protocol.schemas.api_versions.v5.request import ApiVersionsRequest as V5

MIN_VERSION, MAX_VERSION = 0, 5

ApiVersionsRequest = V0 | V1 | V2 | V3 | V4 | V5


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


async def handle(ctx: RequestContext, request: ApiVersionsRequest) -> Reply:
    if ctx.version >= 3 and not (
        SOFTWARE.fullmatch(getattr(request, "client_software_name", ""))
        and SOFTWARE.fullmatch(getattr(request, "client_software_version", ""))
    ):
        return {"error_code": ErrorCode.invalid_request, "api_keys": [], "throttle_time": 0}
    expected = _expected_node_code(ctx, request)
    if expected:
        return {"error_code": expected, "api_keys": [], "throttle_time": 0}
    apis: list[Api] = list(ctx.services.apis_for(ctx.listener).values())
    protocols = ctx.services.config.group_coordinator_rebalance_protocols
    if "consumer" not in {p.strip() for p in protocols.split(",")}:
        apis = [api for api in apis if api.key not in CONSUMER_PROTOCOL_APIS]
    if "streams" not in {p.strip() for p in protocols.split(",")}:
        apis = [api for api in apis if api.key not in STREAMS_PROTOCOL_APIS]
    return {"error_code": 0, "api_keys": api_keys(apis), "throttle_time": 0}


def _expected_node_code(ctx: RequestContext, request: ApiVersionsRequest) -> ErrorCode:
    """v5: the error for a cluster and node the client expects that are not this one's."""
    cluster_id = getattr(request, "cluster_id", None)
    node_id = getattr(request, "node_id", -1)
    if cluster_id is None and node_id == -1:
        return ErrorCode.none
    if cluster_id is None or node_id == -1:
        return ErrorCode.invalid_request
    config = ctx.services.config
    if cluster_id != config.cluster_id or node_id != config.node_id:
        return ErrorCode.rebootstrap_required
    return ErrorCode.none
