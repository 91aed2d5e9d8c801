"""Shared helpers for the transaction tests: a raw-protocol transaction client, an
interactive Java transactional producer, and readers that return what a topic holds."""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from helpers import java
from helpers.wire import WireClient

from odradek.protocol.batch import TruncatedBatch, iter_batches, iter_records

# API keys
PRODUCE, FETCH, LIST_OFFSETS, OFFSET_FETCH, FIND_COORDINATOR = 0, 1, 2, 9, 10
CREATE_TOPICS, INIT_PRODUCER_ID, ADD_PARTITIONS, ADD_OFFSETS, END_TXN = 19, 22, 24, 25, 26
WRITE_TXN_MARKERS, TXN_OFFSET_COMMIT, DESCRIBE_PRODUCERS = 27, 28, 61
DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 65, 66

# Error codes
NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
INVALID_REQUEST = 42
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
DUPLICATE_SEQUENCE_NUMBER = 46
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
INVALID_PRODUCER_ID_MAPPING = 49
INVALID_TRANSACTION_TIMEOUT = 50
CONCURRENT_TRANSACTIONS = 51
OPERATION_NOT_ATTEMPTED = 55
UNKNOWN_PRODUCER_ID = 59
UNSTABLE_OFFSET_COMMIT = 88
PRODUCER_FENCED = 90
TRANSACTIONAL_ID_NOT_FOUND = 105

RETRIABLE = {
    COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE,
    NOT_COORDINATOR,
    CONCURRENT_TRANSACTIONS,
}

READ_UNCOMMITTED, READ_COMMITTED = 0, 1


@dataclass
class StoredRecord:
    offset: int
    key: bytes | None
    value: bytes | None
    producer_id: int
    control: bool
    transactional: bool


def decode_records(data: bytes) -> list[StoredRecord]:
    """Every record of the (uncompressed) whole batches in a Fetch answer, markers
    included (a last batch cut short at the fetch's limit, as Kafka sends it, is left
    for the next fetch)."""
    out: list[StoredRecord] = []
    buf = bytearray(data)
    with contextlib.suppress(TruncatedBatch):
        _decode_into(out, buf)
    return out


def _decode_into(out: list[StoredRecord], buf: bytearray) -> None:
    for header in iter_batches(buf, check_crc=False):
        end = header.position + header.size
        raw = bytes(buf[header.position : end])
        for delta, key, value in iter_records(raw):
            out.append(
                StoredRecord(
                    header.base_offset + delta,
                    key,
                    value,
                    header.producer_id,
                    header.is_control,
                    header.is_transactional,
                )
            )


@dataclass
class TxnState:
    error_code: int
    transactional_id: str
    transaction_state: str
    transaction_timeout: int
    transaction_start_time: int
    producer_id: int
    producer_epoch: int
    partitions: list[tuple[str, int]]


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def int(self, size: int) -> int:
        value = int.from_bytes(self.data[self.pos : self.pos + size], "big", signed=True)
        self.pos += size
        return value

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7

    def compact_string(self) -> str:
        n = self.uvarint() - 1
        text = self.data[self.pos : self.pos + max(n, 0)].decode()
        self.pos += max(n, 0)
        return text

    def tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.pos += self.uvarint()


