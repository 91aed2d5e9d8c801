"""Kafka 4.4's kafka-topics --describe (the Java Admin client 4.4, which describes
topics with DescribeTopicPartitions) against Odradek and Apache Kafka 4.4: the same
lines on both, but for topic ids and node ids."""

from __future__ import annotations

import re

from helpers import kafka_tools
from helpers.both_brokers import on_both
from helpers.broker import Broker
from helpers.names import unique_name
from helpers.reference_kafka import ReferenceKafka


def _neutral(line: str, topic: str) -> str:
    # Kafka 4.4 formats its storage with eligible leader replicas on, which sets a
    # cluster-wide min.insync.replicas that DescribeConfigs then reports as set
    line = line.replace("min.insync.replicas=1,", "")
    line = re.sub(r"TopicId: \S+", "TopicId: <id>", line.replace(topic, "<topic>"))
    return re.sub(r"(Leader|Replicas|Isr|Elr|LastKnownElr): \d+", r"\1: <node>", line)


def test_describe_topics(shared_broker: Broker, kafka44: ReferenceKafka) -> None:
    def scenario(bootstrap: str) -> dict[str, list[str]]:
        topic = unique_name("cli-describe")
        created = kafka_tools.run(
            "kafka-topics",
            bootstrap,
            ["--create", "--topic", topic, "--partitions", "3", "--config", "retention.ms=60000"],
        )
        assert created.returncode == 0, created.stderr
        seen = {}
        for name, extra in (
            # a page of one partition per DescribeTopicPartitions: the cursor at work
            ("describe", ["--partition-size-limit-per-response", "1"]),
            ("at-min-isr", ["--at-min-isr-partitions"]),
            ("under-replicated", ["--under-replicated-partitions"]),
        ):
            described = kafka_tools.run(
                "kafka-topics", bootstrap, ["--describe", "--topic", topic, *extra]
            )
            assert described.returncode == 0, described.stderr
            seen[name] = [_neutral(line, topic) for line in described.lines()]
        return seen

    outcomes = on_both(scenario, shared_broker, kafka44)
    odradek, kafka = outcomes["odradek"], outcomes["kafka44"]
    assert odradek == kafka
    # the topic's line and one per partition; every partition is at min ISR (one replica,
    # min.insync.replicas=1) and none under-replicated
    assert len(odradek["describe"]) == 4 and "retention.ms=60000" in odradek["describe"][0]
    assert [line.split("\tPartition: ")[1][:1] for line in odradek["describe"][1:]] == list("012")
    assert odradek["at-min-isr"] == odradek["describe"][1:]
    assert odradek["under-replicated"] == []
