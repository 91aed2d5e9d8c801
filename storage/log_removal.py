"""Taking data out of a partition's log (storage/log.py): DeleteRecords, retention by
time and size, and a follower cutting its log back to where it agrees with its leader.
Every function holds the log's lock."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from odradek.storage.checkpoint import write_offset
from odradek.storage.log_files import LOG_START_CHECKPOINT, RECOVERY_CHECKPOINT, OffsetOutOfRange
from odradek.storage.segment import Segment

if TYPE_CHECKING:
    from odradek.storage.log import PartitionLog


def delete_records_before(log: PartitionLog, offset: int) -> int:
    """DeleteRecords: the log now starts at `offset`; returns the log start offset."""
    with log._lock:
        log._check_open()
        if offset > log.log_end_offset or offset < 0:
            raise OffsetOutOfRange(
                f"cannot delete before {offset}: the log ends at {log.log_end_offset}"
            )
        if offset <= log.log_start_offset:
            return log.log_start_offset
        log._mark_dirty()
        write_offset(log.directory / LOG_START_CHECKPOINT, offset)
        log.log_start_offset = offset
        log._drop_segments_below(offset)
        if log._epochs.truncate_from_start(offset):
            log._epochs.save()
        return offset


def truncate_to(log: PartitionLog, offset: int) -> int:
    """A follower's log diverged from its leader's: drop every batch from the one
    holding `offset` on. Returns the new log end offset (a batch boundary)."""
    with log._lock:
        log._check_open()
        if offset >= log.log_end_offset:
            return log.log_end_offset
        if offset <= log.log_start_offset:
            return log.start_over_at(offset)
        log._mark_dirty()
        keep = log._segment_at(offset)
        for dropped in log._segments[keep + 1 :]:
            log._delete_segment(dropped)
        del log._segments[keep + 1 :]
        segment = log._segments[keep]
        if segment in log._unflushed:
            log._unflushed.remove(segment)
        cut, end = segment.size, segment.base_offset
        for header in segment.headers(
            segment.index(log.config.index_interval_bytes).position_for(offset)
        ):
            if header.next_offset > offset:
                cut = header.position
                break
            end = header.next_offset
        else:
            end = segment.next_offset
        segment.open_writable()
        os.ftruncate(segment.file.fd, cut)
        segment.size = cut
        segment.next_offset = max(end, segment.base_offset)
        segment.rebuild_index(log.config.index_interval_bytes)
        log.log_end_offset = segment.next_offset
        log._recovery_point = min(log._recovery_point, log.log_end_offset)
        log._persisted_recovery_base = min(log._persisted_recovery_base, segment.base_offset)
        write_offset(log.directory / RECOVERY_CHECKPOINT, log._recovery_point)
        log._dir_dirty = True
        if log._epochs.truncate_from_end(log.log_end_offset):
            log._epochs.save()
        return log.log_end_offset


def start_over_at(log: PartitionLog, offset: int) -> int:
    """Empty the log; the next batch gets `offset` (a follower behind the leader's
    log start, or one whose every batch diverged)."""
    log._mark_dirty()
    for segment in log._segments:
        log._delete_segment(segment)
    log._segments = [Segment.create(log.directory, offset)]
    log.log_start_offset = log.log_end_offset = offset
    write_offset(log.directory / LOG_START_CHECKPOINT, offset)
    log._recovery_point = offset
    log._persisted_recovery_base = offset
    write_offset(log.directory / RECOVERY_CHECKPOINT, offset)
    log._dir_dirty = True
    if log._epochs.truncate_from_end(offset):
        log._epochs.save()
    return offset


def apply_retention(log: PartitionLog, now_ms: int) -> int:
    """Delete the oldest segments past retention.ms or retention.bytes.

    As in Kafka, an expired active segment goes too: a new empty one is rolled first.
    """
    with log._lock:
        log._check_open()
        config = log.config
        if not config.deletes or (config.retention_ms < 0 and config.retention_bytes < 0):
            return 0
        interval = config.index_interval_bytes
        remaining = log.size_bytes()
        count = 0
        for segment in log._segments:
            if not segment.size and segment is log._segments[-1]:
                break  # (compaction may leave an older segment empty)
            expired = (
                config.retention_ms >= 0
                and now_ms - segment.largest_timestamp(interval) > config.retention_ms
            )
            oversized = (
                config.retention_bytes >= 0 and remaining - segment.size >= config.retention_bytes
            )
            if not (expired or oversized):
                break
            remaining -= segment.size
            count += 1
        if not count:
            return 0
        if count == len(log._segments):
            log._roll(now_ms)
        for segment in log._segments[:count]:
            log._delete_segment(segment)
        del log._segments[:count]
        log.log_start_offset = max(log.log_start_offset, log._segments[0].base_offset)
        if log._epochs.truncate_from_start(log.log_start_offset):
            log._epochs.save()
        return count
