"""Round trips and admin operations through the Apache Kafka Java client 4.4, each
scenario run against Odradek and Apache Kafka 4.4 at once (helpers/both_brokers.py): a
failure names the broker it happened on."""

from __future__ import annotations

import hashlib
import os
import time
from typing import Any

import pytest
from helpers import java
from helpers.both_brokers import on_both
from helpers.broker import Broker
from helpers.java import decode_bytes, record_line
from helpers.reference_kafka import ReferenceKafka

pytestmark = pytest.mark.timeout(240)

ONE_MIB = 1024 * 1024
BIG_TOPIC_LIMIT = 2 * ONE_MIB


@pytest.fixture(scope="module", autouse=True)
def _java_tool() -> None:
    java.command(["--help"])  # compile once (or skip / fail when the JDK or jars are missing)


def create_topic(
    bootstrap: str, topic: str, partitions: int = 1, **configs: object
) -> dict[str, Any]:
    args = ["--topic", topic, "--partitions", str(partitions)]
    for key, value in configs.items():
        args += ["--config", f"{key.replace('_', '.')}={value}"]
    return java.admin(bootstrap, "create-topic", *args).records[0]


def test_round_trip_keys_null_values_headers(
    shared_broker: Broker, kafka44: ReferenceKafka, unique_topic: str
) -> None:
    ts = int(time.time() * 1000) - 60_000
    sent = [
        record_line("k1", "v1", headers=[("h", "x"), ("h", "y"), ("none", None)]),
        record_line(None, "no key"),
        record_line("tombstone", None),
        record_line(b"\x00\xff\xfe", b"\x80\x81\x82"),
        record_line("", ""),
        record_line("ключ", "värde ✓", headers=[("ü", "ß")]),
        record_line("ts", "explicit timestamp", timestamp=ts),
    ]

    def scenario(bootstrap: str) -> list[dict[str, Any]]:
        create_topic(bootstrap, unique_topic)
        results = java.produce(bootstrap, unique_topic, records=sent).records
        assert [r["offset"] for r in results] == list(range(len(sent)))
        assert {r["partition"] for r in results} == {0}
        assert results[6]["timestamp"] == ts

        got = java.consume(bootstrap, unique_topic, until_end=True).records
        assert [r["offset"] for r in got] == list(range(len(sent)))
        for want, have in zip(sent, got, strict=True):
            assert decode_bytes(have["key"]) == decode_bytes(want["key"])
            assert decode_bytes(have["value"]) == decode_bytes(want["value"])
            assert [[k, decode_bytes(v)] for k, v in have["headers"]] == [
                [k, decode_bytes(v)] for k, v in want["headers"]
            ]
            assert have["timestamp_type"] == "CreateTime"
        # null and empty are different things
        assert got[2]["value"] is None and got[4]["value"] == "" and got[4]["key"] == ""
        assert got[1]["key"] is None
        assert got[6]["timestamp"] == ts
        return [{k: v for k, v in r.items() if k != "timestamp"} for r in got]

    outcomes = on_both(scenario, shared_broker, kafka44)
    assert outcomes["odradek"] == outcomes["kafka44"]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compression_round_trip(
    shared_broker: Broker, kafka44: ReferenceKafka, unique_topic: str, codec: str
) -> None:
    sent = [record_line(f"key-{i}", f"value-{i} " + "abc" * (i % 50)) for i in range(300)]

    def scenario(bootstrap: str) -> None:
        create_topic(bootstrap, unique_topic)
        results = java.produce(
            bootstrap, unique_topic, records=sent, compression=codec, linger_ms=50
        ).records
        assert sorted(r["offset"] for r in results) == list(range(300))
        got = java.consume(bootstrap, unique_topic, until_end=True).records
        assert [(r["key"], r["value"]) for r in got] == [(s["key"], s["value"]) for s in sent]
        assert [r["offset"] for r in got] == list(range(300))

    on_both(scenario, shared_broker, kafka44)


def test_one_mib_record(shared_broker: Broker, kafka44: ReferenceKafka, unique_topic: str) -> None:
    value = os.urandom(ONE_MIB)

    def scenario(bootstrap: str) -> None:
        create_topic(bootstrap, unique_topic, max_message_bytes=BIG_TOPIC_LIMIT)
        results = java.produce(
            bootstrap,
            unique_topic,
            records=[record_line("big", value), record_line("small", "after")],
            props={"max.request.size": BIG_TOPIC_LIMIT},
            linger_ms=0,
        ).records
        assert [r["offset"] for r in results] == [0, 1]
        got = java.consume(bootstrap, unique_topic, until_end=True).records
        assert len(got) == 2
        have = decode_bytes(got[0]["value"])
        assert have is not None and len(have) == ONE_MIB
        assert hashlib.sha256(have).digest() == hashlib.sha256(value).digest()
        assert got[1]["value"] == "after"

    on_both(scenario, shared_broker, kafka44)


