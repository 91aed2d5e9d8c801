"""Scenarios of topic administration beyond scenarios_topics.py: Metadata (every
topic, topic ids, authorized operations, an internal topic), CreateTopics (replica
assignments, a name twice, null config values), DeleteTopics by id, CreatePartitions
with assignments, DeleteRecords."""

from __future__ import annotations

import uuid
from typing import Any

from conformance.harness import Run, scenario
from conformance.scenarios_data import batch, produce
from conformance.scenarios_topics import (
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_RECORDS,
    DELETE_TOPICS,
    METADATA,
    quietly_create,
    topic,
)

FIND_COORDINATOR = 10
NODE = 0  # both brokers of the default pair are node 0


def without_configs(answer: Any) -> dict[str, Any]:
    """A CreateTopics answer but for the configs of the topics made (the list differs;
    create-topics.valid compares it)."""
    return {
        "topics": [
            {
                "name": t.name,
                "error_code": t.error_code,
                "error_message": t.error_message,
                "num_partitions": t.num_partitions,
                "replication_factor": t.replication_factor,
            }
            for t in answer.topics
        ]
    }


def create(run: Run, *topics: dict[str, Any], validate_only: bool = False) -> Any:
    body = {"topics": list(topics), "timeout": 10000, "validate_only": validate_only}
    return run.call(CREATE_TOPICS, 7, body, view=without_configs)


def assigned(name: str, *replicas: list[int]) -> dict[str, Any]:
    """A topic with its replicas given: one list of broker ids per partition."""
    return {
        **topic(name, -1, -1),
        "assignments": [
            {"partition_index": index, "broker_ids": brokers}
            for index, brokers in enumerate(replicas)
        ],
    }


def metadata(run: Run, *names: str, **fields: Any) -> Any:
    body = {"topics": [{"name": n} for n in names], "allow_auto_topic_creation": False}
    return run.call(METADATA, 13, body | fields)


def until_known(run: Run, name: str, partitions: int = 1) -> Any:
    """Metadata of the topic once every partition has its leader."""
    return run.until(
        lambda: run.quiet(
            METADATA, 12, {"topics": [{"name": name}], "allow_auto_topic_creation": False}
        ),
        lambda answer: (
            answer.topics[0].error_code == 0
            and len(answer.topics[0].partitions) == partitions
            and all(p.leader_id >= 0 for p in answer.topics[0].partitions)
        ),
    )


@scenario("metadata.all-topics", "every topic (null), none (empty list), v0's every topic")
def _metadata_all(run: Run) -> None:
    quietly_create(run, run.name("a"), 2)
    quietly_create(run, run.name("b"))

    def own(answer: Any) -> list[Any]:
        return sorted(
            (t.error_code, t.name, getattr(t, "is_internal", None), len(t.partitions))
            for t in answer.topics
            if t.name.startswith(run.prefix)
        )

    run.call(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False}, view=own)
    run.call(METADATA, 12, {"topics": [], "allow_auto_topic_creation": False})
    run.call(METADATA, 0, {"topics": []}, view=own)
    run.call(METADATA, 1, {"topics": None}, view=own)


@scenario("metadata.topic-ids", "topics asked for by id: known, unknown, deleted")
def _metadata_ids(run: Run) -> None:
    quietly_create(run, run.name("i"), 2)
    known = until_known(run, run.name("i"), 2).topics[0].topic_id
    body = {"topics": [{"name": None, "topic_id": known}], "allow_auto_topic_creation": False}
    run.call(METADATA, 13, body)
    unknown = {"name": None, "topic_id": uuid.uuid4()}
    run.call(METADATA, 13, {"topics": [unknown], "allow_auto_topic_creation": False})
    run.quiet(DELETE_TOPICS, 6, {"topics": [{"name": run.name("i")}], "timeout": 10000})
    run.until(
        lambda: run.quiet(METADATA, 12, body),
        lambda answer: answer.topics[0].error_code != 0,
    )
    run.call(METADATA, 13, body)


