"""Scenarios of feature levels: what ApiVersions v3-v5 tell of them (the harness sets
the feature fields aside, so these record them), UpdateFeatures v0-v2 valid and
refused, a downgrade that turns a group type off and the upgrade that brings it
back, and a principal without ALTER on the cluster."""

from __future__ import annotations

from typing import Any

from conformance.harness import Run, scenario
from conformance.scenarios_acls import login

API_VERSIONS, METADATA, UPDATE_FEATURES = 18, 3, 57
CONSUMER_GROUP_HEARTBEAT, SHARE_GROUP_HEARTBEAT = 68, 76
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
SOFTWARE = {"client_software_name": "conformance", "client_software_version": "1.0"}


def feature_view(answer: Any) -> dict[str, Any]:
    """An ApiVersions answer's error and features (not its API list, compared elsewhere)."""
    return {
        "error_code": answer.error_code,
        "supported": sorted(
            (f.name, f.min_version, f.max_version) for f in answer.supported_features
        ),
        "finalized": sorted(
            (f.name, f.min_version_level, f.max_version_level) for f in answer.finalized_features
        ),
        "epoch_known": answer.finalized_features_epoch >= 0,
    }


def group_levels(answer: Any) -> list[tuple[str, int]]:
    """The finalized levels of the group types' features alone."""
    names = ("group.version", "share.version", "streams.version")
    return sorted(
        (f.name, f.max_version_level) for f in answer.finalized_features if f.name in names
    )


def update(
    run: Run,
    updates: list[tuple[str, int, int]],
    version: int = 2,
    validate_only: bool = False,
    client: Any = None,
) -> Any:
    if version == 0:
        keys = [
            {"feature": f, "max_version_level": level, "allow_downgrade": kind != UPGRADE}
            for f, level, kind in updates
        ]
    else:
        keys = [
            {"feature": f, "max_version_level": level, "upgrade_type": kind}
            for f, level, kind in updates
        ]
    body = {"timeout": 5000, "feature_updates": keys, "validate_only": validate_only}
    return run.call(UPDATE_FEATURES, version, body, client)


@scenario("api-versions.features", "supported and finalized features in ApiVersions v3-v5")
def _api_versions_features(run: Run) -> None:
    for version in (3, 4, 5):
        run.call(API_VERSIONS, version, SOFTWARE, view=feature_view)
    metadata = run.quiet(METADATA, 12, {"topics": [], "allow_auto_topic_creation": False})
    node = metadata.brokers[0].node_id
    mine = {**SOFTWARE, "cluster_id": metadata.cluster_id, "node_id": node}
    run.call(API_VERSIONS, 5, mine, view=feature_view)
    run.call(API_VERSIONS, 5, {**mine, "cluster_id": None, "node_id": 77}, view=feature_view)
    run.call(API_VERSIONS, 5, {**mine, "node_id": node + 1}, view=feature_view)
    run.call(API_VERSIONS, 5, {**mine, "cluster_id": "another-cluster"}, view=feature_view)


@scenario("update-features.refused", "updates Kafka refuses, in v0, v1 and v2")
def _update_features_refused(run: Run) -> None:
    refused = [
        [("group.version", 1, 7)],
        [("group.version", -1, UPGRADE)],
        [("no.such.version", 1, UPGRADE)],
        [("no.such.version", 0, SAFE_DOWNGRADE)],
        [("group.version", 2, UPGRADE)],
        [("group.version", 0, UPGRADE)],
        [("metadata.version", 6, SAFE_DOWNGRADE)],
        [("metadata.version", 32, UPGRADE)],
        [("metadata.version", 32, SAFE_DOWNGRADE)],
        [("metadata.version", 20, UNSAFE_DOWNGRADE)],
        [("metadata.version", 34, UPGRADE)],
        [("kraft.version", 2, UPGRADE)],
        [("group.version", 0, SAFE_DOWNGRADE), ("no.such.version", 1, UPGRADE)],
    ]
    for updates in refused:
        update(run, updates, validate_only=True)
    update(run, [("group.version", 0, UPGRADE)], version=0)
    update(run, [("share.version", 3, UPGRADE)], version=1)


@scenario("update-features.valid", "updates that change nothing, validated only, in v0-v2")
def _update_features_valid(run: Run) -> None:
    update(run, [], version=2)
    update(run, [("group.version", 1, UPGRADE)], version=0)
    update(run, [("group.version", 1, SAFE_DOWNGRADE)], version=1)
    update(run, [("metadata.version", 33, SAFE_DOWNGRADE)], validate_only=True)
    update(run, [("share.version", 0, SAFE_DOWNGRADE)], validate_only=True)
    update(run, [("group.version", 0, UNSAFE_DOWNGRADE)], version=1, validate_only=True)
    update(run, [("group.version", 0, SAFE_DOWNGRADE), ("group.version", 1, UPGRADE)])
    run.call(API_VERSIONS, 4, SOFTWARE, view=group_levels)


def consumer_heartbeat(run: Run, group: str) -> Any:
    body = {
        "group_id": group,
        "member_id": "conformance-member-000001",
        "member_epoch": 0,
        "rebalance_timeout": 30000,
        "subscribed_topic_names": [run.name("t")],
        "server_assignor": None,
        "topic_partitions": [],
    }
    return run.call(CONSUMER_GROUP_HEARTBEAT, 1, body, view=lambda a: a.error_code)


def share_heartbeat(run: Run, group: str) -> Any:
    body = {
        "group_id": group,
        "member_id": "conformance-member-000001",
        "member_epoch": 0,
        "subscribed_topic_names": [run.name("t")],
        "rack_id": None,
    }
    return run.call(SHARE_GROUP_HEARTBEAT, 1, body, view=lambda a: a.error_code)


@scenario("update-features.group-types-off", "group.version and share.version at 0, then back")
def _group_types_off(run: Run) -> None:
    try:
        update(run, [("group.version", 0, SAFE_DOWNGRADE), ("share.version", 0, SAFE_DOWNGRADE)])
        run.call(API_VERSIONS, 4, SOFTWARE, view=group_levels)
        consumer_heartbeat(run, run.name("g"))
        share_heartbeat(run, run.name("s"))
    finally:
        update(run, [("group.version", 1, UPGRADE), ("share.version", 2, UPGRADE)], version=1)
    run.call(API_VERSIONS, 4, SOFTWARE, view=group_levels)


@scenario("update-features.refused-acl", "UpdateFeatures without ALTER on the cluster", secure=True)
def _update_features_acl(run: Run) -> None:
    alice = login(run)
    update(run, [("group.version", 1, UPGRADE)], client=alice)
    update(run, [("group.version", 1, UPGRADE)], version=0, client=alice)
