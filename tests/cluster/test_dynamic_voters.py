"""A dynamic controller quorum (KIP-853, kraft.version 1), driven by Kafka's own
`kafka-metadata-quorum`: the controllers find each other through
controller.quorum.bootstrap.servers, the first starts as the only voter, the others
observe until `add-controller` adds them, and `remove-controller` takes one out.
The voter set lives in the metadata log, so a restarted controller keeps it, and
Kafka's DumpLogSegments reads its records."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from helpers.kafka_tools import TOOLS, ToolRun, features, run_tool
from helpers.wire import WireClient

from cluster.conftest import SESSION_MS
from odradek.broker.dataplane.log_dirs import kafka_uuid, parse_kafka_uuid
from odradek.broker.testing.broker import free_port
from odradek.testing import Broker, Cluster

pytestmark = pytest.mark.timeout(300)
TOOL = TOOLS["kafka-metadata-quorum"]
UPDATE_RAFT_VOTER, VOTER_NOT_FOUND = 82, 127


def controllers_of(cluster: Cluster) -> str:
    return ",".join(cluster.node(n).bootstrap for n in cluster.controller_ids)


def quorum_tool(cluster: Cluster, *args: str) -> ToolRun:
    return run_tool(TOOL, "--bootstrap-controller", controllers_of(cluster), *args)


def status(cluster: Cluster) -> dict[str, str]:
    ran = quorum_tool(cluster, "describe", "--status")
    assert ran.returncode == 0, ran.stderr
    return {
        key.strip(): value.strip()
        for key, _, value in (line.partition(":") for line in ran.lines())
        if value
    }


def directory_id(cluster: Cluster, node_id: int) -> str:
    meta = (cluster.controllers[node_id].data_dir / "meta.properties").read_text()
    return next(
        line.split("=", 1)[1] for line in meta.splitlines() if line.startswith("directory.id=")
    )


def add_controller(cluster: Cluster, node_id: int, tmp_path: Path) -> ToolRun:
    """`add-controller`, given the new controller's own settings, as on Kafka."""
    node = cluster.controllers[node_id]
    settings = tmp_path / f"controller-{node_id}.properties"
    settings.write_text(
        f"node.id={node_id}\nprocess.roles=controller\ncontroller.listener.names=CONTROLLER\n"
        f"listeners=CONTROLLER://{node.host}:{node.port}\nlog.dirs={node.data_dir}\n"
    )
    return quorum_tool(cluster, "--command-config", str(settings), "add-controller")


def remove_controller(cluster: Cluster, node_id: int, directory: str) -> ToolRun:
    return quorum_tool(
        cluster,
        "remove-controller",
        "--controller-id",
        str(node_id),
        "--controller-directory-id",
        directory,
    )


def voters_in(cluster: Cluster) -> list[int]:
    line = status(cluster)["CurrentVoters"]
    return sorted(int(part.split(",")[0]) for part in line.split('"id": ')[1:])


