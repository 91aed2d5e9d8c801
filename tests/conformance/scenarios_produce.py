"""Scenarios of Produce (0): acks, several partitions, idempotent sequences across
epochs, transactional batches outside a transaction, compression, old message
formats and timestamps out of a topic's range."""

from __future__ import annotations

import re
import struct
import time
import uuid
import zlib
from typing import Any

import crc32c

from conformance.harness import Run, scenario
from conformance.scenarios_data import batch
from conformance.scenarios_groups import first_init, ready
from conformance.scenarios_topics import list_offsets, quietly_create, topic_id
from odradek.protocol.batch import CRC_START, HEADER_SIZE, build_batch, read_header
from odradek.storage.batch_rewrite import Record, compress, rebuild_batch

PRODUCE = 0
GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4


def produce_body(
    name: str | dict[str, dict[int, bytes]],
    records: bytes = b"",
    acks: int = -1,
    transactional_id: str | None = None,
) -> dict[str, Any]:
    """A Produce of `records` to partition 0 of `name`, or of each (topic, partition)
    of a dict {topic: {partition: records}}."""
    partitions = name if isinstance(name, dict) else {name: {0: records}}
    return {
        "transactional_id": transactional_id,
        "acks": acks,
        "timeout": 10000,
        "topic_data": [
            {"name": topic, "partition_data": [{"index": i, "records": r} for i, r in p.items()]}
            for topic, p in partitions.items()
        ],
    }


def one(run: Run, name: str, records: bytes, version: int = 9, **fields: Any) -> Any:
    return run.call(PRODUCE, version, produce_body(name, records, **fields))


def compressed(codec: int, count: int = 3) -> bytes:
    """A batch of `count` records compressed with `codec` (an unknown codec: marked
    so, but not compressed)."""
    now = int(time.time() * 1000)
    plain_batch = bytearray(
        build_batch([(b"k%d" % i, b"v" * 50) for i in range(count)], timestamp=now)
    )
    records = bytes(plain_batch[HEADER_SIZE:])
    payload = compress(codec, records) if codec in (GZIP, SNAPPY, LZ4, ZSTD) else records
    assert payload is not None, f"codec {codec} cannot compress here"
    out = plain_batch[:HEADER_SIZE] + payload
    struct.pack_into(">i", out, 8, len(out) - 12)  # batch length
    struct.pack_into(">h", out, 21, codec)  # attributes
    struct.pack_into(">I", out, 17, crc32c.crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


def stamped_batch(stamps: tuple[int, ...]) -> bytes:
    """A batch of one record for each timestamp."""
    header = read_header(build_batch([(None, b"x")] * len(stamps), timestamp=stamps[0]))
    records = [Record(0, t - stamps[0], i, None, b"x", b"\x00") for i, t in enumerate(stamps)]
    return rebuild_batch(header, records)


def legacy_message(magic: int, value: bytes) -> bytes:
    """One message of the message-set formats before record batches (magic 0 or 1)."""
    body = struct.pack(">bb", magic, 0)
    if magic == 1:
        body += struct.pack(">q", int(time.time() * 1000))
    body += struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    message = struct.pack(">I", zlib.crc32(body)) + body  # CRC32, not CRC32C
    return struct.pack(">qi", 0, len(message)) + message


@scenario("produce.acks", "acks 0, 1 and all write; acks 2 is refused")
def _acks(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name)
    client = run.client()
    body = produce_body(name, batch(2), acks=0)
    client.send_raw(client.request_bytes(PRODUCE, 9, body)[1])  # no answer to acks=0
    latest = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [{"name": name, "partitions": [{"partition_index": 0, "timestamp": -1}]}],
    }
    run.until(
        lambda: run.quiet(2, 7, latest), lambda answer: answer.topics[0].partitions[0].offset == 2
    )
    one(run, name, batch(3), acks=1)
    one(run, name, batch(1), acks=-1)
    one(run, name, batch(1), acks=2)
    one(run, name, batch(1), acks=-2)
    list_offsets(run, name, -1)