class Wire:
    """A raw-protocol client with one method per transaction API (body dicts as kio fields)."""

    def __init__(self, bootstrap: str, timeout: float = 30.0) -> None:
        self.bootstrap = bootstrap
        self.client = WireClient(bootstrap, timeout=timeout)

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Wire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, api_key: int, version: int, body: Mapping[str, Any]) -> Any:
        return self.client.call(api_key, version, body)

    # -- admin ------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int = 1) -> None:
        r = self.call(
            CREATE_TOPICS,
            7,
            {
                "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1}],
                "timeout": 10000,
            },
        )
        assert r.topics[0].error_code in (0, 36), r

    # -- transaction coordinator ---------------------------------------------------
    def init_pid(
        self,
        transactional_id: str | None = None,
        timeout_ms: int = 60000,
        producer_id: int = -1,
        epoch: int = -1,
        version: int = 4,
        retry: bool = True,
    ) -> tuple[int, int, int]:
        """(error, producer id, epoch); retries loading / concurrent-transaction answers."""
        body: dict[str, Any] = {
            "transactional_id": transactional_id,
            "transaction_timeout": timeout_ms,
        }
        if version >= 3:
            body.update(producer_id=producer_id, producer_epoch=epoch)
        deadline = time.monotonic() + 30
        while True:
            r = self.call(INIT_PRODUCER_ID, version, body)
            if not retry or r.error_code not in RETRIABLE or time.monotonic() > deadline:
                return int(r.error_code), int(r.producer_id), int(r.producer_epoch)
            time.sleep(0.05)

    def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: Iterable[tuple[str, int]],
        version: int = 3,
        retry: bool = True,
    ) -> dict[tuple[str, int], int]:
        by_topic: dict[str, list[int]] = {}
        for t, p in partitions:
            by_topic.setdefault(t, []).append(p)
        body = {
            "v3_and_below_transactional_id": transactional_id,
            "v3_and_below_producer_id": producer_id,
            "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        }
        deadline = time.monotonic() + 30
        while True:
            r = self.call(ADD_PARTITIONS, version, body)
            codes = {
                (t.name, p.partition_index): int(p.partition_error_code)
                for t in r.results_by_topic_v3_and_below
                for p in t.results_by_partition
            }
            if not retry or not set(codes.values()) & RETRIABLE or time.monotonic() > deadline:
                return codes
            time.sleep(0.05)

    def add_offsets(
        self, transactional_id: str, producer_id: int, epoch: int, group: str, version: int = 3
    ) -> int:
        r = self.call(
            ADD_OFFSETS,
            version,
            {
                "transactional_id": transactional_id,
                "producer_id": producer_id,
                "producer_epoch": epoch,
                "group_id": group,
            },
        )
        return int(r.error_code)

    def end_txn(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        commit: bool,
        version: int = 3,
        retry: bool = False,
    ) -> int:
        body = {
            "transactional_id": transactional_id,
            "producer_id": producer_id,
            "producer_epoch": epoch,
            "committed": commit,
        }
        deadline = time.monotonic() + 30
        while True:
            code = int(self.call(END_TXN, version, body).error_code)
            if not retry or code not in RETRIABLE or time.monotonic() > deadline:
                return code
            time.sleep(0.05)

    def txn_offset_commit(
        self,
        transactional_id: str,
        group: str,
        producer_id: int,
        epoch: int,
        offsets: Mapping[tuple[str, int], int],
        generation: int = -1,
        member_id: str = "",
        version: int = 3,
    ) -> dict[tuple[str, int], int]:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (t, p), off in offsets.items():
            by_topic.setdefault(t, []).append(
                {
                    "partition_index": p,
                    "committed_offset": off,
                    "committed_leader_epoch": -1,
                    "committed_metadata": "",
                }
            )
        body = {
            "transactional_id": transactional_id,
            "group_id": group,
            "producer_id": producer_id,
            "producer_epoch": epoch,
            "generation_id": generation,
            "member_id": member_id,
            "group_instance_id": None,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        }
        r = self.call(TXN_OFFSET_COMMIT, version, body)
        return {
            (t.name, p.partition_index): int(p.error_code) for t in r.topics for p in t.partitions
        }

    def describe_transaction(self, transactional_id: str) -> TxnState:
        """DescribeTransactions v0, decoded by hand: kio refuses the -1 start time Kafka
        sends for a transactional id with no open transaction."""
        correlation, data = self.client.request_bytes(
            DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [transactional_id]}
        )
        self.client.send_raw(data)
        frame = _Reader(self.client.read_frame())
        assert frame.int(4) == correlation
        frame.tags()
        frame.int(4)  # throttle time
        count = frame.uvarint() - 1
        assert count == 1
        error = frame.int(2)
        tid = frame.compact_string()
        state = frame.compact_string()
        timeout = frame.int(4)
        start = frame.int(8)
        pid = frame.int(8)
        epoch = frame.int(2)
        partitions = []
        for _ in range(frame.uvarint() - 1):
            topic = frame.compact_string()
            partitions += [(topic, frame.int(4)) for _ in range(frame.uvarint() - 1)]
            frame.tags()
        return TxnState(error, tid, state, timeout, start, pid, epoch, partitions)

    # -- data ---------------------------------------------------------------------------
    def produce(
        self,
        topic: str,
        partition: int,
        batch: bytes,
        transactional_id: str | None = None,
        acks: int = -1,
        version: int = 9,
    ) -> tuple[int, int]:
        """(error, base offset) for one batch built with odradek.protocol.batch.build_batch."""
        r = self.call(
            PRODUCE,
            version,
            {
                "transactional_id": transactional_id,
                "acks": acks,
                "timeout": 10000,
                "topic_data": [
                    {"name": topic, "partition_data": [{"index": partition, "records": batch}]}
                ],
            },
        )
        p = r.responses[0].partition_responses[0]
        return int(p.error_code), int(p.base_offset)

    def fetch(
        self,
        topic: str,
        partition: int,
        offset: int,
        isolation: int = READ_UNCOMMITTED,
        max_bytes: int = 1 << 22,
    ) -> Any:
        r = self.call(
            FETCH,
            11,
            {
                "replica_id": -1,
                "max_wait": 0,
                "min_bytes": 0,
                "max_bytes": max_bytes,
                "isolation_level": isolation,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [
                    {
                        "topic": topic,
                        "partitions": [
                            {
                                "partition": partition,
                                "current_leader_epoch": -1,
                                "fetch_offset": offset,
                                "last_fetched_epoch": -1,
                                "log_start_offset": -1,
                                "partition_max_bytes": max_bytes,
                            }
                        ],
                    }
                ],
                "forgotten_topics_data": [],
                "rack_id": "",
            },
        )
        return r.responses[0].partitions[0]

    def read_all(self, topic: str, partition: int = 0) -> list[StoredRecord]:
        """Every stored record (markers too), read_uncommitted, up to the high watermark."""
        out: list[StoredRecord] = []
        offset = 0
        while True:
            p = self.fetch(topic, partition, offset)
            assert p.error_code == 0, p
            got = [r for r in decode_records(p.records) if r.offset >= offset]
            out += got
            if not got:
                return out
            offset = got[-1].offset + 1
            if offset >= p.high_watermark:
                return out

    def list_offset(self, topic: str, partition: int, isolation: int, timestamp: int = -1) -> int:
        r = self.call(
            LIST_OFFSETS,
            7,
            {
                "replica_id": -1,
                "isolation_level": isolation,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {
                                "partition_index": partition,
                                "current_leader_epoch": -1,
                                "timestamp": timestamp,
                            }
                        ],
                    }
                ],
            },
        )
        p = r.topics[0].partitions[0]
        assert p.error_code == 0, p
        return int(p.offset)

    def offset_fetch(
        self, group: str, partitions: Iterable[tuple[str, int]], require_stable: bool
    ) -> dict[tuple[str, int], tuple[int, int]]:
        by_topic: dict[str, list[int]] = {}
        for t, p in partitions:
            by_topic.setdefault(t, []).append(p)
        r = self.call(
            OFFSET_FETCH,
            7,
            {
                "group_id": group,
                "require_stable": require_stable,
                "topics": [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()],
            },
        )
        assert r.error_code == 0, r
        return {
            (t.name, p.partition_index): (int(p.committed_offset), int(p.error_code))
            for t in r.topics
            for p in t.partitions
        }


