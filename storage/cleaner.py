"""Log compaction (cleanup.policy=compact), after Kafka's log cleaner.

The log falls in three parts: the clean part, below the cleaner checkpoint
(compacted by an earlier pass); the dirty part, written since; and what may not
be cleaned yet: the active segment, segments not fsynced yet, dirty segments
younger than min.compaction.lag.ms, and everything from the segment holding the
first offset of a transaction still open. Only whole segments are cleaned.

PartitionLog.compact(now_ms) runs a pass when the dirty part is at least
min.cleanable.dirty.ratio of the cleanable bytes, or when a delete horizon seen
by the last pass has come; otherwise it returns at once. A pass:

1. reads the headers of the cleanable segments: which transactions were
   aborted, which are still open, the last batch of each producer id;
2. maps every key of the dirty part to its latest offset (records of aborted
   transactions and control batches left out);
3. rewrites the cleanable segments in offset order, as Kafka does:
   - a record is removed when a later offset holds its key, or when it has no key;
   - a tombstone (null value) stays until its batch's delete horizon: the first
     pass that keeps it stamps the batch with now + delete.retention.ms (base
     timestamp and attribute 0x40, KIP-534); a later pass removes it;
   - the records of aborted transactions are removed;
   - a control batch stays while a batch of its transaction is left; then it
     is stamped with a delete horizon, and removed by a pass after it;
   - the last batch of each producer id stays, emptied of its records if they
     all go, so the producer state rebuilt from the headers after a restart
     keeps the producer's epoch and last sequence;
   - a batch that cannot be decoded (codec module missing) is kept whole;
   - kept records keep their offsets, and rebuilt batches their base offset,
     last offset delta and sequences (see storage/batch_rewrite.py);
4. replaces each changed segment, or group of consecutive segments that fit in
   segment.bytes together (merged into one), by a new file.

Crash safety: the new file is written as `<base>.log.cleaned` and fsynced; a
single segment is then renamed over the old `.log`. A group is first renamed to
`<base>.<end>.swap` (the commit point), then the other segments of the group are
deleted and the swap file renamed over the first. PartitionLog.open calls
recover_cleaner_files() (storage/cleaner_files.py): `.cleaned` files are deleted
(old segments intact), `.swap` files are completed. Indexes are rewritten, or rebuilt if missing.
Files are never changed in place, so a LogSlice open on an old file stays good.

Threads: compact() may run in a worker thread. It holds the log's lock only to
pick the segments and to swap each cleaned segment in; retention, DeleteRecords
or close meanwhile make it give up (the next pass starts over).
"""

from __future__ import annotations

import bisect
import hashlib
import os
import threading
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from odradek.protocol.batch import BatchHeader
from odradek.storage.batch_rewrite import decode_records, delete_horizon, rebuild_batch
from odradek.storage.checkpoint import VERSION, fsync_dir, fsync_path, read_lines, write_atomic
from odradek.storage.cleaner_files import CLEANED_SUFFIX, Output, index_of, swap_name, unlink
from odradek.storage.config import INT32_MAX, LogConfig
from odradek.storage.index import SegmentIndex
from odradek.storage.segment import Segment, SharedFd, pread_exact, read_batches, scan_headers

if TYPE_CHECKING:
    from odradek.storage.log import PartitionLog

CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"  # first dirty offset, next delete horizon
MAX_MAP_ENTRIES = 1_000_000  # keys mapped per pass (soft: whole segments)

CONTROL_ABORT = 0
_SCAN_CHUNK = 16 * 1024


@dataclass
class CompactionStats:
    cleaned: bool = False  # False: nothing was due, nothing was read
    dirty_ratio: float = 0.0
    first_dirty_offset: int = -1  # where the dirty part starts after the pass
    segments_read: int = 0
    segments_written: int = 0  # new files swapped in (a merged group counts once)
    bytes_read: int = 0
    bytes_written: int = 0
    records_removed: int = 0  # tombstones included
    tombstones_removed: int = 0
    markers_removed: int = 0
    batches_not_decoded: int = 0  # kept whole