def test_record_over_topic_limit_is_rejected(
    shared_broker: Broker, kafka44: ReferenceKafka, unique_topic: str
) -> None:
    def scenario(bootstrap: str) -> None:
        create_topic(bootstrap, unique_topic)  # max.message.bytes default 1048588
        result = java.produce(
            bootstrap,
            unique_topic,
            records=[record_line("big", os.urandom(ONE_MIB + 1000))],
            props={"max.request.size": BIG_TOPIC_LIMIT},
            check=False,
        )
        assert result.returncode != 0
        assert result.error_type == "RecordTooLargeException", result.describe()
        # nothing was stored
        latest = java.admin(
            bootstrap, "list-offsets", "--topic", unique_topic, "--spec", "latest"
        ).records
        assert latest[0]["offset"] == 0

    on_both(scenario, shared_broker, kafka44)


def test_list_offsets_by_time(
    shared_broker: Broker, kafka44: ReferenceKafka, unique_topic: str
) -> None:
    base = int(time.time() * 1000) - 3_600_000
    sent = [record_line(f"k{i}", f"v{i}", timestamp=base + i * 1000) for i in range(10)]
    specs = ["earliest", "latest", str(base + 2500), str(base), str(base + 9000)]
    specs += [str(base + 9001), "max-timestamp"]

    def scenario(bootstrap: str) -> None:
        create_topic(bootstrap, unique_topic)
        java.produce(bootstrap, unique_topic, records=sent)
        steps = [["list-offsets", "--topic", unique_topic, "--spec", spec] for spec in specs]
        found = [(x["offset"], x["timestamp"]) for (x,) in java.admin_steps(bootstrap, steps)]
        assert found == [
            (0, -1),  # earliest and latest: no timestamp
            (10, -1),
            (3, base + 3000),  # the first record at or after the time asked for
            (0, base),
            (9, base + 9000),
            (-1, -1),  # no such record
            (9, base + 9000),
        ]

        # the consumer's offsetsForTimes / beginningOffsets / endOffsets
        def for_times(timestamp: int) -> list[dict[str, Any]]:
            args = ["offsets-for-times", "--bootstrap", bootstrap, "--topic", unique_topic]
            return java.run([*args, "--timestamp", str(timestamp)]).records

        assert for_times(base + 4200) == [
            {
                "topic": unique_topic,
                "partition": 0,
                "offset": 5,
                "timestamp": base + 5000,
                "beginning": 0,
                "end": 10,
            }
        ]
        assert for_times(base + 10_000)[0]["offset"] is None

    on_both(scenario, shared_broker, kafka44)


def test_auto_offset_reset_earliest(
    shared_broker: Broker, kafka44: ReferenceKafka, unique_topic: str, unique_group: str
) -> None:
    def scenario(bootstrap: str) -> None:
        create_topic(bootstrap, unique_topic)
        java.produce(bootstrap, unique_topic, count=5)
        got = java.consume(
            bootstrap,
            unique_topic,
            group=unique_group,
            offset_reset="earliest",
            max_records=5,
            timeout_ms=20000,
        )
        assert [r["offset"] for r in got.records] == [0, 1, 2, 3, 4]
        assert [r["value"] for r in got.records] == [f"value-{i}" for i in range(5)]
        assigned = [e for e in got.events if e["event"] == "assigned" and e["partitions"]]
        assert assigned and assigned[0]["partitions"][0]["position"] == 0

    on_both(scenario, shared_broker, kafka44)


def test_auto_offset_reset_latest(
    shared_broker: Broker, kafka44: ReferenceKafka, unique_topic: str, unique_group: str
) -> None:
    def scenario(bootstrap: str) -> None:
        create_topic(bootstrap, unique_topic)
        java.produce(bootstrap, unique_topic, count=5)
        args = ["consume", "--bootstrap", bootstrap, "--topic", unique_topic]
        args += ["--group", unique_group, "--from", "latest", "--max-records", "3"]
        with java.background([*args, "--timeout-ms", "40000"]) as consumer:
            assigned = consumer.wait_for(
                lambda x: x.get("event") == "assigned" and bool(x["partitions"]), timeout=40
            )
            assert assigned["partitions"][0]["position"] == 5
            new = [record_line(f"new-{i}", f"new-{i}") for i in range(3)]
            java.produce(bootstrap, unique_topic, records=new)
            got = consumer.records(3, timeout=30)
        assert [r["offset"] for r in got] == [5, 6, 7]
        assert [r["value"] for r in got] == ["new-0", "new-1", "new-2"]

    on_both(scenario, shared_broker, kafka44)


