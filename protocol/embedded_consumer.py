"""The consumer's embedded protocol: what a classic-protocol Kafka consumer puts in
JoinGroup metadata (ConsumerProtocolSubscription) and what SyncGroup hands back to it
(ConsumerProtocolAssignment). Both start with an int16 version and are not flexible:

    Subscription v0: topics [string], user_data nullable bytes
                 v1: + owned_partitions [topic string, partitions [int32]]
                 v2: + generation_id int32
                 v3: + rack_id nullable string
    Assignment   v0+: assigned_partitions [topic string, partitions [int32]],
                      user_data nullable bytes

Later versions may add fields at the end; readers stop at what they know.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from odradek.protocol.codec import Reader, RecordFormatError, Writer

# topic name -> partitions
NamedPartitions = dict[str, frozenset[int]]


@dataclass(frozen=True)
class Subscription:
    version: int
    topics: tuple[str, ...]
    owned: NamedPartitions = field(default_factory=dict)
    rack_id: str | None = None


def decode_subscription(raw: bytes) -> Subscription:
    """Raises RecordFormatError for metadata that is not a consumer subscription."""
    try:
        reader = Reader(raw)
        version = reader.int16()
        if version < 0:
            raise RecordFormatError(f"subscription version {version}")
        topics = tuple(_string(reader) for _ in range(_count(reader)))
        reader.bytes_()  # user data: the client-side assignor's business
        owned: NamedPartitions = {}
        rack_id = None
        if version >= 1:
            owned = _read_partitions(reader)
        if version >= 2:
            reader.int32()  # generation
        if version >= 3:
            rack_id = reader.string()
        return Subscription(version, topics, owned, rack_id)
    except ValueError as exc:
        raise RecordFormatError(f"malformed consumer subscription: {exc}") from None


def subscription_version(raw: bytes) -> int:
    if len(raw) < 2:
        return 0
    return max(0, int.from_bytes(raw[:2], "big", signed=True))


def encode_assignment(version: int, partitions: Mapping[str, frozenset[int]]) -> bytes:
    writer = Writer().int16(version).int32(len(partitions))
    for topic, parts in sorted(partitions.items()):
        writer.string(topic).int32(len(parts))
        for partition in sorted(parts):
            writer.int32(partition)
    return writer.bytes_(None).done()


def decode_assignment(raw: bytes) -> NamedPartitions:
    """An empty assignment (b"", as a member that never synced has) is no partitions."""
    if not raw:
        return {}
    try:
        reader = Reader(raw)
        reader.int16()
        return _read_partitions(reader)
    except ValueError as exc:
        raise RecordFormatError(f"malformed consumer assignment: {exc}") from None


def _read_partitions(reader: Reader) -> NamedPartitions:
    partitions: NamedPartitions = {}
    for _ in range(_count(reader)):
        topic = _string(reader)
        partitions[topic] = frozenset(reader.int32() for _ in range(_count(reader)))
    return partitions


def _count(reader: Reader) -> int:
    count = reader.int32()
    if count < 0:
        return 0
    if count > reader.remaining():
        raise RecordFormatError(f"array of {count} in {reader.remaining()} bytes")
    return count


def _string(reader: Reader) -> str:
    value = reader.string()
    if value is None:
        raise RecordFormatError("null topic name")
    return value
