"""Scenarios of topic administration and metadata: CreateTopics, DeleteTopics,
CreatePartitions, Metadata, DescribeConfigs, IncrementalAlterConfigs, DeleteRecords,
ListOffsets."""

from __future__ import annotations

import uuid
from typing import Any

from conformance.harness import Run, scenario

PRODUCE, LIST_OFFSETS, METADATA = 0, 2, 3
CREATE_TOPICS, DELETE_TOPICS, DELETE_RECORDS = 19, 20, 21
DESCRIBE_CONFIGS, CREATE_PARTITIONS, INCREMENTAL_ALTER_CONFIGS = 32, 37, 44
TOPIC, BROKER = 2, 4


def topic(name: str, partitions: int = 1, replication: int = 1, **configs: str) -> dict[str, Any]:
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": replication,
        "assignments": [],
        "configs": [{"name": k.replace("_", "."), "value": v} for k, v in configs.items()],
    }


def create(run: Run, *topics: dict[str, Any], validate_only: bool = False) -> Any:
    body = {"topics": list(topics), "timeout": 10000, "validate_only": validate_only}
    return run.call(CREATE_TOPICS, 7, body)


def quietly_create(run: Run, name: str, partitions: int = 1, **configs: str) -> None:
    """A topic for the scenario, once the broker asked knows it (Kafka's brokers learn
    a new topic from the controller a moment after CreateTopics answers)."""
    body = {
        "topics": [topic(name, partitions, 1, **configs)],
        "timeout": 10000,
        "validate_only": False,
    }
    answer = run.quiet(CREATE_TOPICS, 7, body)
    assert answer.topics[0].error_code == 0, answer
    known = run.until(
        lambda: run.quiet(
            METADATA, 12, {"topics": [{"name": name}], "allow_auto_topic_creation": False}
        ),
        lambda answer: (
            answer.topics[0].error_code == 0
            and all(p.leader_id >= 0 for p in answer.topics[0].partitions)
        ),
    )
    assert known.topics[0].error_code == 0, known
    # and until its partitions take requests (Kafka's replica manager becomes their
    # leader a moment after its metadata names it)
    body = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [
            {
                "name": name,
                "partitions": [{"partition_index": i, "timestamp": -1} for i in range(partitions)],
            }
        ],
    }
    run.until(
        lambda: run.quiet(LIST_OFFSETS, 7, body),
        lambda answer: all(p.error_code == 0 for p in answer.topics[0].partitions),
    )


@scenario("create-topics.valid", "a new topic with configs, then the same name again")
def _create_valid(run: Run) -> None:
    create(run, topic(run.name("a"), 3, retention_ms="60000", cleanup_policy="compact"))
    create(run, topic(run.name("a"), 3))


@scenario("create-topics.invalid-names", "names Kafka refuses: empty-ish, too long, bad chars")
def _create_bad_names(run: Run) -> None:
    create(run, topic("."), topic(".."), topic("a" * 250), topic(run.name("bad name!")))
    create(run, topic(""))


@scenario("create-topics.unknown-config", "a config name Kafka does not know")
def _create_unknown_config(run: Run) -> None:
    create(run, topic(run.name("b"), 1, bad_option="1"))


@scenario("create-topics.bad-config-value", "a config value of the wrong type")
def _create_bad_value(run: Run) -> None:
    create(run, topic(run.name("c"), 1, retention_ms="abc"))
    create(run, topic(run.name("d"), 1, cleanup_policy="sometimes"))


@scenario("create-topics.bad-counts", "zero or negative partitions, replication past the brokers")
def _create_bad_counts(run: Run) -> None:
    create(run, topic(run.name("e"), 0), topic(run.name("f"), -2))
    create(run, topic(run.name("g"), 1, 3))


