"""Reading one offset range on an executor: a Kafka consumer assigned to one partition,
positioned at the range's start (no consumer group; the query's checkpoint holds the
offsets), its records gathered column by column into Arrow record batches."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
from confluent_kafka import (
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    TopicPartition,
)

from odradek.spark.metadata import PRODUCER_ONLY, KafkaSourceError
from odradek.spark.ranges import OffsetRange
from odradek.spark.schema import CREATE_TIME, LOG_APPEND_TIME

# A batch is handed to Spark when it holds this many records or bytes.
BATCH_RECORDS = 10_000
BATCH_BYTES = 8 << 20
# Records asked of the client per call.
CONSUME_CHUNK = 2_000


def consumer_config(config: Mapping[str, str]) -> dict[str, str]:
    settings = {k: v for k, v in config.items() if k not in PRODUCER_ONLY}
    settings.setdefault("group.id", "odradek-spark-reader")  # never joins: assign only
    # librdkafka stops fetching for fetch.queue.backoff.ms (1 s by default) whenever its
    # queue holds queued.min.messages (100k) records: with small records a reader that
    # empties the queue quicker than that sits idle most of the time.
    settings.setdefault("fetch.queue.backoff.ms", "10")
    settings.update(
        {
            "enable.auto.commit": "false",
            "enable.auto.offset.store": "false",
            "enable.partition.eof": "true",
            "auto.offset.reset": "error",
        }
    )
    return settings


class _Columns:
    """Column lists of the batch being gathered."""

    def __init__(self, include_headers: bool) -> None:
        self.include_headers = include_headers
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.timestamp_types: list[int] = []
        self.headers: list[list[tuple[str, bytes | None]] | None] = []
        self.size = 0

    def __len__(self) -> int:
        return len(self.offsets)

    def add_records(self, messages: list[Any]) -> None:
        """Append messages that are all records (no errors) and all in the range: the
        common case, one list comprehension per column instead of a loop per record."""
        values = [m.value() for m in messages]
        stamps = [m.timestamp() for m in messages]
        self.keys += [m.key() for m in messages]
        self.values += values
        self.offsets += [m.offset() for m in messages]
        self.timestamps += [ts * 1000 for _kind, ts in stamps]
        self.timestamp_types += [
            LOG_APPEND_TIME if kind == TIMESTAMP_LOG_APPEND_TIME else CREATE_TIME
            for kind, _ts in stamps
        ]
        if self.include_headers:
            self.headers += [m.headers() for m in messages]
        self.size += sum([len(v) for v in values if v is not None])

    def to_batch(self, schema: pa.Schema, topic: str, partition: int) -> pa.RecordBatch:
        rows = len(self.offsets)
        arrays = [
            binary_array(self.keys),
            binary_array(self.values),
            pa.repeat(topic, rows).cast(pa.string()) if rows else pa.array([], pa.string()),
            pa.array([partition] * rows, type=pa.int32()),
            pa.array(self.offsets, type=pa.int64()),
            pa.array(self.timestamps, type=schema.field("timestamp").type),
            pa.array(self.timestamp_types, type=pa.int32()),
        ]
        if self.include_headers:
            arrays.append(pa.array(self.headers, type=schema.field("headers").type))
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


def binary_array(items: list[bytes | None]) -> pa.Array:
    """A binary column. Without nulls, built from one joined buffer and the items'
    lengths: a single copy, about five times quicker than ``pa.array`` on 1 KB values."""
    if not items or None in items:
        return pa.array(items, type=pa.binary())
    present: list[bytes] = items  # type: ignore[assignment]
    ends = np.cumsum(np.fromiter(map(len, present), dtype=np.int64, count=len(present)))
    if ends[-1] >= 2**31:
        return pa.array(items, type=pa.binary())
    offsets = np.zeros(len(present) + 1, dtype=np.int32)
    offsets[1:] = ends
    data = pa.py_buffer(b"".join(present))
    return pa.Array.from_buffers(pa.binary(), len(present), [None, pa.py_buffer(offsets), data])


def read_range(
    r: OffsetRange,
    config: Mapping[str, str],
    schema: pa.Schema,
    *,
    include_headers: bool,
    fail_on_data_loss: bool,
    timeout_ms: int,
) -> Iterator[pa.RecordBatch]:
    """Yield the records of ``r`` as Arrow batches of ``schema``. Under read_committed the
    client skips aborted records, so offsets may have gaps."""
    consumer = Consumer(consumer_config(config))
    try:
        yield from _read(consumer, r, schema, include_headers, fail_on_data_loss, timeout_ms)
    finally:
        consumer.close()


def _read(
    consumer: Any,
    r: OffsetRange,
    schema: pa.Schema,
    include_headers: bool,
    fail_on_data_loss: bool,
    timeout_ms: int,
) -> Iterator[pa.RecordBatch]:
    timeout = timeout_ms / 1000
    consumer.assign([TopicPartition(r.topic, r.partition, r.start)])
    columns = _Columns(include_headers)
    position = r.start
    last = r.end - 1
    progress_at = time.monotonic()
    done = r.start >= r.end
    while not done:
        # never more than the range still holds: consume() returns when it has as many
        # messages as asked for or when its timeout expires, so asking for a full chunk
        # at the end of a range would wait out the timeout
        wanted = min(CONSUME_CHUNK, r.end - position)
        messages = consumer.consume(wanted, timeout=min(timeout, 1.0))
        now = time.monotonic()
        if not messages:
            if now - progress_at > timeout:
                raise KafkaSourceError(
                    f"Timed out after {timeout:g} s reading {r.topic}-{r.partition} at offset "
                    f"{position} (range {r.start}..{r.end}); is the broker reachable?"
                )
            continue
        progress_at = now
        tail = messages[-1]
        if (
            tail.error() is None
            and tail.offset() <= last
            and not [m for m in messages if m.error() is not None]
        ):
            # records only, and (offsets growing) none past the range
            columns.add_records(messages)
            position = tail.offset() + 1
            done = position > last
        else:
            for message in messages:
                error = message.error()
                if error is not None:
                    code = error.code()
                    if code == KafkaError._PARTITION_EOF:
                        if message.offset() >= r.end:
                            done = True
                            break
                        continue
                    if code in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
                        position = _after_data_loss(
                            consumer, r, position, fail_on_data_loss, timeout
                        )
                        if position >= r.end:
                            done = True
                            break
                        continue
                    if error.fatal() or not error.retriable():
                        raise KafkaSourceError(f"Reading {r.topic}-{r.partition} failed: {error}")
                    continue
                offset = message.offset()
                if offset > last:
                    done = True
                    break
                columns.add_records([message])
                position = offset + 1
                if offset == last:
                    done = True
                    break
        if len(columns) >= BATCH_RECORDS or columns.size >= BATCH_BYTES:
            yield columns.to_batch(schema, r.topic, r.partition)
            columns = _Columns(include_headers)
    if len(columns):
        yield columns.to_batch(schema, r.topic, r.partition)


def _after_data_loss(
    consumer: Any, r: OffsetRange, position: int, fail_on_data_loss: bool, timeout: float
) -> int:
    """The offset to go on from when ``position`` is no longer in the log."""
    tp = TopicPartition(r.topic, r.partition)
    try:
        low, _high = consumer.get_watermark_offsets(tp, timeout=timeout)
    except KafkaException as exc:
        raise KafkaSourceError(f"Reading {r.topic}-{r.partition} failed: {exc}") from None
    if low <= position:
        raise KafkaSourceError(
            f"Offset {position} of {r.topic}-{r.partition} is out of range ({low}..{_high})"
        )
    if fail_on_data_loss:
        raise KafkaSourceError(
            f"Lost data: offsets {position}..{low} of {r.topic}-{r.partition} were removed "
            "(retention or DeleteRecords) before they were read. Set failOnDataLoss=false "
            "to skip them."
        )
    if low < r.end:
        consumer.assign([TopicPartition(r.topic, r.partition, low)])
    return low
