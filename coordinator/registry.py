"""Coordinator records by type, as Kafka's CoordinatorRecordType and its record serde.

A record's key starts with an int16, its type id (on `__consumer_offsets`, what Kafka
calls the key's version); the rest of the key and the whole value (which starts with
its own int16 version) are its type's codecs'. A record type also says how a record
of it is replayed: `replay` finds what the record changes in a shard's state (the
part of the shard that holds it, and there a group or a group's offsets; or the
state itself) and `apply` makes the change.

A registry maps type ids to record types and replays one record at a time: nothing
in it assumes a whole log, so a shard can be loaded in slices.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from odradek.coordinator.runtime import Record
from odradek.protocol.codec import RecordFormatError

S = TypeVar("S")  # a shard's state
T = TypeVar("T")  # what a record changes
K = TypeVar("K")
V = TypeVar("V")

_TYPE_ID = struct.Struct(">h")


@dataclass(frozen=True, slots=True)
class Codec(Generic[V]):
    """A key's or a value's bytes and back. A key codec's `encode` writes what follows
    the type id, and its `decode` reads the whole key (past the type id)."""

    encode: Callable[[V], bytes]
    decode: Callable[[bytes], V]


def _same(raw: bytes) -> bytes:
    return raw


RAW = Codec(_same, _same)  # the bytes as they are: a value read and ignored


@dataclass(frozen=True, slots=True, eq=False)
class RecordType(Generic[S, T, K, V]):
    """One record type: its id, Kafka's name for it, its key and value codecs; `apply`
    changes a T by a record (a None value is a tombstone), `replay` replays a record
    into a shard's state S (finding or making the T and calling `apply`) and is called
    as replay(state, this type, key, value, log offset, producer id)."""

    type_id: int
    name: str
    key: Codec[K]
    value: Codec[V]
    apply: Callable[[T, K, V | None], None]
    replay: Callable[[S, RecordType[S, T, K, V], K, V | None, int, int], None]
    _prefix: bytes = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_prefix", _TYPE_ID.pack(self.type_id))

    def __repr__(self) -> str:
        return f"RecordType({self.type_id}, {self.name})"

    def key_bytes(self, key: K) -> bytes:
        return self._prefix + self.key.encode(key)

    def record(self, key: K, value: V) -> Record:
        return self._prefix + self.key.encode(key), self.value.encode(value)

    def tombstone(self, key: K) -> Record:
        return self._prefix + self.key.encode(key), None


AnyRecordType = RecordType[S, Any, Any, Any]


def into_state(
    state: S, record_type: RecordType[S, S, K, V], key: K, value: V | None, offset: int, pid: int
) -> None:
    """The replay of a record type whose records change the shard's state itself."""
    record_type.apply(state, key, value)


def into_part(
    part: Callable[[Any], Any],
) -> Callable[[Any, AnyRecordType[Any], Any, Any, int, int], None]:
    """The replay of a record type whose records change `part(state)`, one part of a
    shard's state."""

    def replay(
        state: Any, record_type: AnyRecordType[Any], key: Any, value: Any, offset: int, pid: int
    ) -> None:
        record_type.apply(part(state), key, value)

    return replay


def ignore(state: Any, record_type: Any, key: Any, value: Any, offset: int, pid: int) -> None:
    """The replay of a record type that is read and ignored."""


class Registry(Generic[S]):
    """The record types of one kind of shard, by type id. Keys of types it does not
    know are errors, or skipped when `skip_unknown` (types this broker does not have)."""

    def __init__(
        self, name: str, types: Iterable[AnyRecordType[S]], skip_unknown: bool = False
    ) -> None:
        self.name = name
        self.types: dict[int, AnyRecordType[S]] = {}
        for record_type in types:
            if record_type.type_id in self.types:
                raise ValueError(f"two {name} record types with id {record_type.type_id}")
            self.types[record_type.type_id] = record_type
        self.skip_unknown = skip_unknown

    def type_of(self, key: bytes) -> AnyRecordType[S] | None:
        if len(key) < 2:
            raise RecordFormatError("record ends early")
        (type_id,) = _TYPE_ID.unpack_from(key)
        found = self.types.get(type_id)
        if found is None and not self.skip_unknown:
            raise RecordFormatError(f"unknown {self.name} record type {type_id}")
        return found

    def decode(self, key: bytes, value: bytes | None) -> tuple[AnyRecordType[S], Any, Any] | None:
        """(record type, key, value), or None for a type skipped."""
        record_type = self.type_of(key)
        if record_type is None:
            return None
        decoded_key = record_type.key.decode(key)
        return record_type, decoded_key, None if value is None else record_type.value.decode(value)

    def replay(self, state: S, offset: int, key: bytes, value: bytes | None, pid: int) -> None:
        """One record into `state`: at `offset` of the log, written by producer `pid`
        (-1: not transactional)."""
        record_type = self.type_of(key)
        if record_type is None:
            return
        decoded_key = record_type.key.decode(key)
        decoded = None if value is None else record_type.value.decode(value)
        record_type.replay(state, record_type, decoded_key, decoded, offset, pid)