@scenario("create-topics.validate-only", "validate_only: answered, nothing created")
def _create_validate_only(run: Run) -> None:
    create(run, topic(run.name("h"), 2), validate_only=True)
    run.call(
        METADATA, 12, {"topics": [{"name": run.name("h")}], "allow_auto_topic_creation": False}
    )


@scenario("delete-topics.unknown", "deleting a topic that does not exist, by name")
def _delete_unknown(run: Run) -> None:
    run.call(DELETE_TOPICS, 6, {"topics": [{"name": run.name("nope")}], "timeout": 5000})


@scenario("delete-topics.valid", "deleting a topic, then asking for it")
def _delete_valid(run: Run) -> None:
    quietly_create(run, run.name("gone"))
    run.call(DELETE_TOPICS, 6, {"topics": [{"name": run.name("gone")}], "timeout": 10000})
    run.until(
        lambda: run.quiet(
            METADATA,
            12,
            {"topics": [{"name": run.name("gone")}], "allow_auto_topic_creation": False},
        ),
        lambda answer: answer.topics[0].error_code != 0,
    )
    run.call(
        METADATA, 12, {"topics": [{"name": run.name("gone")}], "allow_auto_topic_creation": False}
    )


@scenario("create-partitions.all-cases", "more, the same, fewer, of an unknown topic")
def _create_partitions(run: Run) -> None:
    quietly_create(run, run.name("p"), 2)

    def grow(name: str, count: int, validate_only: bool = False) -> None:
        body = {
            "topics": [{"name": name, "count": count, "assignments": None}],
            "timeout": 10000,
            "validate_only": validate_only,
        }
        run.call(CREATE_PARTITIONS, 3, body)

    grow(run.name("p"), 4, validate_only=True)
    grow(run.name("p"), 4)
    grow(run.name("p"), 4)
    grow(run.name("p"), 3)
    grow(run.name("unknown"), 2)


@scenario("metadata.unknown-topic", "an unknown topic without auto-creation, and a bad name")
def _metadata_unknown(run: Run) -> None:
    # one topic a request: Kafka answers several in the order of its own hash sets
    for name in (run.name("none"), "bad name!", run.name("x" * 250)):
        metadata(run, name)
    for name in ("bad name!", run.name("x" * 250)):
        metadata(run, name, create=True)


@scenario("metadata.auto-create", "an unknown topic asked for with auto-creation on")
def _metadata_auto_create(run: Run) -> None:
    metadata(run, run.name("auto"), create=True)


@scenario("metadata.topic", "a topic's partitions, replicas and ISR")
def _metadata_topic(run: Run) -> None:
    quietly_create(run, run.name("m"), 3)
    run.call(
        METADATA, 12, {"topics": [{"name": run.name("m")}], "allow_auto_topic_creation": False}
    )


def _describe_body(resource_type: int, name: str, keys: list[str] | None) -> dict[str, Any]:
    return {
        "resources": [
            {"resource_type": resource_type, "resource_name": name, "configuration_keys": keys}
        ],
        "include_synonyms": False,
        "include_documentation": False,
    }


def describe(run: Run, resource_type: int, name: str, keys: list[str] | None) -> Any:
    return run.call(DESCRIBE_CONFIGS, 4, _describe_body(resource_type, name, keys))


def metadata(run: Run, name: str, create: bool = False) -> Any:
    return run.call(METADATA, 12, {"topics": [{"name": name}], "allow_auto_topic_creation": create})


@scenario("describe-configs.topic", "a topic's retention and cleanup policy, one set")
def _describe_topic(run: Run) -> None:
    quietly_create(run, run.name("dc"))
    incremental(run, TOPIC, run.name("dc"), [("retention.ms", 0, "90000")])
    describe(run, TOPIC, run.name("dc"), ["retention.ms", "cleanup.policy", "max.message.bytes"])


