"""UnregisterBroker: `kafka-cluster unregister` removes a broker from the cluster; a
stopped broker's id is then free, and one that comes back registers anew."""

from __future__ import annotations

import time

from helpers.kafka_tools import run_tool

from odradek.testing import Cluster

CLUSTER_TOOL = "org.apache.kafka.tools.ClusterTool"


def registered(cluster: Cluster) -> list[int]:
    """The brokers the active controller knows, live or fenced (DescribeQuorum's
    observers are those that heartbeat; DescribeCluster with fenced brokers lists all)."""
    from odradek.broker.testing.cluster import _call

    node = cluster.nodes[1]
    answer = _call(
        node.host,
        node.port,
        60,
        2,
        {
            "include_cluster_authorized_operations": False,
            "endpoint_type": 1,
            "include_fenced_brokers": True,
        },
    )
    return sorted(b.broker_id for b in answer.brokers)


def test_kafka_cluster_unregister_removes_a_stopped_broker(cluster: Cluster) -> None:
    assert registered(cluster) == [1, 2, 3]
    cluster.stop(3)
    gone = run_tool(
        CLUSTER_TOOL, "unregister", "--bootstrap-server", cluster.nodes[1].bootstrap, "--id", "3"
    )
    assert gone.returncode == 0, gone.stderr + gone.stdout
    deadline = time.monotonic() + 10
    while registered(cluster) != [1, 2]:
        assert time.monotonic() < deadline, registered(cluster)
        time.sleep(0.1)
    again = run_tool(
        CLUSTER_TOOL, "unregister", "--bootstrap-server", cluster.nodes[1].bootstrap, "--id", "3"
    )
    assert again.returncode != 0
    assert "BrokerIdNotRegisteredException" in again.stderr, again.stderr
    cluster.restart(3)  # it registers anew
    assert registered(cluster) == [1, 2, 3]
