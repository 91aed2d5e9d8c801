"""The log of one partition: segments, offsets, recovery, retention, flushing.

Files in the partition directory:

    <base offset, 20 digits>.log / .index / .timeindex   the segments
    leader-epoch-checkpoint                              epoch -> first offset
    cleaner-offset-checkpoint                            compaction: first dirty offset
    log-start-offset-checkpoint                          set by DeleteRecords
    recovery-point-offset-checkpoint                     everything before it was fsynced
    clean-shutdown                                       written by close(), removed
                                                         at the first change after open

Opening and crash recovery live in storage/log_recovery.py, DeleteRecords, retention
and a follower's truncation in storage/log_removal.py, lookups by time in
storage/log_time.py, compaction in storage/cleaner.py: each works on this class's state
under its lock.

Threads: every method is meant for the event loop's thread except flush() and
compact(), which may run in a worker thread at the same time; they hold the lock
only to take a snapshot and to record the result, never while they fsync or
rewrite segments.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import shutil
import threading
import time
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from odradek.protocol.batch import (
    BatchHeader,
    set_base_offset,
    set_max_timestamp,
    set_partition_leader_epoch,
)
from odradek.storage import log_recovery, log_removal, log_time
from odradek.storage.checkpoint import fsync_dir, fsync_path, write_atomic, write_offset
from odradek.storage.cleaner import CompactionState, CompactionStats, compact_log
from odradek.storage.config import INT32_MAX, LogConfig
from odradek.storage.epochs import LeaderEpochCache
from odradek.storage.index import NO_TIMESTAMP
from odradek.storage.log_files import (
    CLEAN_SHUTDOWN,
    LEADER_EPOCH_CHECKPOINT,
    RECOVERY_CHECKPOINT,
    OffsetOutOfRange,
    segment_base,
)
from odradek.storage.log_slice import LogSlice
from odradek.storage.segment import Segment, read_batches


@dataclass(frozen=True)
class AppendInfo:
    first_offset: int
    last_offset: int
    log_append_time: int  # -1 with CreateTime
    log_start_offset: int


class PartitionLog:
    config: LogConfig
    log_start_offset: int
    log_end_offset: int  # the next offset to assign; the high watermark on one broker
    recovered_by_scan: bool  # open() had to check batches (no clean shutdown)

    def __init__(self, directory: Path, config: LogConfig) -> None:
        """Use PartitionLog.open()."""
        self.directory = directory
        self.config = config
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.recovered_by_scan = False
        self.scanned_segments = 0
        self._segments: list[Segment] = []
        self._epochs = LeaderEpochCache(directory / LEADER_EPOCH_CHECKPOINT, [])
        self._lock = threading.RLock()
        self._flush_lock = threading.Lock()
        self._recovery_point = 0
        self._persisted_recovery_base = -1  # segment the recovery checkpoint points into
        self._unflushed: list[Segment] = []  # rolled segments not fsynced yet
        self._writes = 0  # changes to files, against...
        self._synced_writes = 0  # ...those covered by the last flush
        self._dir_dirty = False
        self._epochs_unsynced = False
        self._epochs_unsaved = False  # the last checkpoint write failed
        self._marker_present = False
        self._last_flush_ms = int(time.time() * 1000)
        self._closed = False
        self._deleted = False
        self._compaction = CompactionState()

    # -- opening and recovery (storage/log_recovery.py) --------------------------------

    @classmethod
    def open(cls, directory: Path, config: LogConfig) -> PartitionLog:
        """Open the log in `directory`, creating it, or recovering it after a crash."""
        directory.mkdir(parents=True, exist_ok=True)
        log = cls(directory, config)
        log_recovery.load(log)
        return log

    # -- appending ----------------------------------------------------------------------

    @property
    def latest_epoch(self) -> int:
        return self._epochs.latest_epoch

    def update_config(self, config: LogConfig) -> None:
        self.config = config

    def append(
        self,
        data: bytearray | memoryview,
        headers: Sequence[BatchHeader],
        *,
        leader_epoch: int,
        now_ms: int,
    ) -> AppendInfo:
        """Assign offsets to validated batches (patched in place in `data`) and store them.

        `headers` are odradek.protocol.batch.iter_batches(data), positions relative to `data`.
        """
        if not headers:
            raise ValueError("no batches to append")
        with self._lock:
            self._check_open()
            first = next_offset = self.log_end_offset
            append_time = self.config.log_append_time
            for header in headers:
                position = header.position
                set_base_offset(data, position, next_offset)
                set_partition_leader_epoch(data, position, leader_epoch)
                if append_time:
                    set_max_timestamp(data, header, now_ms)
                next_offset += header.last_offset_delta + 1
            self._write(data, headers, next_offset, now_ms, now_ms if append_time else None)
            if self._epochs.assign(leader_epoch, first, persist=False):
                self._epochs_changed()
            return AppendInfo(
                first, next_offset - 1, now_ms if append_time else -1, self.log_start_offset
            )

    def append_as_is(
        self,
        data: bytes | bytearray | memoryview,
        headers: Sequence[BatchHeader],
        *,
        now_ms: int | None = None,
        gaps: bool = False,
    ) -> AppendInfo:
        """Store batches whose offsets are already set; the first must be the log end
        offset, or past it with `gaps` (a leader's compacted log has holes)."""
        if not headers:
            raise ValueError("no batches to append")
        if now_ms is None:
            now_ms = int(time.time() * 1000)
        with self._lock:
            self._check_open()
            first = self.log_end_offset
            if headers[0].base_offset != first and not (gaps and headers[0].base_offset > first):
                raise ValueError(f"batch at offset {headers[0].base_offset}, the log is at {first}")
            expected = first
            for header in headers:
                if header.base_offset < expected:
                    raise ValueError(f"batch at offset {header.base_offset} goes backwards")
                expected = header.next_offset
            self._write(data, headers, expected, now_ms, None, as_is=True)
            changed = False
            for header in headers:
                epoch = header.partition_leader_epoch
                changed |= self._epochs.assign(epoch, header.base_offset, persist=False)
            if changed:
                self._epochs_changed()
            return AppendInfo(first, expected - 1, -1, self.log_start_offset)

    def _write(
        self,
        data: bytes | bytearray | memoryview,
        headers: Sequence[BatchHeader],
        next_offset: int,
        now_ms: int,
        stamped_time: int | None,
        *,
        as_is: bool = False,
    ) -> None:
        segment = self._segments[-1]
        if segment.size and self._should_roll(segment, len(data), next_offset - 1, now_ms):
            segment = self._roll(now_ms)
        if not segment.size:
            segment.roll_base_ms = now_ms
        interval = self.config.index_interval_bytes
        index = segment.index(interval)  # loaded before the write, or it would index it twice
        self._mark_dirty()
        start = segment.size
        segment.append(data)
        offset = self.log_end_offset
        for header in headers:
            if as_is:
                offset = header.base_offset
            last = offset + header.last_offset_delta
            index.add_batch(
                offset,
                last,
                start + header.position,
                header.size,
                header.max_timestamp if stamped_time is None else stamped_time,
                interval,
            )
            offset = last + 1
        segment.next_offset = next_offset
        self.log_end_offset = next_offset

    def _epochs_changed(self) -> None:
        # On the append path, so not fsynced here: flush() does it before the
        # recovery point passes the new epoch, and recovery rebuilds the rest.
        # A full disk must not fail an append whose batches are already written:
        # the checkpoint is written again by the next flush.
        try:
            self._epochs.save(durable=False)
        except OSError:
            self._epochs_unsaved = True
        self._epochs_unsynced = True
        self._dir_dirty = True

    def _should_roll(self, segment: Segment, size: int, last_offset: int, now_ms: int) -> bool:
        new_size = segment.size + size
        return (
            new_size > self.config.segment_bytes
            or new_size > INT32_MAX
            or last_offset - segment.base_offset > INT32_MAX
            or now_ms - self._roll_base(segment, now_ms) >= self.config.segment_ms
        )

    def _roll_base(self, segment: Segment, now_ms: int) -> int:
        if segment.roll_base_ms is None:
            # Reopened segment: its first batch's timestamp is the best estimate of its age.
            header = segment.first_header()
            stamp = header.max_timestamp if header is not None else NO_TIMESTAMP
            segment.roll_base_ms = min(stamp, now_ms) if stamp >= 0 else now_ms
        return segment.roll_base_ms

    def _roll(self, now_ms: int) -> Segment:
        self._mark_dirty()
        old = self._segments[-1]
        old.seal()
        self._unflushed.append(old)
        new = Segment.create(self.directory, self.log_end_offset)
        new.roll_base_ms = now_ms
        self._segments.append(new)
        self._dir_dirty = True
        self._writes += 1
        return new

    def roll_if_due(self, now_ms: int) -> None:
        with self._lock:
            self._check_open()
            segment = self._segments[-1]
            if segment.size and now_ms - self._roll_base(segment, now_ms) >= self.config.segment_ms:
                self._roll(now_ms)

    def _mark_dirty(self) -> None:
        self._writes += 1
        if self._marker_present:
            self._marker_present = False
            with contextlib.suppress(FileNotFoundError):
                (self.directory / CLEAN_SHUTDOWN).unlink()

    # -- reading ------------------------------------------------------------------------

    def _segment_at(self, offset: int) -> int:
        return max(0, bisect.bisect_right(self._segments, offset, key=segment_base) - 1)

    def _check_range(self, offset: int) -> None:
        if not self.log_start_offset <= offset <= self.log_end_offset:
            raise OffsetOutOfRange(
                f"offset {offset} is outside [{self.log_start_offset}, {self.log_end_offset}]"
            )

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one: bool = True,
        partial_tail: bool = False,
    ) -> LogSlice | None:
        """Whole batches from the one holding `offset`, up to `max_bytes` (but at least
        one batch with min_one), none with a base offset >= `max_offset`; None if nothing.
        With `partial_tail` the bytes of the next batch up to `max_bytes` come too, as
        Kafka sends them to consumers (which drop a batch cut short)."""
        with self._lock:
            self._check_open()
            self._check_range(offset)
            if offset == self.log_end_offset:
                return None
            for segment in self._segments[self._segment_at(offset) :]:
                found, piece = self._read_segment(
                    segment, offset, max_bytes, max_offset, min_one, partial_tail
                )
                if found:
                    return piece
            return None

    def _read_segment(
        self,
        segment: Segment,
        offset: int,
        max_bytes: int,
        max_offset: int | None,
        min_one: bool,
        partial_tail: bool = False,
    ) -> tuple[bool, LogSlice | None]:
        index = segment.index(self.config.index_interval_bytes)
        first = None
        for header in segment.headers(index.position_for(offset)):
            if header.next_offset > offset:
                first = header
                break
        if first is None:
            return False, None
        if max_offset is not None and first.base_offset >= max_offset:
            return True, None
        if first.size > max_bytes:
            return True, self._slice(segment, first.position, first.size) if min_one else None
        limit = first.position + max_bytes
        end = max(first.position + first.size, index.position_before(limit, max_offset))
        for header in segment.headers(end):
            if max_offset is not None and header.base_offset >= max_offset:
                break
            if header.position + header.size > limit:
                if partial_tail:
                    end = limit
                break
            end = header.position + header.size
        return True, self._slice(segment, first.position, end - first.position)

    @staticmethod
    def _slice(segment: Segment, position: int, size: int) -> LogSlice:
        return LogSlice(segment.path, position, size, segment.file)

    def iter_batches(self, start_offset: int = 0) -> Iterator[tuple[BatchHeader, bytes]]:
        """Every stored batch from the one holding `start_offset` (at least the log start).

        Headers are those of the returned bytes (position 0). Batches appended while
        iterating may or may not be included.
        """
        with self._lock:
            self._check_open()
            start = max(start_offset, self.log_start_offset)
            segments = self._segments[self._segment_at(start) :]
        interval = self.config.index_interval_bytes
        for segment in segments:
            with self._lock:
                try:
                    fd = segment.file
                    position = segment.index(interval).position_for(start)
                except FileNotFoundError:
                    continue  # deleted by retention meanwhile
                end = segment.size
            for _position, header, batch in read_batches(fd.fd, end, position):
                if header.next_offset > start:
                    yield header, batch

    # -- timestamps ---------------------------------------------------------------------

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with a timestamp >= `timestamp`."""
        return log_time.offset_for_timestamp(self, timestamp)

    def max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with the largest timestamp."""
        return log_time.max_timestamp(self)

    # -- removing data (storage/log_removal.py) ---------------------------------------

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: the log now starts at `offset`; returns the log start offset."""
        return log_removal.delete_records_before(self, offset)

    def truncate_to(self, offset: int) -> int:
        """A follower's log diverged from its leader's: drop every batch from the one
        holding `offset` on. Returns the new log end offset (a batch boundary)."""
        return log_removal.truncate_to(self, offset)

    def start_over_at(self, offset: int) -> int:
        """Empty the log; the next batch gets `offset`."""
        return log_removal.start_over_at(self, offset)

    def apply_retention(self, now_ms: int) -> int:
        """Delete the oldest segments past retention.ms or retention.bytes."""
        return log_removal.apply_retention(self, now_ms)

    def _drop_segments_below(self, offset: int) -> int:
        """Delete the segments whose every offset is below `offset` (never the active one)."""
        count = 0
        while len(self._segments) > 1 and self._segments[1].base_offset <= offset:
            self._delete_segment(self._segments.pop(0))
            count += 1
        return count

    def _delete_segment(self, segment: Segment) -> None:
        self._mark_dirty()
        segment.delete_files()
        if segment in self._unflushed:
            self._unflushed.remove(segment)

    def compact(
        self, now_ms: int, *, producer_ids: Collection[int] | None = None
    ) -> CompactionStats:
        """cleanup.policy=compact: keep the latest record of each key (storage/cleaner.py).

        Returns at once unless the dirty part is at least min.cleanable.dirty.ratio of
        the cleanable bytes or a delete horizon has come; never touches the active
        segment. `producer_ids`: the producers whose state is still kept, whose last
        batch must stay (None: every producer id). May run in a worker thread.
        """
        return compact_log(self, now_ms, producer_ids=producer_ids)

    # -- size, flushing, epochs -----------------------------------------------------------

    def size_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    @property
    def segment_count(self) -> int:
        return len(self._segments)

    @property
    def recovery_point(self) -> int:
        """Every offset below it is on disk (fsynced)."""
        return self._recovery_point

    def needs_flush(self, now_ms: int) -> bool:
        """True when the flush policy asks for an fsync, or when rolled segments
        still wait for theirs (Kafka flushes them in the background after a roll)."""
        if self._closed:
            return False
        return bool(self._unflushed) or self.flush_policy_due(now_ms)

    def flush_policy_due(self, now_ms: int) -> bool:
        """True when flush.messages or flush.ms ask for an fsync of what was appended:
        a writer waits for this one before it answers, as in Kafka's append."""
        if self._closed:
            return False
        pending = self.log_end_offset - self._recovery_point
        if pending <= 0:
            return False
        config = self.config
        if config.flush_messages is not None and pending >= config.flush_messages:
            return True
        return config.flush_ms is not None and now_ms - self._last_flush_ms >= config.flush_ms

    def flush(self) -> None:
        """fsync the segments written since the last flush and their indexes, then
        advance the recovery point. Safe to call from a worker thread."""
        with self._flush_lock:
            with self._lock:
                if self._closed:
                    return
                writes = self._writes
                if writes == self._synced_writes and not self._unflushed:
                    return
                target = self.log_end_offset
                segments = [*self._unflushed, self._segments[-1]]
                jobs: list[tuple[int, list[Path]]] = []
                for segment in segments:
                    segment.persist_index()
                    jobs.append((os.dup(segment.file.fd), sorted(segment.unsynced)))
                    segment.unsynced.clear()
                if self._epochs_unsaved:
                    self._epochs.save(durable=False)
                    self._epochs_unsaved = False
                if self._epochs_unsynced:
                    jobs.append((-1, [self._epochs.path]))
                    self._epochs_unsynced = False
                dir_dirty, self._dir_dirty = self._dir_dirty, False
            try:
                for fd, paths in jobs:
                    if fd >= 0:
                        os.fsync(fd)
                    for path in paths:
                        fsync_path(path)
                if dir_dirty:
                    fsync_dir(self.directory)
            except BaseException:
                with self._lock:  # everything again next time
                    self._dir_dirty = True
                    self._epochs_unsynced = True
                    for segment in segments:
                        segment.unsynced.update((segment.index_path, segment.time_index_path))
                raise
            finally:
                for fd, _paths in jobs:
                    if fd >= 0:
                        os.close(fd)
            with self._lock:
                if self._deleted:
                    return
                for segment in segments[:-1]:
                    if segment in self._unflushed:
                        self._unflushed.remove(segment)
                self._synced_writes = writes
                self._last_flush_ms = int(time.time() * 1000)
                self._recovery_point = max(self._recovery_point, target)
                base = self._segments[self._segment_at(self._recovery_point)].base_offset
                write_checkpoint = base > self._persisted_recovery_base
            if write_checkpoint:
                try:
                    write_offset(self.directory / RECOVERY_CHECKPOINT, target)
                except OSError:
                    if self._deleted:  # the topic went away, or the log was abandoned
                        return
                    raise
                with self._lock:
                    self._persisted_recovery_base = max(self._persisted_recovery_base, base)

    def end_offset_for_epoch(self, epoch: int, leader_epoch: int = -1) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (epoch, end offset), (-1, -1) if unknown; see
        LeaderEpochCache.end_offset_for."""
        with self._lock:
            return self._epochs.end_offset_for(epoch, self.log_end_offset, leader_epoch)

    @property
    def leader_epochs(self) -> list[tuple[int, int]]:
        return self._epochs.entries

    # -- closing ------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"the log in {self.directory} is closed")

    def close(self) -> None:
        """Flush, then mark the shutdown clean so the next open skips the scan."""
        with self._lock:
            if self._closed:
                return
            if not self._marker_present:
                self._segments[-1].seal()
                self._writes += 1
        self.flush()
        with self._lock:
            if not self._marker_present:
                active = self._segments[-1]
                text = f"0\n{self.log_end_offset} {active.base_offset} {active.size}\n"
                # Not fsynced: a lost marker costs a scan, and the data is already flushed.
                write_atomic(self.directory / CLEAN_SHUTDOWN, text, durable=False)
                self._marker_present = True
            self._close_files()

    def _close_files(self) -> None:
        self._closed = True
        for segment in self._segments:
            segment.close()

    def delete(self) -> None:
        """Close and remove the whole directory (topic deletion)."""
        self.abandon()
        shutil.rmtree(self.directory, ignore_errors=True)

    def abandon(self) -> None:
        """Close the files without flushing or marking the shutdown clean: the
        directory failed, or its copy elsewhere replaces it. A flush under way in
        another thread finishes without writing its checkpoint."""
        with self._lock:
            self._close_files()
            self._deleted = True
            self._unflushed = []
