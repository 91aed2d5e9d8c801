"""Shared helpers for the transaction tests: a raw-protocol transaction client and the
stored records it reads back (the real clients' helpers are in txn_clients.py)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

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


def wait_timed_out(bootstrap: str, transactional_id: str, timeout: float = 30.0) -> TxnState:
    """The transaction's state once the coordinator has aborted it on its timeout."""
    deadline = time.monotonic() + timeout
    with Wire(bootstrap) as w:
        while True:
            state = w.describe_transaction(transactional_id)
            if state.transaction_state == "CompleteAbort" or time.monotonic() > deadline:
                return state
            time.sleep(0.1)