def in_order(answer: Any) -> list[dict[str, Any]]:
    """A Produce answer's topics and partitions sorted (Kafka answers them in the
    order of a hash map)."""
    return [
        {"name": t.name, "partitions": sorted(t.partition_responses, key=lambda p: p.index)}
        for t in sorted(answer.responses, key=lambda t: t.name)
    ]


@scenario("produce.several-partitions", "one Produce to partitions of two topics, one unknown")
def _several(run: Run) -> None:
    a, b = run.name("a"), run.name("b")
    quietly_create(run, a, 3)
    quietly_create(run, b, 2)
    for partitions in (
        {a: {0: batch(1), 1: batch(2), 2: batch(3)}, b: {1: batch(4), 7: batch(1)}},
        {a: {2: batch(1)}, b: {0: batch(2), 1: batch(1)}},
    ):
        run.record("answer", in_order(run.quiet(PRODUCE, 9, produce_body(partitions))))
    for partition in range(3):
        list_offsets(run, a, -1, partition)


@scenario("produce.duplicate-older-batch", "a retry of any of the last five batches is a duplicate")
def _duplicate_older(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name)
    started = first_init(run, None)
    pid, epoch = int(started.producer_id), int(started.producer_epoch)

    def idempotent(sequence: int, count: int = 2) -> bytes:
        return batch(count, producer_id=pid, producer_epoch=epoch, base_sequence=sequence)

    for sequence in range(0, 12, 2):
        one(run, name, idempotent(sequence))
    one(run, name, idempotent(4))  # among the last five: its first offset again
    one(run, name, idempotent(0))  # older than the five kept
    one(run, name, idempotent(4, 3))  # a known sequence, another record count
    list_offsets(run, name, -1)


@scenario("produce.epoch-bump", "an idempotent producer bumps its epoch: sequences restart at 0")
def _epoch_bump(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name)
    started = first_init(run, None)
    pid, epoch = int(started.producer_id), int(started.producer_epoch)

    def idempotent(producer_epoch: int, sequence: int) -> bytes:
        return batch(2, producer_id=pid, producer_epoch=producer_epoch, base_sequence=sequence)

    one(run, name, idempotent(epoch, 0))
    one(run, name, idempotent(epoch, 2))
    one(run, name, idempotent(epoch + 1, 7))  # a new epoch must start at 0
    one(run, name, idempotent(epoch + 1, 0))
    one(run, name, idempotent(epoch + 1, 4))  # a gap in the new epoch
    one(run, name, idempotent(epoch, 4))  # the old epoch, fenced
    list_offsets(run, name, -1)


@scenario("produce.unknown-producer", "a producer id the partition never saw, at any sequence")
def _unknown_producer(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name)
    one(run, name, batch(2, producer_id=987654321, producer_epoch=0, base_sequence=5))
    one(run, name, batch(2, producer_id=987654321, producer_epoch=0, base_sequence=7))
    one(run, name, batch(2, producer_id=987654322, producer_epoch=3, base_sequence=0))
    one(run, name, batch(1, producer_id=987654323, producer_epoch=0, base_sequence=-1))
    list_offsets(run, name, -1)


@scenario("produce.transactional-outside", "a transactional batch whose partition is not added")
def _transactional_outside(run: Run) -> None:
    name, txn = run.name("t"), run.name("txn")
    quietly_create(run, name)
    ready(run, 1, txn)
    started = first_init(run, txn)
    pid, epoch = int(started.producer_id), int(started.producer_epoch)
    records = batch(2, producer_id=pid, producer_epoch=epoch, base_sequence=0, attributes=0x10)
    one(run, name, records, transactional_id=txn)
    one(run, name, records)  # no transactional id in the request
    one(run, name, batch(2, producer_id=pid, producer_epoch=epoch, base_sequence=0))
    list_offsets(run, name, -1)


