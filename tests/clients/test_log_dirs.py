"""Several log directories (`log.dirs`): partitions spread over them, DescribeLogDirs
per directory (kafka-python's admin client and Kafka's own kafka-log-dirs), restarts
and kill -9, a replica moved while a producer writes to it (AlterReplicaLogDirs), and
a directory that fails while the broker runs."""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers.broker import Broker, BrokerStartError
from helpers.kafka_tools import run_tool
from helpers.wire import WireClient
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient

from odradek.protocol.batch import build_batch

PRODUCE, LIST_OFFSETS, METADATA, ALTER_REPLICA_LOG_DIRS, DESCRIBE_LOG_DIRS = 0, 2, 3, 34, 35
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


def wait_for(condition: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def where(bootstrap: str, topic: str, index: int) -> list[tuple[str, bool]]:
    """(log dir, is future) of each log the partition has, from DescribeLogDirs."""
    return sorted(
        (log_dir, info["partitions"][(topic, index)][2])
        for log_dir, info in describe(bootstrap).items()
        if (topic, index) in info["partitions"]
    )


def test_a_replica_moves_while_a_producer_writes(tmp_path: Path, unique_topic: str) -> None:
    dirs = [tmp_path / "dir0", tmp_path / "dir1"]
    first, second = (str(d.absolute()) for d in dirs)
    broker = Broker(
        dirs[0],
        log_dir=tmp_path,
        faults=True,
        overrides={"log.segment.bytes": 1 << 20},
        extra_args=["--data-dir", f"{dirs[0]},{dirs[1]}"],
    )
    topic = unique_topic
    with broker:
        with WireClient(broker.bootstrap) as client:
            client.create_topic(topic, 1)
        assert where(broker.bootstrap, topic, 0) == [(first, False)]
        acked: list[bytes] = []
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=2)
        for i in range(3000):  # three segments
            producer.send(topic, b"%06d" % i + b"x" * 1000).add_callback(
                lambda meta, i=i: acked.append(b"%06d" % i)
            )
        producer.flush(15)
        stop = threading.Event()

        def write() -> None:
            i = 3000
            while not stop.is_set():
                value = b"%06d" % i
                producer.send(topic, value).add_callback(lambda meta, v=value: acked.append(v))
                i += 1
                time.sleep(0.001)
            producer.flush(15)

        writer = threading.Thread(target=write)
        writer.start()
        try:
            with broker.faults.pause_fetching(topic, 0, duration_ms=60_000):
                assert alter(broker.bootstrap, {(topic, 0): second}) == {(topic, 0): 0}
                # the copy waits: the future replica shows, behind the current one
                moving = describe(broker.bootstrap)
                assert moving[first]["partitions"][(topic, 0)][2] is False
                size, lag, future = moving[second]["partitions"][(topic, 0)]
                assert future is True and lag >= 3000
                assert [p.name for p in dirs[1].iterdir() if p.name.endswith("-future")]
                # the same target again changes nothing
                assert alter(broker.bootstrap, {(topic, 0): second}) == {(topic, 0): 0}
                time.sleep(0.3)
            wait_for(lambda: where(broker.bootstrap, topic, 0) == [(second, False)])
            time.sleep(0.3)  # records written after the move
        finally:
            stop.set()
            writer.join()
        producer.close()
        assert len(acked) > 3000
        assert not (dirs[0] / f"{topic}-0").exists()
        wait_for(lambda: not [p for p in dirs[0].iterdir() if p.name.startswith(topic)])
        expected = sorted(acked)  # (acknowledged in the order sent: one partition)
        assert [v[:6] for v in read(broker.bootstrap, topic, 0)] == expected
        # a replica that is not here yet: its directory is remembered for its creation
        later = f"{topic}-later"
        assert alter(broker.bootstrap, {(later, 0): second}) == {
            (later, 0): UNKNOWN_TOPIC_OR_PARTITION
        }
        with WireClient(broker.bootstrap) as client:
            client.create_topic(later, 2)
        assert where(broker.bootstrap, later, 0) == [(second, False)]
        assert where(broker.bootstrap, later, 1) == [(first, False)]  # the fewest
        assert alter(broker.bootstrap, {(topic, 0): "dir0"}) == {(topic, 0): LOG_DIR_NOT_FOUND}
        broker.stop()
        broker.start()
        assert where(broker.bootstrap, topic, 0) == [(second, False)]
        assert [v[:6] for v in read(broker.bootstrap, topic, 0)] == expected


