"""What the `__consumer_offsets` records of consumer, share and streams groups have in
common: a key is an int16 record type, the group id and, for a member's records, the
member id; a value starts with its int16 version (0: later versions only add fields)."""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass

from odradek.protocol.codec import Reader, RecordFormatError, Writer


@dataclass(frozen=True)
class GroupKey:
    kind: int
    group: str
    member: str = ""


def encode_key(key: GroupKey, member_kinds: Container[int]) -> bytes:
    writer = Writer().int16(key.kind).string(key.group)
    if key.kind in member_kinds:
        writer.string(key.member)
    return writer.done()


def decode_key(
    raw: bytes, kinds: Container[int], member_kinds: Container[int], groups: str
) -> GroupKey | None:
    """None for keys of other kinds; `groups` names the kind of group in errors."""
    reader = Reader(raw)
    kind = reader.int16()
    if kind not in kinds:
        return None
    group = reader.string()
    member = reader.string() if kind in member_kinds else ""
    if group is None or member is None:
        raise RecordFormatError(f"null group or member id in a {groups} key")
    return GroupKey(kind, group, member)


def start_value() -> Writer:
    return Writer().int16(0)


def read_value(raw: bytes) -> Reader:
    reader = Reader(raw)
    reader.int16()  # the value's version
    return reader