@scenario("describe-configs.unknown", "an unknown topic, an unknown key, an unknown broker")
def _describe_unknown(run: Run) -> None:
    describe(run, TOPIC, run.name("none"), ["retention.ms"])
    quietly_create(run, run.name("dk"))
    describe(run, TOPIC, run.name("dk"), ["no.such.config"])
    # (its message names the broker's own id, which differs between any two brokers)
    other = run.quiet(DESCRIBE_CONFIGS, 4, _describe_body(BROKER, "77", ["log.retention.ms"]))
    run.record("unknown broker", other.results[0].error_code)


Resources = list[tuple[int, str, list[tuple[str, int, str | None]]]]


def incremental_body(resources: Resources, validate_only: bool = False) -> dict[str, Any]:
    """IncrementalAlterConfigs v1: (resource type, name, [(config, operation, value)])."""
    return {
        "resources": [
            {
                "resource_type": kind,
                "resource_name": name,
                "configs": [
                    {"name": n, "config_operation": op, "value": v} for n, op, v in configs
                ],
            }
            for kind, name, configs in resources
        ],
        "validate_only": validate_only,
    }


def incremental(
    run: Run,
    resource_type: int,
    name: str,
    configs: list[tuple[str, int, str | None]],
    validate_only: bool = False,
) -> Any:
    body = incremental_body([(resource_type, name, configs)], validate_only)
    return run.call(INCREMENTAL_ALTER_CONFIGS, 1, body)


@scenario("incremental-alter-configs.topic", "set, validate-only, bad names and values, delete")
def _incremental_topic(run: Run) -> None:
    quietly_create(run, run.name("ia"))
    name = run.name("ia")
    incremental(run, TOPIC, name, [("retention.ms", 0, "120000")])
    incremental(run, TOPIC, name, [("retention.ms", 0, "240000")], validate_only=True)
    incremental(run, TOPIC, name, [("no.such.config", 0, "1")])
    incremental(run, TOPIC, name, [("retention.ms", 0, "abc")])
    incremental(run, TOPIC, name, [("cleanup.policy", 2, "compact")])
    incremental(run, TOPIC, name, [("retention.ms", 1, None)])
    incremental(run, TOPIC, run.name("none"), [("retention.ms", 0, "1")])
    describe(run, TOPIC, name, ["retention.ms", "cleanup.policy"])


def list_offsets(run: Run, name: str, timestamp: int, partition: int = 0) -> Any:
    body = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [
            {"name": name, "partitions": [{"partition_index": partition, "timestamp": timestamp}]}
        ],
    }
    return run.call(LIST_OFFSETS, 7, body)


@scenario(
    "list-offsets.edges", "earliest and latest of an empty topic; unknown topic and partition"
)
def _list_offsets(run: Run) -> None:
    quietly_create(run, run.name("lo"))
    list_offsets(run, run.name("lo"), -2)
    list_offsets(run, run.name("lo"), -1)
    list_offsets(run, run.name("lo"), -3)  # the max timestamp
    list_offsets(run, run.name("lo"), 0, partition=5)
    list_offsets(run, run.name("none"), -1)


@scenario("delete-records.edges", "DeleteRecords past the end, to the end, of an unknown topic")
def _delete_records(run: Run) -> None:
    quietly_create(run, run.name("dr"))

    def delete(name: str, offset: int) -> None:
        body = {
            "topics": [{"name": name, "partitions": [{"partition_index": 0, "offset": offset}]}],
            "timeout": 5000,
        }
        run.call(DELETE_RECORDS, 2, body)

    delete(run.name("dr"), 5)
    delete(run.name("dr"), -1)
    delete(run.name("dr"), 0)
    delete(run.name("none"), 0)


def topic_id(run: Run, name: str) -> uuid.UUID:
    """The topic's id, as Metadata tells it (set-up, not compared)."""
    answer = run.quiet(3, 12, {"topics": [{"name": name}], "allow_auto_topic_creation": False})
    return answer.topics[0].topic_id  # type: ignore[no-any-return]