@scenario("metadata.authorized-operations", "a topic's and the cluster's operations, no ACLs")
def _metadata_operations(run: Run) -> None:
    quietly_create(run, run.name("o"))
    asked = {"include_topic_authorized_operations": True}
    answer = metadata(run, run.name("o"), **asked)
    run.record("topic operations", answer.topics[0].topic_authorized_operations)
    answer = metadata(run, run.name("o"))
    run.record("not asked", answer.topics[0].topic_authorized_operations)
    body = {
        "topics": [{"name": run.name("o")}],
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": True,
        "include_topic_authorized_operations": True,
    }
    answer = run.call(METADATA, 10, body)
    run.record("cluster operations", answer.cluster_authorized_operations)


@scenario("metadata.internal-topic", "__consumer_offsets, once a group coordinator is asked for")
def _metadata_internal(run: Run) -> None:
    find = {"key_type": 0, "coordinator_keys": [run.name("g")]}
    run.until(
        lambda: run.quiet(FIND_COORDINATOR, 4, find),
        lambda answer: answer.coordinators[0].error_code == 0,
    )

    def summary(answer: Any) -> list[Any]:
        return [
            (
                t.error_code,
                t.name,
                t.is_internal,
                len(t.partitions),
                sorted({(p.error_code, len(p.replica_nodes)) for p in t.partitions}),
            )
            for t in answer.topics
        ]

    run.call(
        METADATA,
        12,
        {"topics": [{"name": "__consumer_offsets"}], "allow_auto_topic_creation": False},
        view=summary,
    )
    create(run, topic("__consumer_offsets"))


@scenario("create-topics.assignments", "replicas given by hand, valid and not")
def _create_assignments(run: Run) -> None:
    create(run, assigned(run.name("a"), [NODE], [NODE]))
    until_known(run, run.name("a"), 2)
    metadata(run, run.name("a"))
    create(
        run,
        assigned(run.name("b"), [7]),  # no such broker
        assigned(run.name("c"), [NODE, NODE]),  # a broker twice
        assigned(run.name("d"), []),  # no replica
        {**assigned(run.name("e"), [NODE]), "num_partitions": 1},
        {**assigned(run.name("f"), [NODE]), "replication_factor": 1},
    )
    gap = assigned(run.name("g"), [NODE], [NODE])
    gap["assignments"][1]["partition_index"] = 2
    create(run, gap)
    create(run, assigned(run.name("h"), [NODE], [NODE]), validate_only=True)


@scenario("create-topics.twice-and-null-configs", "a name twice in one request, null values")
def _create_twice(run: Run) -> None:
    create(run, topic(run.name("a")), topic(run.name("a"), 2), topic(run.name("b")))
    nulls = topic(run.name("c"))
    nulls["configs"] = [{"name": "retention.ms", "value": None}]
    create(run, nulls)
    nulls = topic(run.name("d"))
    nulls["configs"] = [{"name": "no.such.config", "value": None}]
    create(run, nulls)


@scenario("create-topics.defaults", "partitions and replication factor -1: the broker's")
def _create_defaults(run: Run) -> None:
    create(run, topic(run.name("a"), -1, -1))
    create(run, topic(run.name("b"), -1, 1), topic(run.name("c"), 2, -1))
    create(run, topic(run.name("d"), -1, -2), topic(run.name("e"), -3, -1))


def delete_by_id(run: Run, *ids: uuid.UUID, timeout: int = 10000) -> Any:
    body = {"topics": [{"name": None, "topic_id": i} for i in ids], "timeout": timeout}
    return run.call(DELETE_TOPICS, 6, body)


@scenario("delete-topics.by-id", "a topic deleted by id; unknown and repeated ids")
def _delete_by_id(run: Run) -> None:
    quietly_create(run, run.name("x"))
    topic_id = until_known(run, run.name("x")).topics[0].topic_id
    delete_by_id(run, topic_id)
    run.until(
        lambda: run.quiet(
            METADATA, 12, {"topics": [{"name": run.name("x")}], "allow_auto_topic_creation": False}
        ),
        lambda answer: answer.topics[0].error_code != 0,
    )
    delete_by_id(run, topic_id)
    delete_by_id(run, uuid.uuid4())


