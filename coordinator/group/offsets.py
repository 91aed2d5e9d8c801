"""Committed offsets: what the shard keeps of each, and how the offset commit records
replay into a group's offsets (a transactional one into its producer's pending
offsets, until the transaction's marker)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from odradek.coordinator.group import records as rec
from odradek.coordinator.group.classic import ClassicGroup
from odradek.coordinator.group.record_codecs import OFFSET_KEY, OffsetKey
from odradek.coordinator.registry import RecordType

if TYPE_CHECKING:
    from odradek.coordinator.group.shard_state import ShardState


@dataclass(slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1


# (topic, partition) -> its committed offset, of one group
Offsets = dict[tuple[str, int], CommittedOffset]


def _apply(offsets: Offsets, key: OffsetKey, value: rec.OffsetValue | None) -> None:
    tp = (key.topic, key.partition)
    if value is None:
        offsets.pop(tp, None)
    else:
        offsets[tp] = CommittedOffset(
            value.offset,
            value.leader_epoch,
            value.metadata,
            value.commit_timestamp,
            value.expire_timestamp,
        )


def _replay(
    state: ShardState,
    record_type: RecordType[ShardState, Offsets, OffsetKey, rec.OffsetValue],
    key: OffsetKey,
    value: rec.OffsetValue | None,
    offset: int,
    producer_id: int,
) -> None:
    group_id = key.group
    if producer_id >= 0:
        target = state.pending_txn_offsets.setdefault(producer_id, {}).setdefault(group_id, {})
    else:
        target = state.offsets.setdefault(group_id, {})
        if (
            value is not None
            and group_id not in state.groups
            and group_id not in state.consumer_groups
            and group_id not in state.streams_groups
        ):
            # a group known only by its offsets (simple commits) is an Empty group
            state.groups[group_id] = ClassicGroup(group_id)
    record_type.apply(target, key, value)
    if not target and producer_id < 0:
        state.offsets.pop(group_id, None)


# Key version 0 is read as 1 is: this broker writes 1, as Kafka does.
LEGACY_OFFSET_COMMIT = RecordType(
    0, "LegacyOffsetCommit", OFFSET_KEY, rec.OFFSET_VALUE, _apply, _replay
)
OFFSET_COMMIT = RecordType(1, "OffsetCommit", OFFSET_KEY, rec.OFFSET_VALUE, _apply, _replay)
RECORD_TYPES = (LEGACY_OFFSET_COMMIT, OFFSET_COMMIT)