class CompactionState:
    """What the cleaner of one log remembers between passes."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # one pass at a time
        self.first_dirty: int | None = None  # None: not read from the checkpoint yet
        self.next_horizon_ms: int | None = None  # earliest delete horizon still ahead

    def load(self, path: Path) -> None:
        lines = read_lines(path) or []
        numbers = []
        for line in lines[:2]:
            try:
                numbers.append(int(line))
            except ValueError:
                break
        self.first_dirty = max(numbers[0], 0) if numbers else 0
        self.next_horizon_ms = numbers[1] if len(numbers) > 1 and numbers[1] >= 0 else None

    def save(self, path: Path, first_dirty: int, next_horizon_ms: int | None) -> None:
        if (first_dirty, next_horizon_ms) != (self.first_dirty, self.next_horizon_ms):
            horizon = -1 if next_horizon_ms is None else next_horizon_ms
            write_atomic(path, f"{VERSION}\n{first_dirty}\n{horizon}\n")
        self.first_dirty = first_dirty
        self.next_horizon_ms = next_horizon_ms


def compact_log(
    log: PartitionLog,
    now_ms: int,
    *,
    producer_ids: Collection[int] | None = None,
    max_map_entries: int = MAX_MAP_ENTRIES,
) -> CompactionStats:
    """One cleaning pass over `log` if one is due; see the module docstring."""
    state = log._compaction
    if not state.lock.acquire(blocking=False):
        return CompactionStats()
    try:
        plan = _plan(log, state, now_ms)
        if plan is None:
            return CompactionStats()
        return _Pass(log, state, plan, now_ms, producer_ids, max_map_entries).run()
    except OSError:
        if log._closed:  # closed or deleted meanwhile
            return CompactionStats()
        raise
    finally:
        state.lock.release()


# -- choosing what to clean ---------------------------------------------------------------


@dataclass
class _Plan:
    config: LogConfig
    segments: list[Segment]  # the cleanable segments, in order
    ends: list[int]  # where each ends: the next segment's base offset
    files: list[SharedFd]  # open on them for the whole pass
    first_dirty: int
    clean_count: int  # segments[:clean_count] end at or before first_dirty
    ratio: float
    horizon_due: bool


def _plan(log: PartitionLog, state: CompactionState, now_ms: int) -> _Plan | None:
    with log._lock:
        config = log.config
        if log._closed or not config.compacts:
            return None
        segments = log._segments
        count = 0  # never the active segment, nor one waiting for its fsync
        while count < len(segments) - 1 and segments[count] not in log._unflushed:
            count += 1
        if not count:
            return None
        if state.first_dirty is None:
            state.load(log.directory / CLEANER_CHECKPOINT)
        assert state.first_dirty is not None
        first_dirty = max(state.first_dirty, log.log_start_offset)
        ends = [segments[i + 1].base_offset for i in range(count)]
        clean = bisect.bisect_right(ends, first_dirty)
        if config.min_compaction_lag_ms > 0:
            newest = now_ms - config.min_compaction_lag_ms
            interval = config.index_interval_bytes
            for i in range(clean, count):
                if segments[i].largest_timestamp(interval) > newest:
                    count = i
                    break
        chosen = segments[:count]
        ratio = _dirty_ratio(chosen, clean)
        horizon = state.next_horizon_ms
        horizon_due = horizon is not None and horizon <= now_ms
        if not chosen or (ratio < config.min_cleanable_dirty_ratio and not horizon_due):
            return None
        return _Plan(
            config,
            chosen,
            ends[:count],
            [segment.file for segment in chosen],
            first_dirty,
            clean,
            ratio,
            horizon_due,
        )


def _dirty_ratio(segments: list[Segment], clean: int) -> float:
    """Dirty bytes over all bytes; -1 when nothing is dirty."""
    dirty = sum(segment.size for segment in segments[clean:])
    if not dirty:
        return -1.0
    return dirty / (dirty + sum(segment.size for segment in segments[:clean]))


# -- transactions -------------------------------------------------------------------------


@dataclass
class _Transactions:
    aborted: dict[int, list[tuple[int, int]]]  # producer id -> [(first offset, marker offset)]
    first_open: int | None  # first offset of the earliest transaction with no marker yet
    last_batches: list[dict[int, int]]  # per segment: producer id -> last offset of its last batch

    def is_aborted(self, producer_id: int, offset: int) -> bool:
        ranges = self.aborted.get(producer_id)
        if not ranges:
            return False
        i = bisect.bisect_right(ranges, offset, key=_first) - 1
        return i >= 0 and offset < ranges[i][1]


def _first(span: tuple[int, int]) -> int:
    return span[0]


def _scan_transactions(plan: _Plan) -> _Transactions:
    open_since: dict[int, int] = {}
    aborted: dict[int, list[tuple[int, int]]] = {}
    last_batches = []
    for segment, file in zip(plan.segments, plan.files, strict=True):
        last: dict[int, int] = {}
        for header in scan_headers(file.fd, 0, segment.size):
            producer_id = header.producer_id
            if producer_id < 0:
                continue
            if header.is_control:
                first = open_since.pop(producer_id, None)
                if first is not None and _control_type(file.fd, header) == CONTROL_ABORT:
                    aborted.setdefault(producer_id, []).append((first, header.base_offset))
            else:
                last[producer_id] = header.last_offset
                if header.is_transactional:
                    open_since.setdefault(producer_id, header.base_offset)
        last_batches.append(last)
    return _Transactions(aborted, min(open_since.values(), default=None), last_batches)


def _control_type(fd: int, header: BatchHeader) -> int:
    """ABORT (0) or COMMIT (1); -1 if unreadable (then the data is kept, as committed)."""
    records = decode_records(header, pread_exact(fd, header.size, header.position))
    if records and records[0].key is not None and len(records[0].key) >= 4:
        return int.from_bytes(records[0].key[2:4], "big", signed=True)
    return -1


# -- one pass -----------------------------------------------------------------------------


@dataclass
class _Cleaned:
    path: Path
    size: int
    index: SegmentIndex


@dataclass
class _Pass:
    log: PartitionLog
    state: CompactionState
    plan: _Plan
    now_ms: int
    producer_ids: Collection[int] | None
    max_map_entries: int
    stats: CompactionStats = field(default_factory=CompactionStats)
    offsets: dict[bytes, int] = field(default_factory=dict)  # key (or its hash) -> latest offset
    txns: _Transactions = field(default_factory=lambda: _Transactions({}, None, []))
    last_of_producer: dict[int, int] = field(default_factory=dict)
    txn_batches_kept: set[int] = field(default_factory=set)  # producers, since their marker
    next_horizon: int | None = None

    def run(self) -> CompactionStats:
        plan = self.plan
        self.txns = _scan_transactions(plan)
        count = len(plan.segments)
        if self.txns.first_open is not None:
            count = bisect.bisect_right(plan.ends, self.txns.first_open)
        ratio = _dirty_ratio(plan.segments[:count], plan.clean_count)
        if not count or (ratio < plan.config.min_cleanable_dirty_ratio and not plan.horizon_due):
            return CompactionStats()
        self.stats.cleaned = True
        self.stats.dirty_ratio = max(ratio, 0.0)
        count = self._map_dirty(count)
        for last in self.txns.last_batches[:count]:
            self.last_of_producer.update(last)
        if self.producer_ids is not None:
            ids = self.producer_ids
            self.last_of_producer = {p: o for p, o in self.last_of_producer.items() if p in ids}
        for group in _groups(plan, count):
            cleaned = self._clean_group(group)
            if cleaned is not None and not self._swap(group, cleaned):
                return self.stats  # the log changed meanwhile: start over next time
        first_dirty = plan.first_dirty
        if count > plan.clean_count:
            first_dirty = max(first_dirty, plan.ends[count - 1])
        path = self.log.directory / CLEANER_CHECKPOINT
        self.state.save(path, first_dirty, self.next_horizon)
        self.stats.first_dirty_offset = first_dirty
        return self.stats

    def _map_dirty(self, count: int) -> int:
        """Map the keys of the dirty segments below `count`; returns how many segments
        the pass cleans (fewer when the map is full)."""
        plan = self.plan
        offsets = self.offsets
        for i in range(plan.clean_count, count):
            for _position, header, batch in read_batches(plan.files[i].fd, plan.segments[i].size):
                if header.is_control or (
                    header.is_transactional
                    and self.txns.is_aborted(header.producer_id, header.base_offset)
                ):
                    continue
                records = decode_records(header, batch)
                for record in records or ():
                    if record.key is not None:
                        offsets[_map_key(record.key)] = header.base_offset + record.offset_delta
            if len(offsets) >= self.max_map_entries:
                return i + 1
        return count

    # -- deciding what stays ------------------------------------------------------------

    def _filter(self, header: BatchHeader, batch: bytes) -> bytes | None:
        """`batch` itself when it stays as it is, a rebuilt batch, or None to drop it."""
        if header.is_control:
            return self._filter_marker(header, batch)
        producer_id = header.producer_id
        last = producer_id >= 0 and self.last_of_producer.get(producer_id) == header.last_offset
        if header.is_transactional and self.txns.is_aborted(producer_id, header.base_offset):
            self.stats.records_removed += header.records_count
            return self._emptied(header, batch, last)
        records = decode_records(header, batch)
        if records is None:
            self.stats.batches_not_decoded += 1
            self._kept(header)
            return batch
        horizon = delete_horizon(header)
        kept = []
        tombstones = False
        for record in records:
            offset = header.base_offset + record.offset_delta
            key = record.key
            if key is None or self.offsets.get(_map_key(key), offset) > offset:
                self.stats.records_removed += 1
                continue
            if record.value is None:
                if horizon is not None and horizon <= self.now_ms:
                    self.stats.records_removed += 1
                    self.stats.tombstones_removed += 1
                    continue
                tombstones = True
            kept.append(record)
        if not kept:
            return self._emptied(header, batch, last)
        self._kept(header)
        stamp = None
        if tombstones:
            if horizon is None:
                stamp = horizon = self.now_ms + self.plan.config.delete_retention_ms
            self._horizon_ahead(horizon)
        if len(kept) == len(records) and stamp is None:
            return batch
        return rebuild_batch(header, kept, delete_horizon_ms=stamp)

    def _filter_marker(self, header: BatchHeader, batch: bytes) -> bytes | None:
        producer_id = header.producer_id
        if producer_id in self.txn_batches_kept:
            self.txn_batches_kept.discard(producer_id)
            return batch  # the data it marks is still here
        horizon = delete_horizon(header)
        if horizon is not None and horizon <= self.now_ms:
            self.stats.markers_removed += 1
            return None
        if horizon is not None:
            self._horizon_ahead(horizon)
            return batch
        records = decode_records(header, batch)
        if records is None:
            return batch
        stamp = self.now_ms + self.plan.config.delete_retention_ms
        self._horizon_ahead(stamp)
        return rebuild_batch(header, records, delete_horizon_ms=stamp)

    def _emptied(self, header: BatchHeader, batch: bytes, last: bool) -> bytes | None:
        """A batch left with no records: dropped, unless its producer's last batch."""
        if not last:
            return None
        self._kept(header)
        return batch if header.records_count == 0 else rebuild_batch(header, [])

    def _kept(self, header: BatchHeader) -> None:
        if header.is_transactional:
            self.txn_batches_kept.add(header.producer_id)

    def _horizon_ahead(self, horizon: int) -> None:
        if self.next_horizon is None or horizon < self.next_horizon:
            self.next_horizon = horizon

    # -- writing --------------------------------------------------------------------------

    def _clean_group(self, group: list[int]) -> _Cleaned | None:
        """Write the cleaned file of a group of segments; None if a lone segment
        would not change."""
        plan = self.plan
        first = plan.segments[group[0]]
        path = self.log.directory / f"{first.base_offset:020d}{CLEANED_SUFFIX}"
        out = Output(path) if len(group) > 1 else None
        try:
            for i in group:
                segment, fd = plan.segments[i], plan.files[i].fd
                self.stats.segments_read += 1
                self.stats.bytes_read += segment.size
                for position, header, batch in read_batches(fd, segment.size):
                    new = self._filter(header, batch)
                    if out is None:
                        if new is batch:
                            continue
                        out = Output(path)
                        out.copy(fd, 0, position)  # the batches before, unchanged
                    if new is not None:
                        out.write(new)
            if out is None:
                return None
            out.finish()
            if out.size > INT32_MAX:
                raise ValueError(f"cleaned segment {path} is too large")
        except BaseException:
            if out is not None:
                out.discard()
            raise
        last = plan.files[group[-1]].fd
        stat = os.fstat(last)  # Kafka keeps the group's modification time
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        self.stats.bytes_written += out.size
        end = plan.ends[group[-1]]
        index = index_of(path, first.base_offset, out.size, end, plan.config.index_interval_bytes)
        return _Cleaned(path, out.size, index)

    def _swap(self, group: list[int], cleaned: _Cleaned) -> bool:
        """Put the cleaned file in place of the group's segments; False if the log
        changed meanwhile (the cleaned file is dropped)."""
        log = self.log
        olds = [self.plan.segments[i] for i in group]
        base = olds[0].base_offset
        end = self.plan.ends[group[-1]]
        directory = log.directory
        interval = self.plan.config.index_interval_bytes
        with log._lock:
            segments = log._segments
            at = _find(segments, olds)
            if log._closed or at is None:
                unlink(cleaned.path)
                return False
            for old in olds:  # readers iterating over these keep reading the old files
                old.file  # noqa: B018 - opens it
                old.index(interval)
            if len(olds) > 1:
                swap = directory / swap_name(base, end)
                os.replace(cleaned.path, swap)
                fsync_dir(directory)  # from here on, open() completes the swap
                for old in olds[1:]:
                    unlink(old.path, old.index_path, old.time_index_path)
                unlink(olds[0].index_path, olds[0].time_index_path)
                os.replace(swap, olds[0].path)
            else:
                unlink(olds[0].index_path, olds[0].time_index_path)
                os.replace(cleaned.path, olds[0].path)
            new = Segment(directory, base, cleaned.size, end)
            new.adopt_index(cleaned.index)
            segments[at : at + len(olds)] = [new]
            unsynced = sorted(new.unsynced)
            new.unsynced.clear()
        fsync_dir(directory)  # before the next group: a marker never goes before its data
        for path in unsynced:
            fsync_path(path)
        self.stats.segments_written += 1
        return True


def _groups(plan: _Plan, count: int) -> list[list[int]]:
    """Consecutive segments that fit in one (segment.bytes, int32 relative offsets)."""
    groups: list[list[int]] = []
    size = 0
    for i in range(count):
        segment = plan.segments[i]
        if groups:
            base = plan.segments[groups[-1][0]].base_offset
            if (
                size + segment.size <= plan.config.segment_bytes
                and plan.ends[i] - 1 - base <= INT32_MAX
            ):
                groups[-1].append(i)
                size += segment.size
                continue
        groups.append([i])
        size = segment.size
    return groups


def _find(segments: list[Segment], group: list[Segment]) -> int | None:
    """Where `group` lies in `segments`, before the active segment; None if it does not."""
    for at, segment in enumerate(segments[:-1]):
        if segment is group[0]:
            here = segments[at : at + len(group)]
            same = len(here) == len(group) and all(a is b for a, b in zip(here, group, strict=True))
            return at if same and at + len(group) < len(segments) else None
    return None


def _map_key(key: bytes) -> bytes:
    return key if len(key) < 16 else hashlib.blake2b(key, digest_size=16).digest()
