"""UnregisterBroker: `kafka-cluster unregister` removes a broker from the cluster; a
stopped broker's id is then free, and one that comes back registers anew.
UnregisterController: answered as Kafka 4.4 answers an id no controller registered."""

from __future__ import annotations

import time

from helpers.kafka_tools import run_tool
from helpers.reference_kafka import ReferenceKafka
from helpers.wire import WireClient

from odradek.testing import Cluster

CLUSTER_TOOL = "org.apache.kafka.tools.ClusterTool"
API_VERSIONS, UNREGISTER_CONTROLLER = 18, 94
CONTROLLER_ID_NOT_REGISTERED = 136


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


def listed_range(bootstrap: str, api_key: int) -> tuple[int, int] | None:
    """The versions of `api_key` the listener at `bootstrap` lists in ApiVersions."""
    with WireClient(bootstrap) as client:
        answer = client.call(
            API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}
        )
    found = [(a.min_version, a.max_version) for a in answer.api_keys if a.api_key == api_key]
    return found[0] if found else None


def unregister_controller(bootstrap: str, controller_id: int) -> tuple[int, str | None]:
    with WireClient(bootstrap) as client:
        answer = client.call(UNREGISTER_CONTROLLER, 0, {"controller_id": controller_id})
    return answer.error_code, answer.error_message


def test_unregister_controller_answers_as_kafka_for_an_unregistered_id(
    cluster: Cluster, kafka44: ReferenceKafka
) -> None:
    """An id no controller registered is answered as Kafka 4.4 answers it, by the
    active controller on its listener and by a broker, which passes the request on;
    the quorum's own controller, registered with itself, is unregistered once."""
    odradek_controller = cluster.controller.bootstrap
    kafka_controller = f"127.0.0.1:{kafka44.controller_port}"
    unknown = (CONTROLLER_ID_NOT_REGISTERED, "Controller ID 77 is not currently registered.")
    for odradek, kafka in (
        (odradek_controller, kafka_controller),
        (cluster.nodes[1].bootstrap, kafka44.bootstrap),
    ):
        assert listed_range(odradek, UNREGISTER_CONTROLLER) == (0, 0)
        assert listed_range(kafka, UNREGISTER_CONTROLLER) == (0, 0)
        assert unregister_controller(kafka, 77) == unknown
        assert unregister_controller(odradek, 77) == unknown
    # the quorum's own controller registered itself (not asked of the session's Kafka,
    # which would then lose its registration): removed once, then unknown
    deadline = time.monotonic() + 15
    while unregister_controller(odradek_controller, 0) != (0, None):
        assert time.monotonic() < deadline, "controller 0 never registered"
        time.sleep(0.2)
    assert unregister_controller(odradek_controller, 0) == (
        CONTROLLER_ID_NOT_REGISTERED,
        "Controller ID 0 is not currently registered.",
    )
    # kafka-cluster unregister-controller, through a broker and from the controller
    for target in (
        ("--bootstrap-server", kafka44.bootstrap),
        ("--bootstrap-server", cluster.nodes[2].bootstrap),
        ("--bootstrap-controller", odradek_controller),
    ):
        refused = run_tool(CLUSTER_TOOL, "unregister-controller", *target, "--id", "77")
        assert refused.returncode != 0, (target, refused.stdout)
        assert "ControllerIdNotRegisteredException" in refused.stderr, (target, refused.stderr)
