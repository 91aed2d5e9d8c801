"""`__transaction_state` records in Kafka's own schemas.

Key (version 0): transactional id.
Value (version 0 written, 0-1 read): producer id, producer epoch, timeout,
status, partitions (topic -> partition ids, nullable), last update and start
timestamps. A null value is a tombstone: the transactional id expired.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from odradek.coordinator.registry import Codec
from odradek.protocol.codec import Reader, RecordFormatError, Writer

# Transaction states, numbered as Kafka stores them
EMPTY = 0
ONGOING = 1
PREPARE_COMMIT = 2
PREPARE_ABORT = 3
COMPLETE_COMMIT = 4
COMPLETE_ABORT = 5
DEAD = 6
PREPARE_EPOCH_FENCE = 7

STATE_NAMES = {
    EMPTY: "Empty",
    ONGOING: "Ongoing",
    PREPARE_COMMIT: "PrepareCommit",
    PREPARE_ABORT: "PrepareAbort",
    COMPLETE_COMMIT: "CompleteCommit",
    COMPLETE_ABORT: "CompleteAbort",
    DEAD: "Dead",
    PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}


@dataclass(frozen=True)
class TxnValue:
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: int
    partitions: dict[str, list[int]] = field(default_factory=dict)
    last_update_ms: int = -1
    start_ms: int = -1


def _encode_key(transactional_id: str) -> bytes:
    return Writer().string(transactional_id).done()


def _decode_key(raw: bytes) -> str:
    reader = Reader(raw)
    reader.int16()  # the key's version (the record type): 0
    transactional_id = reader.string()
    if transactional_id is None:
        raise RecordFormatError("null transactional id")
    return transactional_id


def _encode_value(value: TxnValue) -> bytes:
    writer = (
        Writer()
        .int16(0)
        .int64(value.producer_id)
        .int16(value.producer_epoch)
        .int32(value.timeout_ms)
    )
    writer.out.append(value.state)
    writer.int32(len(value.partitions))
    for topic, partitions in sorted(value.partitions.items()):
        writer.string(topic).int32(len(partitions))
        for partition in sorted(partitions):
            writer.int32(partition)
    return writer.int64(value.last_update_ms).int64(value.start_ms).done()


def _decode_value(raw: bytes) -> TxnValue:
    reader = Reader(raw)
    version = reader.int16()
    if version not in (0, 1):
        raise RecordFormatError(f"unknown transaction value version {version}")
    flexible = version >= 1
    producer_id = reader.int64()
    epoch = reader.int16()
    timeout = reader.int32()
    state = reader.int8()
    count = reader.uvarint() - 1 if flexible else reader.int32()
    partitions: dict[str, list[int]] = {}
    for _ in range(max(count, 0)):
        topic = (reader.compact_string() if flexible else reader.string()) or ""
        n = reader.uvarint() - 1 if flexible else reader.int32()
        partitions[topic] = [reader.int32() for _ in range(max(n, 0))]
        if flexible:
            reader.skip_tags()
    return TxnValue(producer_id, epoch, timeout, state, partitions, reader.int64(), reader.int64())


KEY = Codec(_encode_key, _decode_key)
VALUE = Codec(_encode_value, _decode_value)
