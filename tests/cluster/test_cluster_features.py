"""Feature levels are the cluster's: finalized through one broker, kept by the
controller, and reported by every broker."""

from __future__ import annotations

import time
from typing import Any

from helpers.wire import WireClient

from odradek.testing import Cluster

SOFTWARE = {"client_software_name": "test", "client_software_version": "1"}


def finalized(bootstrap: str) -> dict[str, int]:
    with WireClient(bootstrap) as client:
        answer: Any = client.call(18, 4, SOFTWARE)
    return {f.name: f.max_version_level for f in answer.finalized_features}


def test_a_downgrade_reaches_every_broker(cluster: Cluster) -> None:
    assert finalized(cluster.node(3).bootstrap)["group.version"] == 1
    body = {
        "timeout": 5000,
        "feature_updates": [
            {"feature": "group.version", "max_version_level": 0, "upgrade_type": 2}
        ],
        "validate_only": False,
    }
    with WireClient(cluster.node(1).bootstrap) as client:
        answer = client.call(57, 2, body)
    assert answer.error_code == 0, answer
    assert "group.version" not in finalized(cluster.node(1).bootstrap)
    deadline = time.monotonic() + 10
    while any("group.version" in finalized(b.bootstrap) for b in cluster.nodes.values()):
        assert time.monotonic() < deadline, "the change did not reach every broker"
        time.sleep(0.1)