@scenario("produce.compressed", "gzip, snappy, lz4 and zstd batches; zstd on Produce v6")
def _compressed(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name)
    for codec in (GZIP, SNAPPY, LZ4, ZSTD):
        one(run, name, compressed(codec))
    one(run, name, compressed(ZSTD), version=6)  # zstd needs Produce v7
    one(run, name, compressed(7))  # no such codec
    list_offsets(run, name, -1)


@scenario("produce.recompressed", "a topic's compression.type differs from the batch's")
def _recompressed(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name, compression_type="gzip")
    one(run, name, compressed(LZ4))
    one(run, name, batch(2))
    list_offsets(run, name, -1)


@scenario("produce.message-formats", "message sets of magic 0 and 1 on Produce v3 and later")
def _formats(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name)
    one(run, name, legacy_message(1, b"old"))
    one(run, name, legacy_message(0, b"older"))
    one(run, name, legacy_message(1, b"old"), version=3)
    list_offsets(run, name, -1)


@scenario("produce.timestamps", "timestamps past a topic's before/after limits; LogAppendTime")
def _timestamps(run: Run) -> None:
    name, stamped = run.name("t"), run.name("s")
    limits = {
        "message_timestamp_before_max_ms": "60000",
        "message_timestamp_after_max_ms": "60000",
    }
    quietly_create(run, name, 1, **limits)
    quietly_create(run, stamped, 1, message_timestamp_type="LogAppendTime", **limits)
    now = int(time.time() * 1000)
    early, late = now - 3_600_000, now + 3_600_000
    one(run, name, build_batch([(None, b"x")], timestamp=early), version=7)
    one(run, name, build_batch([(None, b"x")], timestamp=late), version=7)
    one(run, name, build_batch([(None, b"x")], timestamp=now))
    one(run, stamped, build_batch([(None, b"x")], timestamp=early))
    # v8+ names each record in a message that quotes the broker's clock: its numbers
    # are set aside
    for stamps in ((early,), (now, late, early)):
        answer = run.quiet(PRODUCE, 9, produce_body(name, stamped_batch(stamps)))
        partition = answer.responses[0].partition_responses[0]
        errors = [
            (e.batch_index, re.sub(r"\d{6,}", "<ms>", e.batch_index_error_message or ""))
            for e in partition.record_errors
        ]
        run.record("answer", (partition.error_code, partition.error_message, errors))
    list_offsets(run, name, -1)


@scenario("produce.bad-requests", "a topic too large for its batch, an empty one, a null one")
def _bad_requests(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name, max_message_bytes="200")
    one(run, name, batch(1, size=300))
    one(run, name, batch(1, size=100))
    one(run, name, b"")
    one(run, name, batch(1) + batch(2))  # two batches for one partition
    lying = bytearray(batch(1))
    struct.pack_into(">i", lying, 8, 10_000)  # a batch length past the bytes sent
    one(run, name, bytes(lying))
    one(run, name, batch(1)[:40])  # a torn header
    list_offsets(run, name, -1)


@scenario("produce.by-topic-id", "Produce v13: a topic named by its id, an unknown id, no id")
def _by_topic_id(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name)

    def by_id(topic_id: uuid.UUID | None, records: bytes) -> dict[str, Any]:
        body = produce_body(name, records)
        body["topic_data"] = [{**body["topic_data"][0], "topic_id": topic_id}]
        return body

    known = topic_id(run, name)
    # (Kafka's partition may take a moment to lead after the topic is created)
    answer = run.until(
        lambda: run.quiet(PRODUCE, 13, by_id(known, batch(2))),
        lambda answer: answer.responses[0].partition_responses[0].error_code != 6,
    )
    run.answered(PRODUCE, 13, answer)
    run.call(PRODUCE, 13, by_id(uuid.uuid4(), batch(1)))
    run.call(PRODUCE, 13, by_id(None, batch(1)))
    list_offsets(run, name, -1)