def wait_for_voters(cluster: Cluster, wanted: list[int], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while (found := voters_in(cluster)) != wanted:
        assert time.monotonic() < deadline, f"voters {found}, wanted {wanted}"
        time.sleep(0.5)


def test_controllers_are_added_fail_over_restart_and_are_removed(tmp_path: Path) -> None:
    with Cluster(
        1, tmp_path, controllers=3, dynamic_voters=True, session_timeout_ms=SESSION_MS
    ) as cluster:
        first, second, third = cluster.controller_ids
        # one voter; the other controllers and the broker observe
        found = status(cluster)
        assert voters_in(cluster) == [first]
        assert f'"directoryId": "{directory_id(cluster, first)}"' in found["CurrentVoters"]
        for node_id in (1, second, third):
            assert f'"id": {node_id}' in found["CurrentObservers"]

        for node_id in (second, third):
            added = add_controller(cluster, node_id, tmp_path)
            assert added.returncode == 0, added.stderr
            assert f"Added controller {node_id} with directory id " in added.stdout
        found = status(cluster)
        assert voters_in(cluster) == sorted(cluster.controller_ids)
        for node_id in cluster.controller_ids:
            assert f'"directoryId": "{directory_id(cluster, node_id)}"' in found["CurrentVoters"]

        # adding one twice is refused, as on Kafka
        again = add_controller(cluster, second, tmp_path)
        assert again.returncode != 0
        assert "DuplicateVoterException" in again.stderr
        assert f"The voter id for ReplicaKey(id={second}, directoryId=Optional[" in again.stderr

        # kill -9 of the leader: another voter leads, and topics are still created
        leader = cluster.wait_for_active_controller()
        cluster.controllers[leader].kill()
        cluster.wait_for_active_controller(other_than=leader, timeout=20)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("after-failover", 1, 1)])["after-failover"].result(30)

        # the killed controller comes back a voter: the set is in its log
        cluster.controllers[leader].start()
        wait_for_voters(cluster, sorted(cluster.controller_ids))

        # remove-controller names the voter by id and directory id
        leader = cluster.wait_for_active_controller()
        removed = next(n for n in cluster.controller_ids if n != leader)
        wrong = remove_controller(cluster, removed, kafka_uuid(uuid.UUID(int=7)))
        assert wrong.returncode != 0
        assert "VoterNotFoundException" in wrong.stderr
        gone = remove_controller(cluster, removed, directory_id(cluster, removed))
        assert gone.returncode == 0, gone.stderr
        remaining = sorted(set(cluster.controller_ids) - {removed})
        assert voters_in(cluster) == remaining
        assert f'"id": {removed}' in status(cluster)["CurrentObservers"]

        # the leader removes itself: it resigns once that is committed, and the other
        # voter leads
        gone = remove_controller(cluster, leader, directory_id(cluster, leader))
        assert gone.returncode == 0, gone.stderr
        last = next(n for n in remaining if n != leader)
        deadline = time.monotonic() + 20
        while cluster.active_controller() != last:
            assert time.monotonic() < deadline, "the remaining voter does not lead"
            time.sleep(0.2)
        wait_for_voters(cluster, [last])
        admin.create_topics([NewTopic("after-removal", 1, 1)])["after-removal"].result(30)


def test_the_voter_records_are_kafkas(tmp_path: Path) -> None:
    """DumpLogSegments reads the bootstrap snapshot and the log's voter records."""
    with Cluster(1, tmp_path, controllers=2, dynamic_voters=True) as cluster:
        first, second = cluster.controller_ids
        added = add_controller(cluster, second, tmp_path)
        assert added.returncode == 0, added.stderr
        directory = cluster.controllers[first].data_dir / "__cluster_metadata-0"
        boot = run_tool(
            "org.apache.kafka.tools.DumpLogSegments",
            "--cluster-metadata-decoder",
            "--files",
            str(directory / "00000000000000000000-0000000000.checkpoint"),
        )
        assert boot.returncode == 0, boot.stderr
        assert "KRaftVersion" in boot.stdout and '"kRaftVersion":1' in boot.stdout
        assert f'"voterId":{first}' in boot.stdout
        segment = run_tool(
            "org.apache.kafka.tools.DumpLogSegments",
            "--cluster-metadata-decoder",
            "--files",
            str(directory / "00000000000000000000.log"),
        )
        assert segment.returncode == 0, segment.stderr
        voters = [line for line in segment.lines() if "KRaftVoters" in line]
        assert voters, segment.stdout[-3000:]
        assert f'"voterId":{second}' in voters[-1]
        assert f'"voterId":{first}' in voters[-1]

        # kraft.version 1 is finalized, on the brokers and on the controllers alike
        for where in (
            ("--bootstrap-server", cluster.bootstrap_servers),
            ("--bootstrap-controller", controllers_of(cluster)),
        ):
            described = features(*where, "describe")
            assert described.returncode == 0, described.stderr
            kraft = next(line for line in described.lines() if "Feature: kraft.version" in line)
            assert "FinalizedVersionLevel: 1" in kraft, kraft


def test_controllers_formatted_with_initial_controllers_elect_a_leader(tmp_path: Path) -> None:
    """--initial-controllers on each, as `kafka-storage format --initial-controllers`:
    all three are voters from the start, with the directory ids the list gives."""
    with Cluster(
        1, tmp_path, controllers=3, dynamic_voters=True, initial_controllers=True
    ) as cluster:
        assert voters_in(cluster) == sorted(cluster.controller_ids)
        found = status(cluster)["CurrentVoters"]
        for node_id in cluster.controller_ids:
            assert f'"directoryId": "{directory_id(cluster, node_id)}"' in found
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("first", 1, 1)])["first"].result(30)