@scenario("delete-topics.names-and-ids", "both a name and an id; a name twice; nothing named")
def _delete_mixed(run: Run) -> None:
    quietly_create(run, run.name("y"))
    topic_id = until_known(run, run.name("y")).topics[0].topic_id
    both = {"name": run.name("y"), "topic_id": topic_id}
    run.call(DELETE_TOPICS, 6, {"topics": [both], "timeout": 10000})
    twice = [{"name": run.name("none")}, {"name": run.name("none")}]
    run.call(DELETE_TOPICS, 6, {"topics": twice, "timeout": 10000})
    run.call(DELETE_TOPICS, 6, {"topics": [{"name": None, "topic_id": None}], "timeout": 1000})
    run.call(DELETE_TOPICS, 6, {"topics": [], "timeout": 1000})


def grow(
    run: Run,
    name: str,
    count: int,
    assignments: list[list[int]] | None,
    validate_only: bool = False,
) -> Any:
    topics = [
        {
            "name": name,
            "count": count,
            "assignments": None
            if assignments is None
            else [{"broker_ids": brokers} for brokers in assignments],
        }
    ]
    body = {"topics": topics, "timeout": 10000, "validate_only": validate_only}
    return run.call(CREATE_PARTITIONS, 3, body)


@scenario("create-partitions.assignments", "new partitions placed by hand, valid and not")
def _create_partitions_assigned(run: Run) -> None:
    name = run.name("p")
    quietly_create(run, name)
    grow(run, name, 3, [[NODE]], validate_only=True)  # one list for two new partitions
    grow(run, name, 3, [[NODE], [NODE], [NODE]])
    grow(run, name, 3, [[7], [7]])
    grow(run, name, 3, [[NODE, NODE], [NODE, NODE]])
    grow(run, name, 3, [[], []])
    grow(run, name, 3, [[NODE], [NODE]], validate_only=True)
    grow(run, name, 3, [[NODE], [NODE]])
    until_known(run, name, 3)
    metadata(run, name)


@scenario("create-partitions.twice", "a topic twice in one request; zero and negative counts")
def _create_partitions_twice(run: Run) -> None:
    name = run.name("q")
    quietly_create(run, name)
    item = {"name": name, "count": 2, "assignments": None}
    body = {"topics": [item, item], "timeout": 10000, "validate_only": False}
    run.call(CREATE_PARTITIONS, 3, body)
    grow(run, name, 0, None)
    grow(run, name, -1, None)


def delete_records(run: Run, name: str, *offsets: tuple[int, int]) -> Any:
    partitions = [{"partition_index": p, "offset": offset} for p, offset in offsets]
    body = {"topics": [{"name": name, "partitions": partitions}], "timeout": 5000}
    return run.call(DELETE_RECORDS, 2, body, view=sorted_partitions)


def sorted_partitions(answer: Any) -> list[dict[str, Any]]:
    """Kafka answers a topic's partitions in the order of a Java HashMap of them."""
    return [
        {
            "name": t.name,
            "partitions": sorted(
                (
                    {
                        "partition_index": p.partition_index,
                        "low_watermark": p.low_watermark,
                        "error_code": p.error_code,
                    }
                    for p in t.partitions
                ),
                key=lambda p: p["partition_index"],
            ),
        }
        for t in answer.topics
    ]


@scenario("delete-records.moves", "log start moved on, not back; several partitions at once")
def _delete_records_moves(run: Run) -> None:
    name = run.name("r")
    quietly_create(run, name, 2)
    for _ in range(3):
        produce(run, name, batch(2), partition=0)
    produce(run, name, batch(1), partition=1)
    delete_records(run, name, (0, 3))
    delete_records(run, name, (0, 1))
    delete_records(run, name, (0, 6), (1, -1))
    delete_records(run, name, (0, 7), (1, 0), (4, 0))
    delete_records(run, name, (0, -5))
