"""Kafka's own metadata records, as its controllers write them to `__cluster_metadata`:
a record has no key, and its value is a frame version (1), the record type, the
record's version, then the record in the flexible encoding of Kafka's message
schemas (compact strings and arrays, tagged fields last).

Each type is declared once below as a list of fields, in Kafka's order, with the
version that added it and its tag when it is a tagged field; `encode` and `decode`
read the declaration. A record is a `MetadataRecord`: its type, the version it was
written in, and its fields by (snake_case) name.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field
from typing import Any

from odradek.protocol.codec import Reader, RecordFormatError, Writer

FRAME_VERSION = 1
ZERO_UUID = uuid.UUID(int=0)
_F64 = struct.Struct(">d")
_U16 = struct.Struct(">H")


@dataclass(frozen=True)
class Field:
    name: str
    kind: str  # int8 int16 int32 int64 uint16 float64 bool uuid string bytes, []<kind>
    since: int = 0
    nullable: bool = False
    tag: int | None = None
    default: Any = None
    fields: tuple[Field, ...] = ()  # a []struct's own fields


@dataclass(frozen=True)
class Schema:
    api_key: int
    name: str
    version: int  # the version Odradek writes
    fields: tuple[Field, ...]


@dataclass
class MetadataRecord:
    api_key: int
    fields: dict[str, Any] = field(default_factory=dict)
    version: int | None = None  # None: the schema's own

    def __getitem__(self, name: str) -> Any:
        return self.fields[name]

    @property
    def schema(self) -> Schema:
        return SCHEMAS[self.api_key]


def _f(name: str, kind: str, since: int = 0, **kw: Any) -> Field:
    return Field(name, kind, since, **kw)


_ENDPOINT = (
    _f("name", "string"),
    _f("host", "string"),
    _f("port", "uint16"),
    _f("security_protocol", "int16"),
)
_FEATURE = (
    _f("name", "string"),
    _f("min_supported_version", "int16"),
    _f("max_supported_version", "int16"),
)
_ENTITY = (_f("entity_type", "string"), _f("entity_name", "string", nullable=True))
_NULL_IDS: dict[str, Any] = {"nullable": True, "default": None}

REGISTER_BROKER = Schema(
    0,
    "RegisterBrokerRecord",
    3,
    (
        _f("broker_id", "int32"),
        _f("is_migrating_zk_broker", "bool", 2, default=False),
        _f("incarnation_id", "uuid"),
        _f("broker_epoch", "int64"),
        _f("end_points", "[]struct", fields=_ENDPOINT),
        _f("features", "[]struct", fields=_FEATURE),
        _f("rack", "string", nullable=True),
        _f("fenced", "bool", default=True),
        _f("in_controlled_shutdown", "bool", 1, default=False),
        _f("log_dirs", "[]uuid", 3, tag=0, default=()),
    ),
)
UNREGISTER_BROKER = Schema(
    1, "UnregisterBrokerRecord", 0, (_f("broker_id", "int32"), _f("broker_epoch", "int64"))
)
TOPIC = Schema(2, "TopicRecord", 0, (_f("name", "string"), _f("topic_id", "uuid")))
PARTITION = Schema(
    3,
    "PartitionRecord",
    1,
    (
        _f("partition_id", "int32", default=-1),
        _f("topic_id", "uuid"),
        _f("replicas", "[]int32"),
        _f("isr", "[]int32"),
        _f("removing_replicas", "[]int32"),
        _f("adding_replicas", "[]int32"),
        _f("leader", "int32", default=-1),
        _f("leader_recovery_state", "int8", tag=0, default=0),
        _f("leader_epoch", "int32", default=-1),
        _f("partition_epoch", "int32", default=-1),
        _f("directories", "[]uuid", 1),
        _f("eligible_leader_replicas", "[]int32", 2, tag=1, **_NULL_IDS),
        _f("last_known_elr", "[]int32", 2, tag=2, **_NULL_IDS),
    ),
)
CONFIG = Schema(
    4,
    "ConfigRecord",
    0,
    (
        _f("resource_type", "int8"),
        _f("resource_name", "string"),
        _f("name", "string"),
        _f("value", "string", nullable=True),
    ),
)
PARTITION_CHANGE = Schema(
    5,
    "PartitionChangeRecord",
    1,
    (
        _f("partition_id", "int32", default=-1),
        _f("topic_id", "uuid"),
        _f("isr", "[]int32", tag=0, **_NULL_IDS),
        _f("leader", "int32", tag=1, default=-2),
        _f("replicas", "[]int32", tag=2, **_NULL_IDS),
        _f("removing_replicas", "[]int32", tag=3, **_NULL_IDS),
        _f("adding_replicas", "[]int32", tag=4, **_NULL_IDS),
        _f("leader_recovery_state", "int8", tag=5, default=-1),
        _f("directories", "[]uuid", 1, tag=8, **_NULL_IDS),
        _f("eligible_leader_replicas", "[]int32", 2, tag=6, **_NULL_IDS),
        _f("last_known_elr", "[]int32", 2, tag=7, **_NULL_IDS),
    ),
)
FENCE_BROKER = Schema(7, "FenceBrokerRecord", 0, (_f("id", "int32"), _f("epoch", "int64")))
UNFENCE_BROKER = Schema(8, "UnfenceBrokerRecord", 0, (_f("id", "int32"), _f("epoch", "int64")))
REMOVE_TOPIC = Schema(9, "RemoveTopicRecord", 0, (_f("topic_id", "uuid"),))
DELEGATION_TOKEN = Schema(
    10,
    "DelegationTokenRecord",
    0,
    (
        _f("owner", "string"),
        _f("requester", "string"),
        _f("renewers", "[]string"),
        _f("issue_timestamp", "int64"),
        _f("max_timestamp", "int64"),
        _f("expiration_timestamp", "int64"),
        _f("token_id", "string"),
    ),
)
USER_SCRAM_CREDENTIAL = Schema(
    11,
    "UserScramCredentialRecord",
    0,
    (
        _f("name", "string"),
        _f("mechanism", "int8"),
        _f("salt", "bytes"),
        _f("stored_key", "bytes"),
        _f("server_key", "bytes"),
        _f("iterations", "int32"),
    ),
)
FEATURE_LEVEL = Schema(
    12, "FeatureLevelRecord", 0, (_f("name", "string"), _f("feature_level", "int16"))
)
CLIENT_QUOTA = Schema(
    14,
    "ClientQuotaRecord",
    0,
    (
        _f("entity", "[]struct", fields=_ENTITY),
        _f("key", "string"),
        _f("value", "float64"),
        _f("remove", "bool"),
    ),
)
PRODUCER_IDS = Schema(
    15,
    "ProducerIdsRecord",
    0,
    (
        _f("broker_id", "int32"),
        _f("broker_epoch", "int64", default=-1),
        _f("next_producer_id", "int64"),
    ),
)
BROKER_REGISTRATION_CHANGE = Schema(
    17,
    "BrokerRegistrationChangeRecord",
    2,
    (
        _f("broker_id", "int32"),
        _f("broker_epoch", "int64"),
        _f("fenced", "int8", tag=0, default=0),
        _f("in_controlled_shutdown", "int8", 1, tag=1, default=0),
        _f("log_dirs", "[]uuid", 2, tag=2, default=()),
    ),
)
ACCESS_CONTROL_ENTRY = Schema(
    18,
    "AccessControlEntryRecord",
    0,
    (
        _f("id", "uuid"),
        _f("resource_type", "int8"),
        _f("resource_name", "string"),
        _f("pattern_type", "int8"),
        _f("principal", "string"),
        _f("host", "string"),
        _f("operation", "int8"),
        _f("permission_type", "int8"),
    ),
)
REMOVE_ACCESS_CONTROL_ENTRY = Schema(19, "RemoveAccessControlEntryRecord", 0, (_f("id", "uuid"),))
NO_OP = Schema(20, "NoOpRecord", 0, ())
REMOVE_USER_SCRAM_CREDENTIAL = Schema(
    22,
    "RemoveUserScramCredentialRecord",
    0,
    (_f("name", "string"), _f("mechanism", "int8")),
)
REGISTER_CONTROLLER = Schema(
    27,
    "RegisterControllerRecord",
    0,
    (
        _f("controller_id", "int32"),
        _f("incarnation_id", "uuid"),
        _f("zk_migration_ready", "bool"),
        _f("end_points", "[]struct", fields=_ENDPOINT),
        _f("features", "[]struct", fields=_FEATURE),
    ),
)
UNREGISTER_CONTROLLER = Schema(29, "UnregisterControllerRecord", 0, (_f("controller_id", "int32"),))
REMOVE_DELEGATION_TOKEN = Schema(26, "RemoveDelegationTokenRecord", 0, (_f("token_id", "string"),))

SCHEMAS: dict[int, Schema] = {
    s.api_key: s
    for s in (
        REGISTER_BROKER,
        UNREGISTER_BROKER,
        TOPIC,
        PARTITION,
        CONFIG,
        PARTITION_CHANGE,
        FENCE_BROKER,
        UNFENCE_BROKER,
        REMOVE_TOPIC,
        DELEGATION_TOKEN,
        USER_SCRAM_CREDENTIAL,
        FEATURE_LEVEL,
        CLIENT_QUOTA,
        PRODUCER_IDS,
        BROKER_REGISTRATION_CHANGE,
        ACCESS_CONTROL_ENTRY,
        REMOVE_ACCESS_CONTROL_ENTRY,
        NO_OP,
        REMOVE_USER_SCRAM_CREDENTIAL,
        REMOVE_DELEGATION_TOKEN,
        REGISTER_CONTROLLER,
        UNREGISTER_CONTROLLER,
    )
}
# Kafka's other types (ZK migration, transactions of records, controller registration,
# ...) are read as known-but-ignored: their type and version, no fields.


def record(schema: Schema, **fields: Any) -> MetadataRecord:
    return MetadataRecord(schema.api_key, fields)


# -- encoding ------------------------------------------------------------------------


def encode(rec: MetadataRecord) -> bytes:
    schema = SCHEMAS[rec.api_key]
    version = schema.version if rec.version is None else rec.version
    out = Writer().uvarint(FRAME_VERSION).uvarint(schema.api_key).uvarint(version)
    _write_struct(out, schema.fields, rec.fields, version)
    return out.done()


def _write_struct(out: Writer, fields: tuple[Field, ...], values: dict[str, Any], v: int) -> None:
    tagged: list[tuple[int, bytes]] = []
    for f in fields:
        if v < f.since:
            continue
        value = values.get(f.name, f.default)
        if f.tag is None:
            _write(out, f, value, v)
        elif not _is_default(f, value):
            field_out = Writer()
            _write(field_out, f, value, v)
            tagged.append((f.tag, field_out.done()))
    out.uvarint(len(tagged))
    for tag, body in sorted(tagged):
        out.uvarint(tag).uvarint(len(body))
        out.out += body


def _is_default(f: Field, value: Any) -> bool:
    if f.kind.startswith("[]") and value is not None and f.default is not None:
        return len(value) == 0
    return bool(value == f.default)


def _write(out: Writer, f: Field, value: Any, v: int) -> None:
    kind = f.kind
    if kind.startswith("[]"):
        if value is None:
            if not f.nullable:
                raise RecordFormatError(f"{f.name} may not be null")
            out.uvarint(0)
            return
        out.compact_length(len(value))
        item = kind[2:]
        for element in value:
            if item == "struct":
                _write_struct(out, f.fields, element, v)
            else:
                _write_value(out, item, element)
        return
    if value is None and kind in ("string", "bytes") and not f.nullable:
        raise RecordFormatError(f"{f.name} may not be null")
    _write_value(out, kind, value)


def _write_value(out: Writer, kind: str, value: Any) -> None:
    if kind == "int8":
        out.int8(value)
    elif kind == "int16":
        out.int16(value)
    elif kind == "int32":
        out.int32(value)
    elif kind == "int64":
        out.int64(value)
    elif kind == "uint16":
        out.out += _U16.pack(value)
    elif kind == "float64":
        out.out += _F64.pack(value)
    elif kind == "bool":
        out.int8(1 if value else 0)
    elif kind == "uuid":
        out.uuid(value)
    elif kind == "string":
        out.compact_string(value)
    elif kind == "bytes":
        out.compact_bytes(value)
    else:
        raise RecordFormatError(f"no such field kind {kind}")


# -- decoding ------------------------------------------------------------------------


def decode(value: bytes) -> MetadataRecord:
    """A metadata record's value; RecordFormatError if it is not one. A type Odradek
    does not declare comes back with its type and version and no fields."""
    try:
        return _decode(value)
    except RecordFormatError:
        raise
    except (ValueError, struct.error) as exc:  # bad UTF-8, a value out of range
        raise RecordFormatError(f"metadata record: {exc}") from exc


def _decode(value: bytes) -> MetadataRecord:
    reader = Reader(value)
    frame = reader.uvarint()
    if frame != FRAME_VERSION:
        raise RecordFormatError(f"metadata record frame version {frame}")
    api_key, version = reader.uvarint(), reader.uvarint()
    schema = SCHEMAS.get(api_key)
    if schema is None:
        return MetadataRecord(api_key, {}, version)
    fields = _read_struct(reader, schema.fields, version)
    return MetadataRecord(api_key, fields, version)


def _read_struct(reader: Reader, fields: tuple[Field, ...], v: int) -> dict[str, Any]:
    values: dict[str, Any] = {}
    tagged: dict[int, Field] = {}
    for f in fields:
        if v < f.since:
            values[f.name] = f.default
        elif f.tag is not None:
            tagged[f.tag] = f
            values[f.name] = f.default
        else:
            values[f.name] = _read(reader, f, v)
    for _ in range(reader.uvarint()):
        tag, size = reader.uvarint(), reader.uvarint()
        known = tagged.get(tag)
        if known is None:
            reader.bytes_exactly(size)
        else:
            values[known.name] = _read(Reader(reader.bytes_exactly(size)), known, v)
    return values


def _read(reader: Reader, f: Field, v: int) -> Any:
    kind = f.kind
    if not kind.startswith("[]"):
        return _read_value(reader, kind)
    count = reader.uvarint() - 1
    if count < 0:
        return None
    if count > reader.remaining():
        raise RecordFormatError(f"{f.name}: {count} items in {reader.remaining()} bytes")
    item = kind[2:]
    if item == "struct":
        return [_read_struct(reader, f.fields, v) for _ in range(count)]
    return tuple(_read_value(reader, item) for _ in range(count))


def _read_value(reader: Reader, kind: str) -> Any:
    if kind == "int8":
        return reader.int8()
    if kind == "int16":
        return reader.int16()
    if kind == "int32":
        return reader.int32()
    if kind == "int64":
        return reader.int64()
    if kind == "uint16":
        return _U16.unpack(reader.bytes_exactly(2))[0]
    if kind == "float64":
        return _F64.unpack(reader.bytes_exactly(8))[0]
    if kind == "bool":
        return reader.int8() != 0
    if kind == "uuid":
        return reader.uuid()
    if kind == "string":
        return reader.compact_string()
    if kind == "bytes":
        return reader.compact_bytes()
    raise RecordFormatError(f"no such field kind {kind}")