def test_controllers_join_by_themselves_with_auto_join(tmp_path: Path) -> None:
    """controller.quorum.auto.join.enable: the observers add themselves."""
    with Cluster(
        1,
        tmp_path,
        controllers=3,
        dynamic_voters=True,
        overrides={"controller.quorum.auto.join.enable": "true"},
    ) as cluster:
        wait_for_voters(cluster, sorted(cluster.controller_ids))
        found = status(cluster)["CurrentVoters"]
        for node_id in cluster.controller_ids:
            assert f'"directoryId": "{directory_id(cluster, node_id)}"' in found


def test_a_voter_updates_its_endpoints(tmp_path: Path) -> None:
    """UpdateRaftVoter: the leader appends the voter's new endpoints at once; a voter
    named with another directory id is VOTER_NOT_FOUND."""
    with Cluster(1, tmp_path, controllers=2, dynamic_voters=True) as cluster:
        first, second = cluster.controller_ids
        assert add_controller(cluster, second, tmp_path).returncode == 0
        wait_for_voters(cluster, [first, second])
        leader = cluster.controllers[cluster.wait_for_active_controller()]
        port = cluster.controllers[second].port
        own = parse_kafka_uuid(directory_id(cluster, second))

        def update(directory: uuid.UUID) -> int:
            request = {
                "cluster_id": "odradek-cluster",
                "current_leader_epoch": -1,
                "voter_id": second,
                "voter_directory_id": directory,
                "listeners": [{"name": "CONTROLLER", "host": "localhost", "port": port}],
                "k_raft_version_feature": {"min_supported_version": 0, "max_supported_version": 1},
            }
            with WireClient(leader.bootstrap) as client:
                return int(client.call(UPDATE_RAFT_VOTER, 0, request).error_code)

        assert update(uuid.UUID(int=9)) == VOTER_NOT_FOUND
        assert update(own) == 0
        deadline = time.monotonic() + 20
        while f"CONTROLLER://localhost:{port}" not in status(cluster)["CurrentVoters"]:
            assert time.monotonic() < deadline, "the new endpoint is not in the voter set"
            time.sleep(0.5)


def test_a_controller_starts_from_a_directory_kafka_storage_formatted(tmp_path: Path) -> None:
    """`kafka-storage format --standalone` (Kafka's own StorageTool) writes the bootstrap
    snapshot and meta.properties; an Odradek controller started on that directory is
    the quorum's only voter, with the directory id Kafka gave it."""
    port = free_port("127.0.0.1")
    data = tmp_path / "controller"
    cluster_id = "MkU3OEVBNTcwNTJENDM2Qg"
    settings = {
        "process.roles": "controller",
        "node.id": "0",
        "controller.quorum.bootstrap.servers": f"127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "listeners": f"CONTROLLER://127.0.0.1:{port}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
    }
    properties = tmp_path / "controller.properties"
    properties.write_text(
        "".join(f"{k}={v}\n" for k, v in {**settings, "log.dirs": str(data)}.items())
    )
    formatted = run_tool(
        "kafka.tools.StorageTool",
        "format",
        "--cluster-id",
        cluster_id,
        "--config",
        str(properties),
        "--standalone",
    )
    assert formatted.returncode == 0, formatted.stderr
    kafkas_id = next(
        line.split("=", 1)[1]
        for line in (data / "meta.properties").read_text().splitlines()
        if line.startswith("directory.id=")
    )
    with Broker(
        data, host="127.0.0.1", port=port, overrides={**settings, "cluster.id": cluster_id}
    ) as controller:
        ran = run_tool(TOOL, "--bootstrap-controller", controller.bootstrap, "describe", "--status")
        assert ran.returncode == 0, ran.stderr
        assert f"ClusterId:              {cluster_id}" in ran.stdout
        assert f'[{{"id": 0, "directoryId": "{kafkas_id}", ' in ran.stdout
