"""The log of one partition: segments, offsets, recovery, retention, flushing.

Files in the partition directory:

    <base offset, 20 digits>.log / .index / .timeindex   the segments
    leader-epoch-checkpoint                              epoch -> first offset
    cleaner-offset-checkpoint                            compaction: first dirty offset
    log-start-offset-checkpoint                          set by DeleteRecords
    recovery-point-offset-checkpoint                     everything before it was fsynced
    clean-shutdown                                       written by close(), removed
                                                         at the first change after open

Threads: every method is meant for the event loop's thread except flush() and
compact(), which may run in a worker thread at the same time; they hold the lock
only to take a snapshot and to record the result, never while they fsync or
rewrite segments.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import os
import shutil
import threading
import time
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from protocol.batch import (
    BatchHeader,
    read_header,
    set_base_offset,
    set_max_timestamp,
    set_partition_leader_epoch,
)
from storage.checkpoint import (
    fsync_dir,
    fsync_path,
    read_lines,
    read_offset,
    write_atomic,
    write_offset,
)
from storage.cleaner import CompactionState, CompactionStats, compact_log
from storage.cleaner_files import recover_cleaner_files
from storage.config import INT32_MAX, LogConfig
from storage.epochs import LeaderEpochCache
from storage.index import NO_TIMESTAMP
from storage.log_slice import LogSlice
from storage.records import record_timestamps
from storage.segment import Segment, parse_segment_name, read_batches

logger = logging.getLogger(__name__)

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
RECOVERY_CHECKPOINT = "recovery-point-offset-checkpoint"
CLEAN_SHUTDOWN = "clean-shutdown"


class OffsetOutOfRange(Exception):
    """The offset is below the log start offset or above the log end offset."""


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

    # -- opening and recovery ----------------------------------------------------------

    @classmethod
    def open(cls, directory: Path, config: LogConfig) -> PartitionLog:
        """Open the log in `directory`, creating it, or recovering it after a crash."""
        directory.mkdir(parents=True, exist_ok=True)
        log = cls(directory, config)
        log._load()
        return log

    def _load(self) -> None:
        directory = self.directory
        recover_cleaner_files(directory)
        bases = sorted(
            base for name in os.listdir(directory) if (base := parse_segment_name(name)) is not None
        )
        segments = []
        for i, base in enumerate(bases):
            size = os.stat(directory / f"{base:020d}.log").st_size
            next_offset = bases[i + 1] if i + 1 < len(bases) else base
            segments.append(Segment(directory, base, size, next_offset))
        self._segments = segments
        self._epochs, epochs_readable = LeaderEpochCache.load(directory / LEADER_EPOCH_CHECKPOINT)
        start_checkpoint = read_offset(directory / LOG_START_CHECKPOINT) or 0

        marker = self._read_marker()
        if marker is not None and segments and epochs_readable:
            end_offset, base, size = marker
            active = segments[-1]
            if active.base_offset == base and active.size == size and end_offset >= base:
                active.next_offset = end_offset
                self._recovery_point = end_offset
                self._persisted_recovery_base = base
                self._marker_present = True
        if not self._marker_present:
            with contextlib.suppress(FileNotFoundError):
                (directory / CLEAN_SHUTDOWN).unlink()
            if segments:
                self._recover(epochs_readable)

        if not self._segments:
            self._segments = [Segment.create(directory, start_checkpoint)]
            self._dir_dirty = True
            self._writes += 1
        active = self._segments[-1]
        active.open_writable()
        self.log_end_offset = active.next_offset
        self.log_start_offset = min(
            max(start_checkpoint, self._segments[0].base_offset), self.log_end_offset
        )
        self._drop_segments_below(self.log_start_offset)
        if self._epochs.truncate_from_start(self.log_start_offset):
            self._epochs.save()

    def _read_marker(self) -> tuple[int, int, int] | None:
        lines = read_lines(self.directory / CLEAN_SHUTDOWN)
        if not lines:
            return None
        try:
            end_offset, base, size = (int(part) for part in lines[0].split())
        except ValueError:
            return None
        return end_offset, base, size

    def _recover(self, epochs_readable: bool) -> None:
        """Check the segments written since the last flush; cut at the first bad batch."""
        segments = self._segments
        recovery_point = read_offset(self.directory / RECOVERY_CHECKPOINT) or 0
        first = max(0, bisect.bisect_right(segments, recovery_point, key=_base) - 1)
        self._persisted_recovery_base = segments[first].base_offset
        interval = self.config.index_interval_bytes
        if not epochs_readable:
            logger.warning("rebuilding the leader epochs of %s from the batches", self.directory)
            for segment in segments[:first]:
                for header in segment.headers():
                    self._epochs.assign(
                        header.partition_leader_epoch, header.base_offset, persist=False
                    )
        epochs_before = self._epochs.entries
        min_offset = segments[first].base_offset
        for i in range(first, len(segments)):
            segment = segments[i]
            result = segment.recover(min_offset, interval)
            self.scanned_segments += 1
            for epoch, offset in result.epochs:
                self._epochs.assign(epoch, offset, persist=False)
            later = segments[i + 1 :]
            if later and (result.truncated or later[0].base_offset < segment.next_offset):
                logger.warning(
                    "dropping %d segments of %s after a bad batch", len(later), self.directory
                )
                for dropped in later:
                    dropped.delete_files()
                del segments[i + 1 :]
                break
            min_offset = segment.next_offset
        self.recovered_by_scan = True
        self._unflushed = segments[first:-1]
        end_offset = segments[-1].next_offset
        self._recovery_point = min(recovery_point, end_offset)
        self._writes += 1
        self._epochs.truncate_from_end(end_offset)
        if self._epochs.entries != epochs_before or not epochs_readable:
            self._epochs.save()

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

        `headers` are protocol.batch.iter_batches(data), positions relative to `data`.
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
        data: bytes,
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
        return max(0, bisect.bisect_right(self._segments, offset, key=_base) - 1)

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
    ) -> LogSlice | None:
        """Whole batches from the one holding `offset`, up to `max_bytes` (but at least
        one batch with min_one), none with a base offset >= `max_offset`; None if nothing."""
        with self._lock:
            self._check_open()
            self._check_range(offset)
            if offset == self.log_end_offset:
                return None
            for segment in self._segments[self._segment_at(offset) :]:
                found, piece = self._read_segment(segment, offset, max_bytes, max_offset, min_one)
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
            if header.position + header.size > limit or (
                max_offset is not None and header.base_offset >= max_offset
            ):
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
        with self._lock:
            self._check_open()
            interval = self.config.index_interval_bytes
            start = self.log_start_offset
            for segment in self._segments:
                index = segment.index(interval)
                if index.max_timestamp < timestamp:
                    continue
                from_offset = max(index.offset_before_time(timestamp), start)
                for header in segment.headers(index.position_for(from_offset)):
                    if header.next_offset <= from_offset or header.max_timestamp < timestamp:
                        continue
                    found = self._find_in_batch(segment, header, timestamp)
                    if found is not None:
                        return found
            return None

    def _find_in_batch(
        self, segment: Segment, header: BatchHeader, timestamp: int
    ) -> tuple[int, int] | None:
        data = segment.read(header.position, header.size)
        records = record_timestamps(read_header(data), data)
        start = self.log_start_offset
        if records is None:
            return max(header.base_offset, start), header.max_timestamp
        for offset, stamp in records:
            if offset >= start and stamp >= timestamp:
                return offset, stamp
        return None

    def max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with the largest timestamp."""
        with self._lock:
            self._check_open()
            interval = self.config.index_interval_bytes
            largest = max(
                (segment.index(interval).max_timestamp for segment in self._segments),
                default=NO_TIMESTAMP,
            )
            if largest < 0:
                return None
            found = self.offset_for_timestamp(largest)
            if found is not None:
                return found
            # The largest timestamp is on records below the log start offset, which
            # only the first segment holds: find the largest of the records left.
            live = max(
                (segment.index(interval).max_timestamp for segment in self._segments[1:]),
                default=NO_TIMESTAMP,
            )
            first = self._segments[0]
            start = self.log_start_offset
            for header in first.headers(first.index(interval).position_for(start)):
                if header.base_offset >= start:
                    live = max(live, header.max_timestamp)
                elif header.next_offset > start:
                    data = first.read(header.position, header.size)
                    records = record_timestamps(read_header(data), data)
                    if records is None:
                        live = max(live, header.max_timestamp)
                    else:
                        live = max([live, *(stamp for o, stamp in records if o >= start)])
            return self.offset_for_timestamp(live) if live >= 0 else None

    # -- removing data ------------------------------------------------------------------

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: the log now starts at `offset`; returns the log start offset."""
        with self._lock:
            self._check_open()
            if offset > self.log_end_offset or offset < 0:
                raise OffsetOutOfRange(
                    f"cannot delete before {offset}: the log ends at {self.log_end_offset}"
                )
            if offset <= self.log_start_offset:
                return self.log_start_offset
            self._mark_dirty()
            write_offset(self.directory / LOG_START_CHECKPOINT, offset)
            self.log_start_offset = offset
            self._drop_segments_below(offset)
            if self._epochs.truncate_from_start(offset):
                self._epochs.save()
            return offset

    def truncate_to(self, offset: int) -> int:
        """A follower's log diverged from its leader's: drop every batch from the one
        holding `offset` on. Returns the new log end offset (a batch boundary)."""
        with self._lock:
            self._check_open()
            if offset >= self.log_end_offset:
                return self.log_end_offset
            if offset <= self.log_start_offset:
                return self.start_over_at(offset)
            self._mark_dirty()
            keep = self._segment_at(offset)
            for dropped in self._segments[keep + 1 :]:
                self._delete_segment(dropped)
            del self._segments[keep + 1 :]
            segment = self._segments[keep]
            if segment in self._unflushed:
                self._unflushed.remove(segment)
            cut, end = segment.size, segment.base_offset
            for header in segment.headers(
                segment.index(self.config.index_interval_bytes).position_for(offset)
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
            segment.rebuild_index(self.config.index_interval_bytes)
            self.log_end_offset = segment.next_offset
            self._recovery_point = min(self._recovery_point, self.log_end_offset)
            self._persisted_recovery_base = min(self._persisted_recovery_base, segment.base_offset)
            write_offset(self.directory / RECOVERY_CHECKPOINT, self._recovery_point)
            self._dir_dirty = True
            if self._epochs.truncate_from_end(self.log_end_offset):
                self._epochs.save()
            return self.log_end_offset

    def start_over_at(self, offset: int) -> int:
        """Empty the log; the next batch gets `offset` (a follower behind the leader's
        log start, or one whose every batch diverged)."""
        self._mark_dirty()
        for segment in self._segments:
            self._delete_segment(segment)
        self._segments = [Segment.create(self.directory, offset)]
        self.log_start_offset = self.log_end_offset = offset
        write_offset(self.directory / LOG_START_CHECKPOINT, offset)
        self._recovery_point = offset
        self._persisted_recovery_base = offset
        write_offset(self.directory / RECOVERY_CHECKPOINT, offset)
        self._dir_dirty = True
        if self._epochs.truncate_from_end(offset):
            self._epochs.save()
        return offset

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

    def apply_retention(self, now_ms: int) -> int:
        """Delete the oldest segments past retention.ms or retention.bytes.

        As in Kafka, an expired active segment goes too: a new empty one is rolled first.
        """
        with self._lock:
            self._check_open()
            config = self.config
            if not config.deletes or (config.retention_ms < 0 and config.retention_bytes < 0):
                return 0
            interval = config.index_interval_bytes
            remaining = self.size_bytes()
            count = 0
            for segment in self._segments:
                if not segment.size and segment is self._segments[-1]:
                    break  # (compaction may leave an older segment empty)
                expired = (
                    config.retention_ms >= 0
                    and now_ms - segment.largest_timestamp(interval) > config.retention_ms
                )
                oversized = (
                    config.retention_bytes >= 0
                    and remaining - segment.size >= config.retention_bytes
                )
                if not (expired or oversized):
                    break
                remaining -= segment.size
                count += 1
            if not count:
                return 0
            if count == len(self._segments):
                self._roll(now_ms)
            for segment in self._segments[:count]:
                self._delete_segment(segment)
            del self._segments[:count]
            self.log_start_offset = max(self.log_start_offset, self._segments[0].base_offset)
            if self._epochs.truncate_from_start(self.log_start_offset):
                self._epochs.save()
            return count

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
                except FileNotFoundError:
                    if self._deleted:  # the topic went away meanwhile
                        return
                    raise
                with self._lock:
                    self._persisted_recovery_base = max(self._persisted_recovery_base, base)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (epoch, end offset), (-1, -1) if unknown."""
        with self._lock:
            return self._epochs.end_offset_for(epoch, self.log_end_offset)

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
        with self._lock:
            self._close_files()
            self._deleted = True
            self._unflushed = []
        shutil.rmtree(self.directory, ignore_errors=True)


def _base(segment: Segment) -> int:
    return segment.base_offset
