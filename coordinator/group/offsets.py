"""Committed offsets: the shard's part that keeps them, by group, with the transactional
ones waiting for their transaction's marker; their record types, and how a record
replays into a group's offsets (a transactional one into its producer's pending
offsets, until the marker). Who may commit, fetch and delete a group's offsets is the
group type's to say: the shard asks the group's part before it asks this one."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from odradek.coordinator.group import records as rec
from odradek.coordinator.group.classic import ClassicGroup
from odradek.coordinator.group.context import ShardContext, now_ms
from odradek.coordinator.group.record_codecs import OFFSET_KEY, OffsetKey
from odradek.coordinator.registry import RecordType
from odradek.coordinator.runtime import Record, Result
from odradek.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from odradek.coordinator.group.shard import GroupShard


# A committed offset is the value of its record as it was read (offset, leader epoch,
# metadata, commit and expire timestamps): nothing changes it, a later commit replaces it
CommittedOffset = rec.OffsetValue


# (topic, partition) -> its committed offset, of one group
Offsets = dict[tuple[str, int], CommittedOffset]


def _apply(offsets: Offsets, key: OffsetKey, value: rec.OffsetValue | None) -> None:
    if value is None:
        offsets.pop((key.topic, key.partition), None)
    else:
        offsets[key.topic, key.partition] = value


def _replay(
    shard: GroupShard,
    record_type: RecordType[GroupShard, Offsets, OffsetKey, rec.OffsetValue],
    key: OffsetKey,
    value: rec.OffsetValue | None,
    offset: int,
    producer_id: int,
) -> None:
    shard.committed.replay(record_type, key, value, producer_id)
    group_id = key.group
    if (
        producer_id < 0
        and value is not None
        and group_id not in shard.classic.groups
        and not shard.context.holds(group_id, "consumer", "streams")
    ):
        # a group known only by its offsets (simple commits) is an Empty group
        shard.classic.groups[group_id] = ClassicGroup(group_id)


# Key version 0 is read as 1 is: this broker writes 1, as Kafka does.
LEGACY_OFFSET_COMMIT = RecordType(
    0, "LegacyOffsetCommit", OFFSET_KEY, rec.OFFSET_VALUE, _apply, _replay
)
OFFSET_COMMIT = RecordType(1, "OffsetCommit", OFFSET_KEY, rec.OFFSET_VALUE, _apply, _replay)
RECORD_TYPES = (LEGACY_OFFSET_COMMIT, OFFSET_COMMIT)


TopicPartition = tuple[str, int]


class CommittedOffsets:
    def __init__(self, context: ShardContext) -> None:
        self.context = context
        self.offsets: dict[str, Offsets] = {}
        # transactional offsets waiting for their marker: producer id -> group -> offsets
        self.pending: dict[int, dict[str, Offsets]] = {}

    def replay(
        self,
        record_type: RecordType[Any, Offsets, OffsetKey, rec.OffsetValue],
        key: OffsetKey,
        value: rec.OffsetValue | None,
        producer_id: int,
    ) -> None:
        group_id = key.group
        if producer_id >= 0:
            target = self.pending.setdefault(producer_id, {}).setdefault(group_id, {})
        else:
            target = self.offsets.setdefault(group_id, {})
        record_type.apply(target, key, value)
        if not target and producer_id < 0:
            self.offsets.pop(group_id, None)

    def replay_control(self, producer_id: int, commit: bool) -> list[str]:
        """A transaction marker: the producer's pending offsets are committed (or
        dropped). The groups whose offsets were committed."""
        pending = self.pending.pop(producer_id, None)
        if not pending or not commit:
            return []
        for group_id, offsets in pending.items():
            self.offsets.setdefault(group_id, {}).update(offsets)
        return list(pending)

    def commit(
        self, group_id: str, request: dict[str, Any]
    ) -> Result[dict[TopicPartition, ErrorCode]]:
        """The records of the offsets the group may commit (`request` as
        GroupShard.commit_offsets takes it)."""
        now = now_ms()
        records: list[Record] = []
        answers = {}
        for (topic, partition), (offset, epoch, metadata) in request["offsets"].items():
            # Kafka measures the metadata in Java chars (UTF-16 units), not bytes
            limit = self.context.config.offset_metadata_max_bytes
            if metadata is not None and len(metadata.encode("utf-16-le")) // 2 > limit:
                answers[(topic, partition)] = ErrorCode.offset_metadata_too_large
                continue
            answers[(topic, partition)] = ErrorCode.none
            value = rec.OffsetValue(offset, epoch, metadata or "", now)
            records.append(OFFSET_COMMIT.record(OffsetKey(group_id, topic, partition), value))
        return Result(records, answers, producer=request.get("producer"))

    def fetch(
        self, group_id: str, topics: list[tuple[str, list[int]]] | None, require_stable: bool
    ) -> dict[str, Any]:
        committed = self.offsets.get(group_id, {})
        pending = {tp for by_group in self.pending.values() for tp in by_group.get(group_id, {})}
        if topics is None:
            wanted: Iterable[TopicPartition] = sorted(committed)
        else:
            wanted = [(t, p) for t, parts in topics for p in parts]
        answers: list[tuple[TopicPartition, CommittedOffset | None, int]] = []
        for tp in wanted:
            if require_stable and tp in pending:
                answers.append((tp, None, ErrorCode.unstable_offset_commit))
            else:
                answers.append((tp, committed.get(tp), ErrorCode.none))
        return {"error_code": ErrorCode.none, "offsets": answers}

    def tombstones(
        self, group_id: str, which: Iterable[TopicPartition] | None = None
    ) -> list[Record]:
        """The records that delete the group's offsets of `which` (None: all of them)."""
        if which is None:
            which = self.offsets.get(group_id, {})
        return [OFFSET_COMMIT.tombstone(OffsetKey(group_id, t, p)) for t, p in which]

    def of_topics(self, topics: set[str]) -> list[Record]:
        """The records that delete every group's offsets of these topics."""
        records: list[Record] = []
        for group_id, offsets in self.offsets.items():
            records += self.tombstones(group_id, [tp for tp in offsets if tp[0] in topics])
        return records

    def expired(
        self, now: int, kept: Callable[[str], set[str] | None]
    ) -> list[tuple[str, list[Record], bool]]:
        """Offsets expire retention after their commit (or at their own expiry, as an
        old client set it) unless their group's members keep them: `kept` gives the
        topics a group keeps, None for all of them. Per group: the records that delete
        its expired offsets, and whether that is all."""
        retention = self.context.config.offsets_retention_ms
        found = []
        for group_id, offsets in self.offsets.items():
            topics = kept(group_id)
            if topics is None:
                continue
            expired = [
                tp
                for tp, committed in offsets.items()
                if tp[0] not in topics
                and (
                    (committed.expire_timestamp > 0 and now >= committed.expire_timestamp)
                    or now - committed.commit_timestamp >= retention
                )
            ]
            tombstones = self.tombstones(group_id, expired)
            found.append((group_id, tombstones, len(expired) == len(offsets)))
        return found
