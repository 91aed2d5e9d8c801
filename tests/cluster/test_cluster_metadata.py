"""What a cluster shares beyond the data: topic changes, manual replica assignments,
ACLs and SCRAM credentials made on one broker reach every broker."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from helpers.acl_admin import AUTHORIZER
from helpers.kafka_tools import run_tool
from helpers.wire import WireClient

from cluster.conftest import SESSION_MS, create_topic, read_all
from odradek.testing import Cluster


def test_topic_changes_reach_every_broker(cluster: Cluster) -> None:
    create_topic(cluster, "changing", partitions=2)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    resource = ConfigResource(
        ResourceType.TOPIC,
        "changing",
        incremental_configs=[
            ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(15)
    for future in admin.create_partitions([NewPartitions("changing", 4)]).values():
        future.result(15)

    def everywhere() -> bool:
        for broker in cluster.nodes.values():
            topics = {
                t["name"]: t for t in json.loads((broker.data_dir / "topics.json").read_text())
            }
            entry = topics.get("changing")
            if entry is None or entry["configs"] != {"retention.ms": "3600000"}:
                return False
            if entry["partitions"] != 4:
                return False
        return True

    deadline = time.monotonic() + 10
    while not everywhere():
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert len(cluster.metadata(["changing"]).topics[0].partitions) == 4
    for future in admin.delete_topics(["changing"]).values():
        future.result(15)
    deadline = time.monotonic() + 10
    while any(list(b.data_dir.glob("changing-*")) for b in cluster.nodes.values()):
        assert time.monotonic() < deadline, "replicas of a deleted topic stay"
        time.sleep(0.1)


def test_manual_replica_assignments_place_partitions_where_asked(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    placed = [[3, 1], [1, 2], [2, 3]]
    topic = NewTopic("placed", len(placed), replica_assignment=placed)
    for future in admin.create_topics([topic]).values():
        future.result(15)
    for future in admin.create_partitions([NewPartitions("placed", 4, [[2, 1]])]).values():
        future.result(15)
    placed.append([2, 1])
    partitions = admin.list_topics("placed", timeout=10).topics["placed"].partitions
    assert [partitions[i].replicas for i in range(4)] == placed
    assert [partitions[i].leader for i in range(4)] == [r[0] for r in placed]
    assert [sorted(partitions[i].isrs) for i in range(4)] == [sorted(r) for r in placed]

    def replicas_on_disk() -> list[list[int]]:
        return [
            sorted(n for n, b in cluster.nodes.items() if (b.data_dir / f"placed-{i}").is_dir())
            for i in range(4)
        ]

    deadline = time.monotonic() + 10
    while replicas_on_disk() != [sorted(r) for r in placed]:
        assert time.monotonic() < deadline, replicas_on_disk()
        time.sleep(0.1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(4):
        producer.produce("placed", f"to-{i}".encode(), partition=i)
    assert producer.flush(15) == 0
    assert [read_all(cluster, "placed", i, 1) for i in range(4)] == [
        [f"to-{i}".encode()] for i in range(4)
    ]
    refused = {
        "unknown-broker": NewTopic("unknown-broker", 1, replica_assignment=[[1, 9]]),
        "twice": NewTopic("twice", 1, replica_assignment=[[2, 2]]),
    }
    for name, future in admin.create_topics(list(refused.values())).items():
        with pytest.raises(KafkaException) as raised:
            future.result(15)
        assert raised.value.args[0].code() == KafkaError.INVALID_REPLICA_ASSIGNMENT, name
    grow = admin.create_partitions([NewPartitions("placed", 5, [[1, 2, 3]])])["placed"]
    with pytest.raises(KafkaException) as raised:
        grow.result(15)
    assert raised.value.args[0].code() == KafkaError.INVALID_REPLICA_ASSIGNMENT


def test_acls_and_scram_credentials_are_the_clusters(tmp_path: Path) -> None:
    overrides = {"authorizer.class.name": AUTHORIZER, "super.users": "User:ANONYMOUS"}
    with Cluster(3, tmp_path, overrides=overrides, session_timeout_ms=SESSION_MS) as cluster:
        # asked of one broker, kept by the controller, followed by every broker
        admin = AdminClient({"bootstrap.servers": cluster.node(1).bootstrap})
        binding = AclBinding(
            ResourceType.TOPIC,
            "orders",
            ResourcePatternType.LITERAL,
            "User:alice",
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        )
        assert admin.create_acls([binding])[binding].result(15) is None
        upsert = UserScramCredentialUpsertion(
            "alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"secret"
        )
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(15)

        def everywhere(text: str) -> bool:
            files = ("acls.json", "scram-credentials.json")
            return all(
                all(text in _read(broker.data_dir / name) for name in files)
                for broker in cluster.nodes.values()
            )

        deadline = time.monotonic() + 10
        while not everywhere("alice"):
            assert time.monotonic() < deadline, "the change did not reach every broker"
            time.sleep(0.1)
        other = AdminClient({"bootstrap.servers": cluster.node(3).bootstrap})
        found = other.describe_acls(
            AclBindingFilter(
                ResourceType.ANY,
                None,
                ResourcePatternType.ANY,
                None,
                None,
                AclOperation.ANY,
                AclPermissionType.ANY,
            )
        ).result(15)
        assert [(b.name, b.principal) for b in found] == [("orders", "User:alice")]
        # the controller lists them too, to Kafka's tool pointed at it
        listed = run_tool(
            "org.apache.kafka.tools.AclCommand",
            "--bootstrap-controller",
            cluster.controller.bootstrap,
            "--list",
        )
        assert listed.returncode == 0, listed.stdout + listed.stderr
        assert "name=orders" in listed.stdout and "principal=User:alice" in listed.stdout
        with WireClient(cluster.controller.bootstrap) as wire:
            described = wire.call(50, 0, {"users": None})
        assert described.error_code == 0
        assert [
            (r.user, [(int(c.mechanism), c.iterations) for c in r.credential_infos])
            for r in described.results
        ] == [("alice", [(1, 4096)])]
        # client quotas too: set through one broker, in every broker's copy, read on another
        quota = {
            "entity": [{"entity_type": "user", "entity_name": "alice"}],
            "ops": [{"key": "producer_byte_rate", "value": 4096.0, "remove": False}],
        }
        with WireClient(cluster.node(1).bootstrap) as wire:
            answer = wire.call(49, 1, {"entries": [quota], "validate_only": False})
        assert [entry.error_code for entry in answer.entries] == [0]
        deadline = time.monotonic() + 10
        while not all(
            "alice" in _read(broker.data_dir / "client-quotas.json")
            for broker in cluster.nodes.values()
        ):
            assert time.monotonic() < deadline, "the quota did not reach every broker"
            time.sleep(0.1)
        with WireClient(cluster.node(3).bootstrap) as wire:
            filters = [{"entity_type": "user", "match_type": 0, "match": "alice"}]
            answer = wire.call(48, 1, {"components": filters, "strict": True})
        assert [(v.key, v.value) for v in answer.entries[0].values] == [
            ("producer_byte_rate", 4096.0)
        ]
        removal = AclBindingFilter(
            ResourceType.TOPIC,
            "orders",
            ResourcePatternType.LITERAL,
            None,
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        assert len(other.delete_acls([removal])[removal].result(15)) == 1
        deadline = time.monotonic() + 10
        while any("alice" in _read(b.data_dir / "acls.json") for b in cluster.nodes.values()):
            assert time.monotonic() < deadline, "the removal did not reach every broker"
            time.sleep(0.1)


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""
