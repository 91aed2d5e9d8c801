"""A client that bootstraps from the controllers (an admin client with
`bootstrap.controllers`, `--bootstrap-controller`) is answered as Kafka 4.4's
controllers answer it: the same APIs at the same versions, topic changes checked as
Kafka's controller checks them, and DescribeConfigs."""

from __future__ import annotations

from typing import Any

from helpers.reference_kafka import ReferenceKafka
from helpers.wire import WireClient

from odradek.testing import Cluster

METADATA, CREATE_TOPICS, DELETE_TOPICS, API_VERSIONS = 3, 19, 20, 18
DESCRIBE_CONFIGS, CREATE_PARTITIONS, DESCRIBE_CLUSTER = 32, 37, 60
TOPIC, BROKER = 2, 4

# what Kafka 4.4's controller listener lists and Odradek's does not, or lists otherwise
# (the README's list of differences says why)
DIFFERENT = {
    33: ((0, 2), None),  # AlterConfigs, the legacy one
    41: ((1, 3), None),  # DescribeDelegationToken
    56: ((2, 3), (2, 2)),  # AlterPartition v3: topic ids with the ISR's broker epochs
    58: ((0, 0), None),  # Envelope: what Kafka's brokers forward in
    62: ((0, 4), (0, 3)),  # BrokerRegistration v4
    63: ((0, 2), (0, 1)),  # BrokerHeartbeat v2
}


def listed(bootstrap: str) -> dict[int, tuple[int, int]]:
    with WireClient(bootstrap) as client:
        answer = client.call(
            API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}
        )
    return {a.api_key: (a.min_version, a.max_version) for a in answer.api_keys}


def call(bootstrap: str, api_key: int, version: int, body: dict[str, Any]) -> Any:
    with WireClient(bootstrap, timeout=30) as client:
        return client.call(api_key, version, body)


def create(bootstrap: str, version: int, name: str, validate_only: bool = False, **k: Any) -> Any:
    topic = {
        "name": name,
        "num_partitions": k.get("partitions", -1),
        "replication_factor": k.get("factor", -1),
        "configs": [{"name": n, "value": v} for n, v in k.get("configs", {}).items()],
    }
    body = {"topics": [topic], "timeout": 15000, "validate_only": validate_only}
    return call(bootstrap, CREATE_TOPICS, version, body).topics[0]


def exists(bootstrap: str, name: str) -> bool:
    body = {"topics": [{"name": name}], "allow_auto_topic_creation": False}
    answer = call(bootstrap, METADATA, 12, body)
    return answer.topics[0].error_code == 0


def test_the_controller_listener_lists_what_kafkas_lists(
    cluster: Cluster, kafka44: ReferenceKafka
) -> None:
    ours = listed(cluster.controller.bootstrap)
    kafkas = listed(f"127.0.0.1:{kafka44.controller_port}")
    differences = {
        key: (kafkas.get(key), ours.get(key))
        for key in set(ours) | set(kafkas)
        if ours.get(key) != kafkas.get(key)
    }
    assert differences == DIFFERENT


def test_topic_changes_on_the_controllers_are_checked_as_kafkas(
    cluster: Cluster, kafka44: ReferenceKafka
) -> None:
    brokers = {"odradek": cluster.nodes[1].bootstrap, "kafka": kafka44.bootstrap}
    controllers = {
        "odradek": cluster.controller.bootstrap,
        "kafka": f"127.0.0.1:{kafka44.controller_port}",
    }
    seen: dict[str, list[Any]] = {}
    for name, at in controllers.items():
        topic = "through-the-controller"  # (two clusters: the same name on both)
        answers = seen[name] = []
        bad = create(at, 2, "bad name!")
        answers.append(("bad name", bad.error_code))
        bad_config = create(at, 7, topic, True, configs={"retention.ms": "soon"})
        answers.append(("bad config", bad_config.error_code))
        checked = create(at, 7, topic, True)
        answers.append(("validate only", checked.error_code, exists(brokers[name], topic)))
        made = create(at, 4, topic)  # -1: the defaults
        answers.append(("created", made.error_code))
        again = create(at, 7, topic, partitions=1, factor=1)
        answers.append(("again", again.error_code, again.error_message))
        grow = {"topics": [{"name": topic, "count": 5, "assignments": None}], "timeout": 15000}
        grown = call(at, CREATE_PARTITIONS, 0, {**grow, "validate_only": True}).results[0]
        answers.append(("grow, validate only", grown.error_code))
        described = call(
            at,
            DESCRIBE_CONFIGS,
            4,
            {
                "resources": [
                    {"resource_type": TOPIC, "resource_name": topic, "configuration_keys": None},
                    {"resource_type": TOPIC, "resource_name": "nope", "configuration_keys": None},
                ],
                "include_synonyms": False,
                "include_documentation": False,
            },
        ).results
        names = {c.name for c in described[0].configs}
        answers.append(("describe", described[0].error_code, "retention.ms" in names))
        answers.append(("describe unknown", described[1].error_code))
        by_name = {"topic_names": [topic], "timeout": 15000}
        gone = call(at, DELETE_TOPICS, 1, by_name).responses[0]
        answers.append(("deleted", gone.error_code))
        twice = call(at, DELETE_TOPICS, 1, by_name).responses[0]
        answers.append(("deleted twice", twice.error_code))
        remade = create(at, 7, topic, partitions=1, factor=1)
        by_id = {"topics": [{"name": None, "topic_id": remade.topic_id}], "timeout": 15000}
        for attempt in ("deleted by id", "deleted by id twice"):
            gone = call(at, DELETE_TOPICS, 6, by_id).responses[0]
            answers.append((attempt, gone.error_code, gone.name))
        v0 = call(at, DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": False})
        answers.append(("describe cluster v0", v0.error_code))
    assert seen["odradek"] == seen["kafka"]
    assert seen["odradek"][2] == ("validate only", 0, False)
    assert seen["odradek"][3] == ("created", 0)


def test_a_controller_describes_its_own_settings(cluster: Cluster) -> None:
    controller = cluster.controller
    node = 0  # the cluster's controller
    for name, code in ((str(node), 0), ("77", 42)):
        result = call(
            controller.bootstrap,
            DESCRIBE_CONFIGS,
            4,
            {
                "resources": [
                    {
                        "resource_type": BROKER,
                        "resource_name": name,
                        "configuration_keys": ["process.roles", "node.id"],
                    }
                ],
                "include_synonyms": False,
                "include_documentation": False,
            },
        ).results[0]
        assert result.error_code == code, result
        if code == 0:
            values = {c.name: c.value for c in result.configs}
            assert values == {"process.roles": "controller", "node.id": str(node)}
