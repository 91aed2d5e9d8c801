"""Static voters (`controller.quorum.voters`, kraft.version 0) become dynamic ones with
`kafka-features upgrade --feature kraft.version=1`, as on Kafka 4.4: every voter tells
each new leader its directory id and the kraft.version range it supports
(UpdateRaftVoter), and the leader refuses the upgrade until all of them have, in
Kafka's words; then `add-controller` and `remove-controller` work, and a restarted
controller takes its voters from the log, not from its settings."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from helpers.kafka_tools import ToolRun, features

from cluster.conftest import SESSION_MS
from cluster.test_dynamic_voters import (
    add_controller,
    controllers_of,
    directory_id,
    remove_controller,
    status,
    voters_in,
    wait_for_voters,
)
from odradek.testing import Cluster

pytestmark = pytest.mark.timeout(300)


def upgrade(cluster: Cluster) -> ToolRun:
    return features(
        "--bootstrap-server", cluster.bootstrap_servers, "upgrade", "--feature", "kraft.version=1"
    )


def kraft_level(cluster: Cluster, *where: str) -> str:
    described = features(*where, "describe")
    assert described.returncode == 0, described.stderr
    return next(line for line in described.lines() if "Feature: kraft.version" in line)


def test_static_voters_become_dynamic(tmp_path: Path) -> None:
    with Cluster(1, tmp_path, controllers=3, session_timeout_ms=SESSION_MS) as cluster:
        assert voters_in(cluster) == sorted(cluster.controller_ids)
        assert "FinalizedVersionLevel: 0" in kraft_level(
            cluster, "--bootstrap-server", cluster.bootstrap_servers
        )
        # a voter the leader has not heard from in its epoch (the old leader, killed):
        # refused, as on Kafka
        leader = cluster.wait_for_active_controller()
        cluster.controllers[leader].kill()
        new_leader = cluster.wait_for_active_controller(other_than=leader, timeout=20)
        refused = upgrade(cluster)
        assert refused.returncode != 0
        assert (
            "Invalid upgrade of kraft.version to 1 because not all of the voters support it"
            in refused.stderr + refused.stdout
        ), refused.stderr
        assert "FinalizedVersionLevel: 0" in kraft_level(
            cluster, "--bootstrap-server", cluster.bootstrap_servers
        )

        # back: it tells the new leader, and the upgrade goes through
        cluster.controllers[leader].start()
        deadline = time.monotonic() + 30
        while (done := upgrade(cluster)).returncode != 0:
            assert time.monotonic() < deadline, done.stderr
            time.sleep(1)
        for where in (
            ("--bootstrap-server", cluster.bootstrap_servers),
            ("--bootstrap-controller", controllers_of(cluster)),
        ):
            assert "FinalizedVersionLevel: 1" in kraft_level(cluster, *where)
        found = status(cluster)["CurrentVoters"]
        for node_id in cluster.controller_ids:
            assert f'"directoryId": "{directory_id(cluster, node_id)}"' in found

        # the voters are dynamic now: one removed, then added back
        active = cluster.wait_for_active_controller()
        assert active == new_leader or active in cluster.controller_ids
        out = next(n for n in cluster.controller_ids if n != active)
        gone = remove_controller(cluster, out, directory_id(cluster, out))
        assert gone.returncode == 0, gone.stderr
        wait_for_voters(cluster, sorted(set(cluster.controller_ids) - {out}))
        back = add_controller(cluster, out, tmp_path)
        assert back.returncode == 0, back.stderr
        wait_for_voters(cluster, sorted(cluster.controller_ids))

        # a controller restarted with its static settings keeps the log's voters
        cluster.controllers[out].stop()
        cluster.controllers[out].start()
        wait_for_voters(cluster, sorted(cluster.controller_ids))
        assert "FinalizedVersionLevel: 1" in kraft_level(
            cluster, "--bootstrap-controller", cluster.controllers[out].bootstrap
        )
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("after-upgrade", 1, 1)])["after-upgrade"].result(30)