def wait_coordinators(bootstrap: str, timeout: float = 30.0) -> None:
    """Until the transaction coordinator answers (it creates __transaction_state lazily)."""
    deadline = time.monotonic() + timeout
    with Wire(bootstrap) as w:
        while True:
            code, _, _ = w.init_pid(None)
            if code == 0 or time.monotonic() > deadline:
                return
            time.sleep(0.1)


# --------------------------------------------------------------------------- Java


class JavaTxn:
    """``KafkaTool txn-producer``: a Java transactional producer that runs one JSON command
    per line of stdin and answers each with a result line."""

    def __init__(
        self, bootstrap: str, transactional_id: str, props: Mapping[str, object] | None = None
    ) -> None:
        args = [
            "txn-producer",
            "--bootstrap",
            bootstrap,
            *java.props_args({"transactional.id": transactional_id, **(props or {})}),
        ]
        self.proc = subprocess.Popen(
            java.command(args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._stderr: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()
        threading.Thread(target=self._pump_err, daemon=True).start()
        self._next(60)  # "ready"

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                self._lines.put(json.loads(line))
        self._lines.put(None)

    def _pump_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line)

    def _next(self, timeout: float) -> dict[str, Any]:
        try:
            item = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(
                f"no answer from the Java producer in {timeout}s\n{''.join(self._stderr)[-5000:]}"
            ) from None
        if item is None:
            raise AssertionError(
                f"Java producer exited ({self.proc.poll()})\n{''.join(self._stderr)[-5000:]}"
            )
        if "error" in item:
            raise AssertionError(f"Java producer failed: {item}\n{''.join(self._stderr)[-5000:]}")
        return item

    def cmd(self, cmd: str, timeout: float = 60.0, **fields: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"cmd": cmd, **fields}) + "\n")
        self.proc.stdin.flush()
        return self._next(timeout)

    def ok(self, cmd: str, timeout: float = 60.0, **fields: Any) -> dict[str, Any]:
        res = self.cmd(cmd, timeout, **fields)
        assert res["ok"], f"{cmd} failed: {res}\n{''.join(self._stderr)[-3000:]}"
        return res

    def send(
        self, topic: str, values: Iterable[str], partition: int | None = 0, **kw: Any
    ) -> list[int]:
        records = [{"topic": topic, "key": v, "value": v, "partition": partition} for v in values]
        return [o["offset"] for o in self.ok("send", records=records, **kw)["offsets"]]

    def send_offsets(self, group: str, offsets: Mapping[tuple[str, int], int]) -> dict[str, Any]:
        return self.cmd(
            "send-offsets",
            group=group,
            offsets=[{"topic": t, "partition": p, "offset": o} for (t, p), o in offsets.items()],
        )

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> JavaTxn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def java_group_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    res = java.admin(bootstrap, "group-offsets", "--group", group)
    return {
        (r["topic"], r["partition"]): r["offset"]
        for r in res.records
        if r.get("offset") is not None
    }


