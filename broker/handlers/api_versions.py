"""ApiVersions (18), v0-v5.

- Lists exactly the versions this broker implements.
- A client asking a newer version than v5 gets UNSUPPORTED_VERSION in a v0 body that
  lists ApiVersions' own range, as Kafka's (the server builds that answer, see
  server.py), so it can retry with a version it knows.
- v3+: a client software name or version that is not letters, digits, '-' and '.'
  (starting and ending with a letter or digit) answers INVALID_REQUEST, as Kafka.
- v3+ carries the feature levels (broker/settings/features.py): the supported ranges,
  and the finalized levels with their epoch. Below v4 the supported features whose
  lowest level is 0 are left out, as Kafka leaves them out for older clients.
- v5: a cluster id without a node id (-1), or a node id without a cluster id (null),
  is INVALID_REQUEST. A client that names a cluster id that is not this cluster's, or a
  node id that is not this node's, gets REBOOTSTRAP_REQUIRED: it reached another
  broker than the one it meant.
- Always answered with response header v0, even for flexible versions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, cast

from kio.schema.api_versions.v0.request import ApiVersionsRequest as RequestV0
from kio.schema.api_versions.v1.request import ApiVersionsRequest as RequestV1
from kio.schema.api_versions.v2.request import ApiVersionsRequest as RequestV2
from kio.schema.api_versions.v3.request import ApiVersionsRequest as RequestV3
from kio.schema.api_versions.v4.request import ApiVersionsRequest as RequestV4

from odradek.broker.handlers.base import Api, Reply, RequestContext
from odradek.broker.settings.features import FEATURES, KRAFT_VERSION, FinalizedFeatures
from odradek.protocol.errors import ErrorCode
from odradek.protocol.schemas.api_versions.v5.request import ApiVersionsRequest as RequestV5

MIN_VERSION, MAX_VERSION = 0, 5

Request = RequestV0 | RequestV1 | RequestV2 | RequestV3 | RequestV4 | RequestV5


def api_keys(apis: Iterable[Api]) -> list[dict[str, int]]:
    return [
        {"api_key": api.key, "min_version": api.listed_min_version, "max_version": api.max_version}
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


async def handle(ctx: RequestContext, request: Request) -> Reply:
    # decoded requests are named tuples of the class's fields: the version tells which
    if (ctx.version >= 3 and not _software_named(cast(RequestV3, request))) or (
        ctx.version >= 5 and not _target_named(cast(RequestV5, request))
    ):
        return {"error_code": ErrorCode.invalid_request, "api_keys": [], "throttle_time": 0}
    config = ctx.services.config
    if ctx.version >= 5 and _elsewhere(cast(RequestV5, request), config.cluster_id, config.node_id):
        return {"error_code": ErrorCode.rebootstrap_required, "api_keys": [], "throttle_time": 0}
    if ctx.version >= 3:
        named = cast(RequestV3, request)
        ctx.session.client_software_name = named.client_software_name
        ctx.session.client_software_version = named.client_software_version
    apis: list[Api] = list(ctx.services.apis_for(ctx.listener).values())
    protocols = config.group_coordinator_rebalance_protocols
    if "consumer" not in {p.strip() for p in protocols.split(",")}:
        apis = [api for api in apis if api.key not in CONSUMER_PROTOCOL_APIS]
    if "streams" not in {p.strip() for p in protocols.split(",")}:
        apis = [api for api in apis if api.key not in STREAMS_PROTOCOL_APIS]
    reply = {"error_code": 0, "api_keys": api_keys(apis), "throttle_time": 0}
    if ctx.version >= 3:
        reply |= features(finalized(ctx), ctx.version)
    return reply


def _software_named(request: RequestV3 | RequestV4 | RequestV5) -> bool:
    return bool(
        SOFTWARE.fullmatch(request.client_software_name)
        and SOFTWARE.fullmatch(request.client_software_version)
    )


def _target_named(request: RequestV5) -> bool:
    """A cluster id comes with a node id, and no cluster id with none (-1)."""
    return (request.cluster_id is None) == (request.node_id == -1)


def _elsewhere(request: RequestV5, cluster_id: str, node_id: int) -> bool:
    """The client meant another cluster or another node than this one."""
    if request.cluster_id is None:
        return False
    return request.cluster_id != cluster_id or request.node_id != node_id


def finalized(ctx: RequestContext) -> FinalizedFeatures:
    """The levels in force: the active controller's own on its listener, else this
    node's (a controller that does not lead the quorum keeps no state of its own)."""
    controller = ctx.services.controller
    if ctx.listener.controller and controller is not None and controller.is_active:
        levels = controller.features.finalized
    else:
        levels = ctx.services.features.finalized
    # kraft.version is the quorum's (its control records), not a metadata record's
    kraft = 0
    if controller is not None and controller.quorum is not None:
        kraft = controller.quorum.kraft_version
    elif ctx.services.member is not None:
        kraft = ctx.services.member.kraft_version
    if kraft:
        return FinalizedFeatures({**levels.levels, KRAFT_VERSION: kraft}, levels.epoch)
    return levels


def features(finalized: FinalizedFeatures, version: int) -> dict[str, Any]:
    supported = [f for f in FEATURES if version >= 4 or f.min_level > 0]
    return {
        "supported_features": [
            {"name": f.name, "min_version": f.min_level, "max_version": f.max_level}
            for f in supported
        ],
        "finalized_features_epoch": finalized.epoch,
        "finalized_features": [
            {"name": name, "min_version_level": level, "max_version_level": level}
            for name, level in finalized.listed()
        ],
    }
