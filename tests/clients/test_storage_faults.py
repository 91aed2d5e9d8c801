"""A full disk: the request that hits it gets KAFKA_STORAGE_ERROR (Produce) or
NOT_COORDINATOR (the coordinators' appends, as Kafka maps it), the broker logs it
once in a while with the path and the cause and no traceback, nothing written half
is ever served, and once space is back writes succeed without a restart.

The data directory sits on a small tmpfs when the test may mount one (root);
otherwise, and for the coordinator cases, the broker's fault-injection point
ODRADEK_FULL_DISK_FLAG makes every segment append fail with ENOSPC while a flag
file exists."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from groups.wiregroup import commit, fetch
from helpers.broker import Broker
from helpers.topics import create_topic
from helpers.wire import WireClient
from transactions.txn_helpers import Wire

STORAGE_ERROR, NOT_COORDINATOR = 56, 16


@contextlib.contextmanager
def small_filesystem(where: Path, size_mb: int) -> Iterator[bool]:
    """A tmpfs of ``size_mb`` at ``where`` if this process may mount one (True)."""
    where.mkdir(parents=True, exist_ok=True)
    mounted = (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(where)],
            capture_output=True,
        ).returncode
        == 0
    )
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(where)], capture_output=True)


def fill(directory: Path, leave_bytes: int) -> Path:
    """A file that takes all but ``leave_bytes`` of the file system's free space."""
    filler = directory / "filler"
    free = shutil.disk_usage(directory).free
    with open(filler, "wb") as out:
        out.truncate(0)
        chunk = b"\0" * (1 << 20)
        remaining = max(free - leave_bytes, 0)
        while remaining > 0:
            out.write(chunk[: min(remaining, len(chunk))])
            remaining -= len(chunk)
    return filler


def produce(bootstrap: str, topic: str, count: int, size: int) -> tuple[list[bytes], list[int]]:
    """(acknowledged values, error codes of the failures); no retries."""
    acked: list[bytes] = []
    errors: list[int] = []

    def delivered(error: KafkaError | None, message: object) -> None:
        if error is None:
            acked.append(message.value())  # type: ignore[attr-defined]
        else:
            errors.append(error.code())

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": 1,
            "retries": 0,
            "linger.ms": 2,
            "message.timeout.ms": 15000,
            "on_delivery": delivered,
        }
    )
    for i in range(count):
        producer.produce(topic, b"%08d" % i + b"x" * (size - 8))
        producer.poll(0)
    assert producer.flush(30) == 0
    return acked, errors


def read_all(bootstrap: str, topic: str) -> list[bytes]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False}
    )
    _low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=15)
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    position = 0
    deadline = time.monotonic() + 30
    while position < high and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            values.append(message.value())
            position = message.offset() + 1
    consumer.close()
    return values


def storage_lines(broker: Broker) -> list[str]:
    return [line for line in broker.log_text().splitlines() if "storage error" in line]


def test_produce_on_a_full_disk(tmp_path: Path, unique_topic: str) -> None:
    mount = tmp_path / "disk"
    flag = tmp_path / "full"
    with small_filesystem(mount, 48) as mounted:
        env = {} if mounted else {"ODRADEK_FULL_DISK_FLAG": str(flag)}
        with Broker(mount / "data", log_dir=tmp_path, env=env) as broker:
            create_topic(broker.bootstrap, unique_topic, 1)
            before, _ = produce(broker.bootstrap, unique_topic, 100, 1000)
            filler = fill(mount, leave_bytes=512 * 1024) if mounted else None
            if not mounted:
                flag.touch()
            # more than the 16 MB a segment reserves ahead of its writes
            acked, errors = produce(broker.bootstrap, unique_topic, 250, 100_000)
            assert errors and set(errors) == {STORAGE_ERROR}, (len(acked), set(errors))
            lines = storage_lines(broker)
            assert 1 <= len(lines) <= 3, lines
            assert "No space left on device" in lines[0] and unique_topic in lines[0]
            assert "Traceback" not in broker.log_text()
            # what was acknowledged is there, whole, and nothing else
            stored = read_all(broker.bootstrap, unique_topic)
            assert stored == before + acked
            # space comes back: writes succeed again without a restart
            if filler is not None:
                filler.unlink()
            else:
                flag.unlink()
            after, errors = produce(broker.bootstrap, unique_topic, 50, 10000)
            assert not errors and len(after) == 50
            assert read_all(broker.bootstrap, unique_topic) == before + acked + after


def test_offset_commit_and_end_txn_on_a_full_disk(tmp_path: Path, unique_topic: str) -> None:
    flag = tmp_path / "full"
    with Broker(tmp_path / "data", env={"ODRADEK_FULL_DISK_FLAG": str(flag)}) as broker:
        create_topic(broker.bootstrap, unique_topic, 1)
        tp = (unique_topic, 0)
        with Wire(broker.bootstrap) as wire, WireClient(broker.bootstrap) as client:
            assert commit(client, "g", {tp: 1}) == {tp: 0}  # loads the group shard
            code, pid, epoch = wire.init_pid("tid")
            assert code == 0
            assert wire.add_partitions("tid", pid, epoch, [tp]) == {tp: 0}
            flag.touch()
            assert commit(client, "g", {tp: 5}) == {tp: NOT_COORDINATOR}
            assert wire.end_txn("tid", pid, epoch, commit=True) == NOT_COORDINATOR
            assert fetch(client, "g", [tp])[tp][0] == 1  # the failed commit left nothing
            lines = storage_lines(broker)
            assert lines and all("coordinator append" in line for line in lines), lines
            assert "Traceback" not in broker.log_text()
            os.unlink(flag)
            assert commit(client, "g", {tp: 5}) == {tp: 0}
            assert fetch(client, "g", [tp])[tp][0] == 5
            assert wire.end_txn("tid", pid, epoch, commit=True, retry=True) == 0
