"""UpdateFeatures (57), v0-v2: finalize feature levels (broker/settings/features.py).

- Each update names a feature, the level to finalize and an upgrade type (v1+: 1
  UPGRADE, 2 SAFE_DOWNGRADE, 3 UNSAFE_DOWNGRADE; v0's allow_downgrade means safe
  downgrade). Level 0 takes a feature out of the finalized list.
- All or nothing: the first refused update fails the whole request with
  INVALID_UPDATE_VERSION and Kafka's message ("The update failed for all features
  since ..."); nothing changes. validate_only (v1+) checks and changes nothing.
- metadata.version cannot go down, nor kraft.version, as on Kafka 4.4.
- In a cluster kraft.version is the quorum's: its upgrade from 0 to 1 turns the static
  voters into dynamic ones (broker/cluster/quorum/voter_changes.py: upgrade).
- Answers: v0-v1 list each feature asked with NONE once applied (none when refused);
  v2 answers with the top-level error only.
- Needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED, Kafka's message).
- On a broker of a cluster the request is passed to the controller, which keeps the
  levels in the metadata log; every broker follows them.
"""

from __future__ import annotations

from typing import Any, cast

import structlog
from kio.schema.update_features.v0.request import UpdateFeaturesRequest as RequestV0
from kio.schema.update_features.v1.request import UpdateFeaturesRequest as RequestV1
from kio.schema.update_features.v2.request import UpdateFeaturesRequest as RequestV2

from odradek.broker.cluster.admin import through_controller
from odradek.broker.cluster.controller_documents import ControllerFeatures
from odradek.broker.cluster.node_client import NodeUnreachable
from odradek.broker.handlers.authorization import needs_permission
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import CLUSTER_NAME, Operation, ResourceType
from odradek.broker.settings.feature_store import FeatureStore
from odradek.broker.settings.features import (
    KRAFT_VERSION,
    SAFE_DOWNGRADE,
    UPGRADE,
    FeatureUpdateError,
    Update,
    plan_updates,
)
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 2

Request = RequestV0 | RequestV1 | RequestV2

log = structlog.get_logger("broker")


def updates_of(request: Request, version: int) -> list[Update]:
    # decoded requests are named tuples of the class's fields: the version tells which
    if version == 0:
        return [
            Update(u.feature, u.max_version_level, SAFE_DOWNGRADE if u.allow_downgrade else UPGRADE)
            for u in cast(RequestV0, request).feature_updates
        ]
    return [
        Update(u.feature, u.max_version_level, u.upgrade_type)
        for u in cast(RequestV1 | RequestV2, request).feature_updates
    ]


def _answer(
    request: Request, code: ErrorCode, message: str | None, applied: bool = False
) -> dict[str, Any]:
    results = []
    if applied:  # v2 has no results: the encoder leaves them out
        results = [
            {"feature": u.feature, "error_code": ErrorCode.none, "error_message": "NONE"}
            for u in request.feature_updates
        ]
    return {"throttle_time": 0, "error_code": code, "error_message": message, "results": results}


async def handle(ctx: RequestContext, request: Request) -> Reply:
    controller = ctx.services.controller
    on_controller = ctx.listener.controller and controller is not None
    if not on_controller and not ctx.allowed(Operation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        message = needs_permission(ctx, "UpdateFeatures", Operation.ALTER)
        return _answer(request, ErrorCode.cluster_authorization_failed, message)
    member = ctx.services.member
    if not on_controller and member is not None:
        try:
            return await through_controller(member, 57, ctx.version, request)
        except NodeUnreachable as exc:
            return _answer(request, ErrorCode.request_timed_out, str(exc))
    store: FeatureStore | ControllerFeatures = ctx.services.features
    quorum = None
    if on_controller and controller is not None:
        store, quorum = controller.features, controller.quorum
    current = store.finalized
    now = dict(current.levels)
    if quorum is not None:  # kraft.version is the quorum's (its control records)
        now[KRAFT_VERSION] = quorum.kraft_version
    try:
        updates = updates_of(request, ctx.version)
        levels = plan_updates(updates, now, ctx.services.config.node_id)
    except FeatureUpdateError as exc:
        return _answer(request, ErrorCode.invalid_update_version, str(exc))
    validate_only = ctx.version >= 1 and cast(RequestV1 | RequestV2, request).validate_only
    if quorum is not None:
        kraft = levels.pop(KRAFT_VERSION, 0)
        if KRAFT_VERSION in current.levels:
            levels[KRAFT_VERSION] = current.levels[KRAFT_VERSION]
        if kraft != quorum.kraft_version and controller is not None:
            assert controller.voter_changes is not None
            code, refusal = await controller.voter_changes.upgrade(kraft, validate_only)
            if code != ErrorCode.none:
                return _answer(request, code, refusal)
            log.info("kraft.version finalized", level=kraft)
    if not validate_only and levels != dict(current.levels):
        try:
            await store.change(levels)
        except OSError as exc:
            log.error("feature levels not saved", path=str(store.path), error=str(exc))
            return _answer(request, ErrorCode.unknown_server_error, f"not saved: {exc.strerror}")
        log.info("feature levels finalized", levels=levels)
    return _answer(request, ErrorCode.none, None, applied=True)
