"""Every record type of `__consumer_offsets`, by type id (Kafka's key version): the
registry the group shard replays through. Each type is declared beside what its
records change, and its replay finds the shard's part that holds that:

    0, 1    offset commits           offsets.py
    2       classic group metadata   classic.py
    3-8     consumer groups          consumer.py
    10-15   share groups             share.py
    17-23   streams groups           streams.py

Other type ids (records of features this broker does not have) are skipped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from odradek.coordinator.group import classic, consumer, offsets, share, streams
from odradek.coordinator.registry import Registry
from odradek.coordinator.runtime import Record

if TYPE_CHECKING:
    from odradek.coordinator.group.shard import GroupShard

REGISTRY: Registry[GroupShard] = Registry(
    "group",
    (
        *offsets.RECORD_TYPES,
        classic.GROUP_METADATA,
        *consumer.RECORD_TYPES,
        *share.RECORD_TYPES,
        *streams.RECORD_TYPES,
    ),
    skip_unknown=True,
)


def emit(group: object, records: list[Record], record: Record) -> None:
    """Apply one of a heartbeat's records to its working copy of the group at once, so
    later steps of the heartbeat see it, and keep it to write."""
    key, value = record
    assert key is not None
    decoded = REGISTRY.decode(key, value)
    assert decoded is not None
    record_type, decoded_key, decoded_value = decoded
    record_type.apply(group, decoded_key, decoded_value)
    records.append(record)
