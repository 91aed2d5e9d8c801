"""`__cluster_metadata` holds Kafka's own metadata records: Kafka 4.4's
`kafka-dump-log --cluster-metadata-decoder` (DumpLogSegments) reads a controller's log
record by record, and what it reads is what the cluster did."""

from __future__ import annotations

import base64
import json
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from helpers.acl_admin import AUTHORIZER
from helpers.kafka_tools import run_tool

from cluster.conftest import SESSION_MS
from odradek.testing import Cluster

DUMP_LOG = "org.apache.kafka.tools.DumpLogSegments"
DIRECTORIES_ONLY = {"partitionId", "topicId", "directories"}


def kafka_uuid(value: uuid.UUID) -> str:
    """As Kafka's tools print a Uuid."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


def dump_metadata_log(directory: Path) -> list[dict[str, Any]]:
    """Every record of the directory's metadata log, as Kafka's tool decodes it."""
    records = []
    for segment in sorted((directory / "__cluster_metadata-0").glob("*.log")):
        done = run_tool(DUMP_LOG, "--cluster-metadata-decoder", "--files", str(segment))
        assert done.returncode == 0, done.stderr
        lines = [line for line in done.stdout.splitlines() if line.startswith("| offset:")]
        for line in lines:
            offset = int(line.split()[2])
            if " payload: " not in line:  # a control record: the quorum's own
                assert " LeaderChange: " in line, line
                records.append({"offset": offset, "type": "LEADER_CHANGE", "data": {}})
                continue
            payload = json.loads(line.split(" payload: ", 1)[1])
            records.append({"offset": offset, **payload})
    return records


def test_kafkas_tool_reads_the_metadata_log_as_the_cluster_wrote_it(tmp_path: Path) -> None:
    overrides = {"authorizer.class.name": AUTHORIZER, "super.users": "User:ANONYMOUS"}
    with Cluster(3, tmp_path, overrides=overrides, session_timeout_ms=SESSION_MS) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        topic = NewTopic("audited", 2, 3, config={"retention.ms": "600000"})
        for future in admin.create_topics([topic]).values():
            future.result(15)
        changed = ConfigResource(
            ResourceType.TOPIC,
            "audited",
            incremental_configs=[
                ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
                ConfigEntry(
                    "cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET
                ),
            ],
        )
        for future in admin.incremental_alter_configs([changed]).values():
            future.result(15)
        binding = AclBinding(
            ResourceType.TOPIC,
            "audited",
            ResourcePatternType.LITERAL,
            "User:alice",
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        )
        admin.create_acls([binding])[binding].result(15)
        removal = AclBindingFilter(
            ResourceType.TOPIC,
            "audited",
            ResourcePatternType.LITERAL,
            "User:alice",
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        )
        admin.delete_acls([removal])[removal].result(15)
        upsert = UserScramCredentialUpsertion(
            "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"pw"
        )
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(15)
        deletion = UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_512)
        for future in admin.alter_user_scram_credentials([deletion]).values():
            future.result(15)
        cluster.kill(3)  # fenced: out of every ISR, leaders move
        cluster.wait_for_isr("audited", 0, [1, 2])
        topic_id = kafka_uuid(cluster.metadata(["audited"]).topics[0].topic_id)
        for future in admin.delete_topics(["audited"]).values():
            future.result(15)
        time.sleep(0.5)  # the last records flushed to the segment

        records = dump_metadata_log(cluster.base_dir / "controller")

    by_type: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_type.setdefault(record["type"], []).append(record["data"])
    # a new cluster's first records: its finalized features, metadata.version among them
    first = next(r for r in records if r["type"] != "LEADER_CHANGE")
    assert first["type"] == "FEATURE_LEVEL_RECORD"
    levels = {r["name"]: r["featureLevel"] for r in by_type["FEATURE_LEVEL_RECORD"]}
    assert levels["metadata.version"] > 0
    controller = by_type["REGISTER_CONTROLLER_RECORD"][0]
    assert controller["controllerId"] == 0
    assert [e["name"] for e in controller["endPoints"]] == ["CONTROLLER"]
    registered = sorted(r["brokerId"] for r in by_type["REGISTER_BROKER_RECORD"])
    assert registered[:3] == [1, 2, 3]
    assert [r["name"] for r in by_type["TOPIC_RECORD"]] == ["audited"]
    assert by_type["TOPIC_RECORD"][0]["topicId"] == topic_id
    configs = [(r["name"], r["value"]) for r in by_type["CONFIG_RECORD"]]
    assert configs == [
        ("retention.ms", "600000"),
        ("cleanup.policy", "compact"),
        ("retention.ms", None),
    ]
    partitions = sorted(r["partitionId"] for r in by_type["PARTITION_RECORD"])
    assert partitions == [0, 1]
    assert all(sorted(r["replicas"]) == [1, 2, 3] for r in by_type["PARTITION_RECORD"])
    # each broker has one log directory: the controller places each replica in it at
    # creation, and no broker has to report it (no change of directories alone)
    log_dirs = {r["brokerId"]: r["logDirs"] for r in by_type["REGISTER_BROKER_RECORD"]}
    assert all(len(dirs) == 1 for dirs in log_dirs.values()), log_dirs
    for r in by_type["PARTITION_RECORD"]:
        assert r["directories"] == [log_dirs[b][0] for b in r["replicas"]], r
    reported = [r for r in by_type["PARTITION_CHANGE_RECORD"] if set(r) == DIRECTORIES_ONLY]
    assert reported == []
    # broker 3 fenced: a registration change, then each partition's ISR without it
    epoch = next(r["brokerEpoch"] for r in by_type["REGISTER_BROKER_RECORD"] if r["brokerId"] == 3)
    fenced = [r for r in by_type["BROKER_REGISTRATION_CHANGE_RECORD"] if r.get("fenced") == 1]
    assert [(r["brokerId"], r["brokerEpoch"]) for r in fenced] == [(3, epoch)]
    shrunk = [r for r in by_type["PARTITION_CHANGE_RECORD"] if 3 not in (r.get("isr") or [3])]
    assert sorted(r["partitionId"] for r in shrunk) == [0, 1]
    acl = by_type["ACCESS_CONTROL_ENTRY_RECORD"][0]
    assert (acl["principal"], acl["resourceName"], acl["operation"]) == ("User:alice", "audited", 3)
    assert by_type["REMOVE_ACCESS_CONTROL_ENTRY_RECORD"] == [{"id": acl["id"]}]
    assert by_type["USER_SCRAM_CREDENTIAL_RECORD"][0]["iterations"] == 8192
    assert by_type["REMOVE_USER_SCRAM_CREDENTIAL_RECORD"] == [{"name": "carol", "mechanism": 2}]
    assert by_type["REMOVE_TOPIC_RECORD"] == [{"topicId": topic_id}]
    offsets = [r["offset"] for r in records]
    assert offsets == sorted(offsets)