def metadata_partitions(bootstrap: str, topic: str) -> dict[int, tuple[int, int, list[int]]]:
    """partition -> (error, leader, offline replicas)"""
    with WireClient(bootstrap) as client:
        answer = client.call(
            METADATA,
            12,
            {
                "topics": [{"name": topic, "topic_id": None}],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )
    (found,) = answer.topics
    return {
        p.partition_index: (p.error_code, p.leader_id, list(p.offline_replicas))
        for p in found.partitions
    }


def produce_one(bootstrap: str, topic: str, index: int) -> int:
    records = build_batch([(None, b"v")], timestamp=int(time.time() * 1000))
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout": 10000,
        "topic_data": [{"name": topic, "partition_data": [{"index": index, "records": records}]}],
    }
    with WireClient(bootstrap) as client:
        answer = client.call(PRODUCE, 9, body)
    return int(answer.responses[0].partition_responses[0].error_code)


def list_offset(bootstrap: str, topic: str, index: int) -> tuple[int, int]:
    body = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [{"name": topic, "partitions": [{"partition_index": index, "timestamp": -1}]}],
    }
    with WireClient(bootstrap) as client:
        answer = client.call(LIST_OFFSETS, 7, body)
    found = answer.topics[0].partitions[0]
    return int(found.error_code), int(found.offset)


def test_a_failed_directory_takes_only_its_partitions_offline(
    tmp_path: Path, unique_topic: str
) -> None:
    broker, dirs = start(tmp_path, 2)
    first, second = (str(d.absolute()) for d in dirs)
    with broker:
        with WireClient(broker.bootstrap) as client:
            client.create_topic(unique_topic, 2)
        assert where(broker.bootstrap, unique_topic, 1) == [(second, False)]
        assert produce_one(broker.bootstrap, unique_topic, 0) == 0
        assert produce_one(broker.bootstrap, unique_topic, 1) == 0
        # the second directory goes away; a file takes its place (as root, chmod stops nothing)
        shutil.rmtree(dirs[1])
        dirs[1].write_text("not a directory")
        wait_for(lambda: metadata_partitions(broker.bootstrap, unique_topic)[1][0] != 0)
        assert metadata_partitions(broker.bootstrap, unique_topic) == {
            0: (0, 0, []),
            1: (LEADER_NOT_AVAILABLE, -1, [0]),
        }
        assert produce_one(broker.bootstrap, unique_topic, 1) == STORAGE_ERROR
        assert list_offset(broker.bootstrap, unique_topic, 1)[0] == STORAGE_ERROR
        described = describe(broker.bootstrap)
        assert described[second] == {
            "error": STORAGE_ERROR,
            "partitions": {},
            "total": -1,
            "usable": -1,
        }
        assert described[first]["error"] == 0
        assert alter(broker.bootstrap, {(unique_topic, 0): second}) == {
            (unique_topic, 0): STORAGE_ERROR
        }
        # the other directory serves on, and takes every new partition
        assert produce_one(broker.bootstrap, unique_topic, 0) == 0
        assert list_offset(broker.bootstrap, unique_topic, 0) == (0, 2)
        with WireClient(broker.bootstrap) as client:
            client.create_topic(f"{unique_topic}-new", 2)
        assert where(broker.bootstrap, f"{unique_topic}-new", 1) == [(first, False)]
        assert broker.is_running()
        lines = [line for line in broker.log_text().splitlines() if "log directory offline" in line]
        assert len(lines) == 1 and second in lines[0], lines
        # a restart with the directory still broken: the same
        broker.stop()
        broker.start()
        assert metadata_partitions(broker.bootstrap, unique_topic)[1] == (
            LEADER_NOT_AVAILABLE,
            -1,
            [0],
        )
        assert list_offset(broker.bootstrap, unique_topic, 0) == (0, 2)
        # a directory there again (empty: the partition's files went with the old one)
        broker.stop()
        dirs[1].unlink()
        dirs[1].mkdir()
        broker.start()
        assert list_offset(broker.bootstrap, unique_topic, 1) == (0, 0)


def test_the_first_directory_failing_stops_the_broker(tmp_path: Path, unique_topic: str) -> None:
    broker, dirs = start(tmp_path, 2)
    with broker:
        shutil.rmtree(dirs[0])
        dirs[0].write_text("not a directory")
        wait_for(lambda: not broker.is_running())
        assert broker.proc is not None and broker.proc.returncode == 1
        assert "shutting down: the first log directory" in broker.log_text()
