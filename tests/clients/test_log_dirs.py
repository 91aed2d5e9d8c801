"""Several log directories (`log.dirs`): partitions spread over them, DescribeLogDirs
per directory (kafka-python's admin client and Kafka's own kafka-log-dirs), restarts
and kill -9, a replica moved while a producer writes to it (AlterReplicaLogDirs), and
a directory that fails while the broker runs."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.broker import Broker, BrokerStartError
from helpers.kafka_tools import run_tool
from helpers.wire import WireClient
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient

DESCRIBE_LOG_DIRS, ALTER_REPLICA_LOG_DIRS, METADATA = 35, 34, 3
STORAGE_ERROR, LOG_DIR_NOT_FOUND, UNKNOWN_TOPIC_OR_PARTITION = 56, 57, 3
LEADER_NOT_AVAILABLE = 5


def start(tmp_path: Path, count: int) -> tuple[Broker, list[Path]]:
    dirs = [tmp_path / f"dir{i}" for i in range(count)]
    broker = Broker(dirs[0], log_dir=tmp_path, extra_args=["--data-dir", ",".join(map(str, dirs))])
    broker.start()
    return broker, dirs


@pytest.fixture
def three_dirs(tmp_path: Path) -> Iterator[tuple[Broker, list[Path]]]:
    broker, dirs = start(tmp_path, 3)
    with broker:
        yield broker, dirs


def describe(bootstrap: str, version: int = 4) -> dict[str, dict]:
    """log dir -> (error, {(topic, partition): (size, lag, is future)}, total, usable)"""
    with WireClient(bootstrap) as client:
        answer = client.call(DESCRIBE_LOG_DIRS, version, {"topics": None})
    assert answer.error_code == 0
    return {
        r.log_dir: {
            "error": r.error_code,
            "partitions": {
                (t.name, p.partition_index): (p.partition_size, p.offset_lag, p.is_future_key)
                for t in r.topics
                for p in t.partitions
            },
            "total": r.total_bytes,
            "usable": r.usable_bytes,
        }
        for r in answer.results
    }


def alter(bootstrap: str, moves: dict[tuple[str, int], str]) -> dict[tuple[str, int], int]:
    by_dir: dict[str, dict[str, list[int]]] = {}
    for (topic, index), path in moves.items():
        by_dir.setdefault(path, {}).setdefault(topic, []).append(index)
    body = {
        "dirs": [
            {"path": path, "topics": [{"name": t, "partitions": p} for t, p in topics.items()]}
            for path, topics in by_dir.items()
        ]
    }
    with WireClient(bootstrap) as client:
        answer = client.call(ALTER_REPLICA_LOG_DIRS, 2, body)
    return {
        (t.topic_name, p.partition_index): p.error_code
        for t in answer.results
        for p in t.partitions
    }


def produce(bootstrap: str, topic: str, partitions: int, count: int) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    for i in range(count):
        producer.send(topic, b"v%d" % i, partition=i % partitions)
    producer.flush(15)
    producer.close()


def read(bootstrap: str, topic: str, partition: int) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    tp = TopicPartition(topic, partition)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    end = consumer.end_offsets([tp])[tp]
    values: list[bytes] = []
    deadline = time.monotonic() + 20
    while consumer.position(tp) < end and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=200).values():
            values.extend(r.value for r in records)
    consumer.close()
    return values


def test_partitions_spread_over_the_directories(
    three_dirs: tuple[Broker, list[Path]], unique_topic: str
) -> None:
    broker, dirs = three_dirs
    with WireClient(broker.bootstrap) as client:
        client.create_topic(unique_topic, 6)
    produce(broker.bootstrap, unique_topic, 6, 60)
    # the fewest partitions first: two in each directory
    placed = {
        d: sorted(p.name for p in d.iterdir() if p.name.startswith(unique_topic)) for d in dirs
    }
    assert [len(names) for names in placed.values()] == [2, 2, 2], placed
    ids = set()
    for d in dirs:
        meta = dict(
            line.split("=", 1)
            for line in (d / "meta.properties").read_text().splitlines()
            if "=" in line and not line.startswith("#")
        )
        assert meta["node.id"] == "0" and meta["version"] == "1" and meta["cluster.id"]
        ids.add(meta["directory.id"])
    assert len(ids) == 3
    described = describe(broker.bootstrap)
    assert sorted(described) == sorted(str(d.absolute()) for d in dirs)
    for d in dirs:
        info = described[str(d.absolute())]
        assert info["error"] == 0 and info["total"] > 0 and 0 < info["usable"] <= info["total"]
        mine = {k: v for k, v in info["partitions"].items() if k[0] == unique_topic}
        assert {f"{t}-{i}" for t, i in mine} == set(placed[d])
        assert all(size > 0 and lag == 0 and not future for size, lag, future in mine.values())
    # kafka-python's admin client asks the same (DescribeLogDirs)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        answers = admin.describe_log_dirs()
    finally:
        admin.close()
    assert len(answers) == 1 and len(answers[0]["log_dirs"]) == 3
    # a restart finds each partition where it was; kill -9 too
    broker.stop()
    broker.start()
    assert describe(broker.bootstrap).keys() == described.keys()
    broker.kill()
    broker.start()
    after = describe(broker.bootstrap)
    for d in dirs:
        key = str(d.absolute())
        mine = {k for k in after[key]["partitions"] if k[0] == unique_topic}
        assert mine == {k for k in described[key]["partitions"] if k[0] == unique_topic}
    assert sorted(read(broker.bootstrap, unique_topic, 1)) == sorted(
        b"v%d" % i for i in range(1, 60, 6)
    )


def test_kafka_log_dirs_tool(three_dirs: tuple[Broker, list[Path]], unique_topic: str) -> None:
    broker, dirs = three_dirs
    with WireClient(broker.bootstrap) as client:
        client.create_topic(unique_topic, 3)
    produce(broker.bootstrap, unique_topic, 3, 30)
    done = run_tool(
        "org.apache.kafka.tools.LogDirsCommand",
        "--bootstrap-server",
        broker.bootstrap,
        "--describe",
        "--topic-list",
        unique_topic,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.lines()[-1])
    (one,) = answer["brokers"]
    assert sorted(d["logDir"] for d in one["logDirs"]) == sorted(str(d.absolute()) for d in dirs)
    for log_dir in one["logDirs"]:
        assert log_dir["error"] is None
        (partition,) = log_dir["partitions"]
        assert partition["size"] > 0 and partition["isFuture"] is False


def test_a_partition_in_two_directories_stops_the_start(tmp_path: Path, unique_topic: str) -> None:
    broker, dirs = start(tmp_path, 2)
    with broker:
        with WireClient(broker.bootstrap) as client:
            client.create_topic(unique_topic, 1)
        broker.stop()
        shutil.copytree(dirs[0] / f"{unique_topic}-0", dirs[1] / f"{unique_topic}-0")
        with pytest.raises(BrokerStartError):
            broker.start()
        assert "is found in both" in broker.log_text()


def test_default_settings_one_directory(tmp_path: Path, unique_topic: str) -> None:
    with Broker(tmp_path / "data") as broker:
        with WireClient(broker.bootstrap) as client:
            client.create_topic(unique_topic, 2)
        produce(broker.bootstrap, unique_topic, 2, 10)
        described = describe(broker.bootstrap)
        assert list(described) == [str((tmp_path / "data").absolute())]
        (info,) = described.values()
        assert {k for k in info["partitions"] if k[0] == unique_topic} == {
            (unique_topic, 0),
            (unique_topic, 1),
        }
        assert (tmp_path / "data" / "meta.properties").is_file()
        # the one directory is there already; another is not one of the broker's
        elsewhere = str(tmp_path / "elsewhere")
        answer = alter(
            broker.bootstrap,
            {(unique_topic, 0): str((tmp_path / "data").absolute()), (unique_topic, 1): elsewhere},
        )
        assert answer == {(unique_topic, 0): 0, (unique_topic, 1): LOG_DIR_NOT_FOUND}