def test_admin_topics_lifecycle(
    shared_broker: Broker, kafka44: ReferenceKafka, unique_topic: str
) -> None:
    t = unique_topic
    steps = [
        ["create-topic", "--topic", t, "--partitions", "3",
         "--config", "retention.ms=3600000", "--config", "cleanup.policy=compact"],
        ["list-topics"],
        ["describe-topics", "--topic", t],
        ["describe-configs", "--topic", t],
        ["create-topic", "--topic", t],
        ["delete-topic", "--topic", t],
    ]  # fmt: skip

    def scenario(bootstrap: str) -> dict[str, Any]:
        created, listed, (desc,), configs, again, deleted = java.admin_steps(bootstrap, steps)
        assert (created[0]["partitions"], created[0]["replication_factor"]) == (3, 1)
        assert t in {x["topic"] for x in listed}

        assert desc["internal"] is False
        assert [p["partition"] for p in desc["partitions"]] == [0, 1, 2]
        for p in desc["partitions"]:
            leader = p["leader"]
            assert leader is not None and f"{leader['host']}:{leader['port']}" == bootstrap
            assert p["replicas"] == [leader["id"]]
            assert p["isr"] == p["replicas"]

        cfg = {c["name"]: c for c in configs}
        assert cfg["retention.ms"]["value"] == "3600000"
        assert cfg["retention.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG"
        assert cfg["cleanup.policy"]["value"] == "compact"
        assert cfg["segment.bytes"]["value"] == "1073741824"
        assert cfg["segment.bytes"]["source"] in {"DEFAULT_CONFIG", "STATIC_BROKER_CONFIG"}
        assert cfg["max.message.bytes"]["value"] == "1048588"

        assert java.error_type(again) == "TopicExistsException", again
        assert deleted == [{"deleted": t}]
        deadline = time.monotonic() + 10
        while t in {x["topic"] for x in java.admin(bootstrap, "list-topics").records}:
            assert time.monotonic() < deadline, "deleted topic still listed after 10 s"
            time.sleep(0.5)
        gone = java.admin(bootstrap, "delete-topic", "--topic", t, check=False)
        assert gone.error_type == "UnknownTopicOrPartitionException", gone.describe()
        return {name: cfg[name]["value"] for name in ("retention.ms", "cleanup.policy")}

    outcomes = on_both(scenario, shared_broker, kafka44)
    assert outcomes["odradek"] == outcomes["kafka44"]


def test_alter_configs_incremental(
    shared_broker: Broker, kafka44: ReferenceKafka, unique_topic: str
) -> None:
    t = unique_topic
    steps = [
        ["create-topic", "--topic", t],
        ["alter-configs", "--topic", t, "--set", "retention.ms=1234567",
         "--set", "max.message.bytes=2000000"],
        ["describe-configs", "--topic", t],
        ["alter-configs", "--topic", t, "--delete", "retention.ms"],
        ["describe-configs", "--topic", t],
        ["alter-configs", "--topic", t, "--set", "no.such.config=1"],
    ]  # fmt: skip

    def scenario(bootstrap: str) -> None:
        _, _, set_, _, deleted, bad = java.admin_steps(bootstrap, steps)
        cfg = {c["name"]: c for c in set_}
        assert cfg["retention.ms"]["value"] == "1234567"
        assert cfg["retention.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG"
        assert cfg["max.message.bytes"]["value"] == "2000000"

        cfg = {c["name"]: c for c in deleted}
        assert cfg["retention.ms"]["value"] == "604800000"
        assert cfg["retention.ms"]["source"] != "DYNAMIC_TOPIC_CONFIG"
        assert cfg["max.message.bytes"]["value"] == "2000000"  # untouched by the delete

        assert java.error_type(bad) == "InvalidConfigurationException", bad

    on_both(scenario, shared_broker, kafka44)


def test_create_partitions(
    shared_broker: Broker, kafka44: ReferenceKafka, unique_topic: str
) -> None:
    t = unique_topic
    steps = [
        ["create-topic", "--topic", t],
        ["create-partitions", "--topic", t, "--total", "3"],
        ["describe-topics", "--topic", t],
        ["create-partitions", "--topic", t, "--total", "2"],
    ]

    def scenario(bootstrap: str) -> None:
        _, _, (desc,), shrink = java.admin_steps(bootstrap, steps)
        assert [p["partition"] for p in desc["partitions"]] == [0, 1, 2]
        assert java.error_type(shrink) == "InvalidPartitionsException", shrink

        res = java.produce(bootstrap, t, count=2, partition=2).records
        assert [(r["partition"], r["offset"]) for r in res] == [(2, 0), (2, 1)]

    on_both(scenario, shared_broker, kafka44)


def test_describe_cluster(shared_broker: Broker, kafka44: ReferenceKafka) -> None:
    def scenario(bootstrap: str) -> None:
        info = java.admin(bootstrap, "describe-cluster").records[0]
        assert info["cluster_id"]
        assert len(info["nodes"]) == 1
        node = info["nodes"][0]
        assert f"{node['host']}:{node['port']}" == bootstrap
        assert info["controller"] is not None

    on_both(scenario, shared_broker, kafka44)
