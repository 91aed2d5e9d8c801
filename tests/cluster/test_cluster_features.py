"""Feature levels are the cluster's: finalized through one broker, kept by the
controller, and reported by every broker."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from helpers.wire import WireClient

from odradek.testing import Cluster

SOFTWARE = {"client_software_name": "test", "client_software_version": "1"}


def finalized(bootstrap: str) -> dict[str, int]:
    with WireClient(bootstrap) as client:
        answer: Any = client.call(18, 4, SOFTWARE)
    return {f.name: f.max_version_level for f in answer.finalized_features}


def downgrade_group_version(bootstrap: str) -> None:
    """UpdateFeatures: group.version to 0 (a safe downgrade)."""
    body = {
        "timeout": 5000,
        "feature_updates": [
            {"feature": "group.version", "max_version_level": 0, "upgrade_type": 2}
        ],
        "validate_only": False,
    }
    with WireClient(bootstrap) as client:
        answer = client.call(57, 2, body)
    assert answer.error_code == 0, answer


def test_a_downgrade_reaches_every_broker(cluster: Cluster) -> None:
    assert finalized(cluster.node(3).bootstrap)["group.version"] == 1
    downgrade_group_version(cluster.node(1).bootstrap)
    assert "group.version" not in finalized(cluster.node(1).bootstrap)
    deadline = time.monotonic() + 10
    while any("group.version" in finalized(b.bootstrap) for b in cluster.nodes.values()):
        assert time.monotonic() < deadline, "the change did not reach every broker"
        time.sleep(0.1)


def test_every_controller_reports_the_clusters_levels(tmp_path: Path) -> None:
    """The controllers that do not lead follow the metadata too: ApiVersions on each
    controller's listener gives the levels the cluster finalized."""
    with Cluster(1, tmp_path, controllers=3) as cluster:
        downgrade_group_version(cluster.node(1).bootstrap)
        deadline = time.monotonic() + 10
        controllers = [cluster.node(n).bootstrap for n in cluster.controller_ids]
        while any("group.version" in finalized(c) for c in controllers):
            assert time.monotonic() < deadline, "a controller still reports group.version"
            time.sleep(0.1)
        assert all(finalized(c)["transaction.version"] == 2 for c in controllers)
