"""The records `__cluster_metadata` held before it took Kafka's own format (records.py),
read so that a cluster's metadata log written then still loads.

Every record holds the whole current value of one thing, so the last record of a key
is its state (the log can be compacted like `__consumer_offsets`) and replay is "last
value wins". A null value removes the thing.

Key: int16 record type, then the thing's name:
- BROKER (0): node id. Value: broker epoch, incarnation id, fenced, rack, listeners.
- TOPIC (1): topic name. Value: topic id, configs.
- PARTITION (2): topic name, partition index. Value: replicas, ISR, leader, leader
  epoch, partition epoch, then (while a reassignment moves it) the replicas being
  added and those being removed; a value without them moves nothing.
- PRODUCER_IDS (3): nothing more. Value: the first producer id not yet handed out
  (brokers take blocks of them, AllocateProducerIds).
- DOCUMENT (4): a name ("acls", "scram"). Value: the whole of that state as the
  broker's security stores write it (JSON); this shard does not read it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, NamedTuple

from odradek.coordinator.cluster.records import BrokerValue, Endpoint, PartitionValue
from odradek.protocol.codec import Reader, RecordFormatError, Writer

if TYPE_CHECKING:
    from odradek.coordinator.cluster.shard import ClusterShard

BROKER = 0
TOPIC = 1
PARTITION = 2
PRODUCER_IDS = 3
DOCUMENT = 4


class BrokerKey(NamedTuple):
    node_id: int


class TopicKey(NamedTuple):
    name: str


class PartitionKey(NamedTuple):
    topic: str
    partition: int


class ProducerIdsKey(NamedTuple):
    pass


class DocumentKey(NamedTuple):
    name: str


Key = BrokerKey | TopicKey | PartitionKey | ProducerIdsKey | DocumentKey


@dataclass(frozen=True)
class TopicValue:
    topic_id: uuid.UUID
    configs: dict[str, str] = field(default_factory=dict)


def encode_key(key: Key) -> bytes:
    if isinstance(key, BrokerKey):
        return Writer().int16(BROKER).int32(key.node_id).done()
    if isinstance(key, TopicKey):
        return Writer().int16(TOPIC).string(key.name).done()
    if isinstance(key, ProducerIdsKey):
        return Writer().int16(PRODUCER_IDS).done()
    if isinstance(key, DocumentKey):
        return Writer().int16(DOCUMENT).string(key.name).done()
    return Writer().int16(PARTITION).string(key.topic).int32(key.partition).done()


def decode_key(raw: bytes) -> Key:
    reader = Reader(raw)
    kind = reader.int16()
    if kind == BROKER:
        return BrokerKey(reader.int32())
    if kind == PRODUCER_IDS:
        return ProducerIdsKey()
    name = reader.string()
    if name is None:
        raise RecordFormatError("null topic name in a metadata key")
    if kind == TOPIC:
        return TopicKey(name)
    if kind == DOCUMENT:
        return DocumentKey(name)
    if kind == PARTITION:
        return PartitionKey(name, reader.int32())
    raise RecordFormatError(f"unknown metadata record type {kind}")


def _int_list(writer: Writer, values: tuple[int, ...]) -> None:
    writer.int32(len(values))
    for value in values:
        writer.int32(value)


def _read_int_list(reader: Reader) -> tuple[int, ...]:
    count = reader.int32()
    if count < 0 or count * 4 > reader.remaining():
        raise RecordFormatError(f"list of {count} ids in {reader.remaining()} bytes")
    return tuple(reader.int32() for _ in range(count))


def encode_broker(value: BrokerValue) -> bytes:
    writer = Writer().int64(value.epoch).uuid(value.incarnation_id)
    writer.int8(1 if value.fenced else 0).string(value.rack).int32(len(value.endpoints))
    for e in value.endpoints:
        writer.string(e.listener).string(e.host).int32(e.port).string(e.security_protocol)
    return writer.done()


def decode_broker(raw: bytes) -> BrokerValue:
    reader = Reader(raw)
    epoch = reader.int64()
    incarnation = reader.uuid()
    fenced = reader.int8() != 0
    rack = reader.string()
    count = reader.int32()
    if count < 0 or count > reader.remaining():
        raise RecordFormatError(f"{count} endpoints in {reader.remaining()} bytes")
    endpoints = []
    for _ in range(count):
        listener, host = reader.string() or "", reader.string() or ""
        port = reader.int32()
        endpoints.append(Endpoint(listener, host, port, reader.string() or ""))
    return BrokerValue(epoch, incarnation, fenced, rack, tuple(endpoints))


def encode_topic(value: TopicValue) -> bytes:
    writer = Writer().uuid(value.topic_id).int32(len(value.configs))
    for name, setting in sorted(value.configs.items()):
        writer.string(name).string(setting)
    return writer.done()


def decode_topic(raw: bytes) -> TopicValue:
    reader = Reader(raw)
    topic_id = reader.uuid()
    count = reader.int32()
    if count < 0 or count > reader.remaining():
        raise RecordFormatError(f"{count} configs in {reader.remaining()} bytes")
    configs = {}
    for _ in range(count):
        name = reader.string() or ""
        configs[name] = reader.string() or ""
    return TopicValue(topic_id, configs)


def encode_next_producer_id(next_id: int) -> bytes:
    return Writer().int64(next_id).done()


def decode_next_producer_id(raw: bytes) -> int:
    return Reader(raw).int64()


def encode_partition(value: PartitionValue) -> bytes:
    writer = Writer()
    _int_list(writer, value.replicas)
    _int_list(writer, value.isr)
    writer.int32(value.leader).int32(value.leader_epoch).int32(value.partition_epoch)
    if value.reassigning:
        _int_list(writer, value.adding)
        _int_list(writer, value.removing)
    return writer.done()


def decode_partition(raw: bytes) -> PartitionValue:
    reader = Reader(raw)
    replicas = _read_int_list(reader)
    isr = _read_int_list(reader)
    value = PartitionValue(replicas, isr, reader.int32(), reader.int32(), reader.int32())
    if reader.remaining():
        adding = _read_int_list(reader)
        value = replace(value, adding=adding, removing=_read_int_list(reader))
    return value


def replay(shard: ClusterShard, offset: int, key: bytes, value: bytes | None) -> None:
    """One record of the old format into the shard."""
    decoded = decode_key(key)
    if isinstance(decoded, BrokerKey):
        if value is None:
            shard.brokers.pop(decoded.node_id, None)
            return
        broker = decode_broker(value)
        known = shard.brokers.get(decoded.node_id)
        same = known is not None and known.value.epoch == broker.epoch
        shard.registered(decoded.node_id, broker, known.offset if known and same else offset)
    elif isinstance(decoded, DocumentKey):
        if value is None:
            shard.documents.pop(decoded.name, None)
        else:
            shard.documents[decoded.name] = value
    elif isinstance(decoded, ProducerIdsKey):
        if value is not None:
            shard.next_producer_id = decode_next_producer_id(value)
    elif isinstance(decoded, TopicKey):
        if value is None:
            shard.remove_topic(decoded.name)
            return
        topic = decode_topic(value)
        shard.add_topic(decoded.name, topic.topic_id, dict(topic.configs))
    else:
        state = shard.topics.get(decoded.topic)
        if state is None:
            return  # a partition of a deleted topic
        if value is None:
            state.partitions.pop(decoded.partition, None)
        else:
            state.partitions[decoded.partition] = decode_partition(value)