def java_values(bootstrap: str, topic: str, isolation: str, timeout_ms: int = 8000) -> list[str]:
    """Values of every record the Java consumer returns, up to the end (LSO for
    read_committed), in offset order per partition."""
    res = java.consume(
        bootstrap, topic, until_end=True, isolation_level=isolation, timeout_ms=timeout_ms
    )
    return [r["value"] for r in res.records]


# --------------------------------------------------------------------------- librdkafka


def rdk_read(
    bootstrap: str, topic: str, isolation: str, partitions: int = 1, timeout: float = 20.0
) -> list[Any]:
    """Messages librdkafka returns from the beginning to the end of each partition (the
    last stable offset for read_committed)."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "reader",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out = []
        at_end: set[int] = set()
        deadline = time.monotonic() + timeout
        while len(at_end) < partitions and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition())
                    continue
                raise AssertionError(f"consumer error: {msg.error()}")
            at_end.discard(msg.partition())
            out.append(msg)
        assert len(at_end) == partitions, f"did not reach the end of {topic} in {timeout}s"
        return out
    finally:
        consumer.close()


def ctp_args(
    bootstrap: str,
    source: str,
    sink: str,
    group: str,
    *,
    commit_every: int,
    idle_ms: int,
    sleep_ms: int,
    consumer_props: Mapping[str, object],
    producer_props: Mapping[str, object],
) -> list[str]:
    """KafkaTool's consume-transform-produce loop (Java client, read_committed)."""
    args = ["ctp", "--bootstrap", bootstrap, "--input", source, "--output", sink]
    args += ["--group", group, "--commit-every", str(commit_every), "--idle-ms", str(idle_ms)]
    args += ["--sleep-ms", str(sleep_ms), "--timeout-ms", "600000"]
    for key, value in consumer_props.items():
        args += ["--consumer-prop", f"{key}={value}"]
    return args + java.props_args(producer_props)
