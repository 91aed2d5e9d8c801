"""Opening a partition's log (storage/log.py): the segments in its directory, and
after a crash (no clean-shutdown marker) every batch written since the recovery
point checked, the log cut at the first bad one, the leader epochs rebuilt."""

from __future__ import annotations

import bisect
import contextlib
import logging
import os
from typing import TYPE_CHECKING

from odradek.storage.checkpoint import read_lines, read_offset
from odradek.storage.cleaner_files import recover_cleaner_files
from odradek.storage.epochs import LeaderEpochCache
from odradek.storage.log_files import (
    CLEAN_SHUTDOWN,
    LEADER_EPOCH_CHECKPOINT,
    LOG_START_CHECKPOINT,
    RECOVERY_CHECKPOINT,
    segment_base,
)
from odradek.storage.segment import Segment, parse_segment_name

if TYPE_CHECKING:
    from odradek.storage.log import PartitionLog

logger = logging.getLogger("storage.log")


def load(log: PartitionLog) -> None:
    directory = log.directory
    recover_cleaner_files(directory)
    bases = sorted(
        base for name in os.listdir(directory) if (base := parse_segment_name(name)) is not None
    )
    segments = []
    for i, base in enumerate(bases):
        size = os.stat(directory / f"{base:020d}.log").st_size
        next_offset = bases[i + 1] if i + 1 < len(bases) else base
        segments.append(Segment(directory, base, size, next_offset))
    log._segments = segments
    log._epochs, epochs_readable = LeaderEpochCache.load(directory / LEADER_EPOCH_CHECKPOINT)
    start_checkpoint = read_offset(directory / LOG_START_CHECKPOINT) or 0

    marker = _read_marker(log)
    if marker is not None and segments and epochs_readable:
        end_offset, base, size = marker
        active = segments[-1]
        if active.base_offset == base and active.size == size and end_offset >= base:
            active.next_offset = end_offset
            log._recovery_point = end_offset
            log._persisted_recovery_base = base
            log._marker_present = True
    if not log._marker_present:
        with contextlib.suppress(FileNotFoundError):
            (directory / CLEAN_SHUTDOWN).unlink()
        if segments:
            _recover(log, epochs_readable)

    if not log._segments:
        log._segments = [Segment.create(directory, start_checkpoint)]
        log._dir_dirty = True
        log._writes += 1
    active = log._segments[-1]
    active.open_writable()
    log.log_end_offset = active.next_offset
    log.log_start_offset = min(
        max(start_checkpoint, log._segments[0].base_offset), log.log_end_offset
    )
    log._drop_segments_below(log.log_start_offset)
    if log._epochs.truncate_from_start(log.log_start_offset):
        log._epochs.save()


def _read_marker(log: PartitionLog) -> tuple[int, int, int] | None:
    lines = read_lines(log.directory / CLEAN_SHUTDOWN)
    if not lines:
        return None
    try:
        end_offset, base, size = (int(part) for part in lines[0].split())
    except ValueError:
        return None
    return end_offset, base, size


def _recover(log: PartitionLog, epochs_readable: bool) -> None:
    """Check the segments written since the last flush; cut at the first bad batch."""
    segments = log._segments
    recovery_point = read_offset(log.directory / RECOVERY_CHECKPOINT) or 0
    first = max(0, bisect.bisect_right(segments, recovery_point, key=segment_base) - 1)
    log._persisted_recovery_base = segments[first].base_offset
    interval = log.config.index_interval_bytes
    if not epochs_readable:
        logger.warning("rebuilding the leader epochs of %s from the batches", log.directory)
        for segment in segments[:first]:
            for header in segment.headers():
                log._epochs.assign(header.partition_leader_epoch, header.base_offset, persist=False)
    epochs_before = log._epochs.entries
    min_offset = segments[first].base_offset
    for i in range(first, len(segments)):
        segment = segments[i]
        result = segment.recover(min_offset, interval)
        log.scanned_segments += 1
        for epoch, offset in result.epochs:
            log._epochs.assign(epoch, offset, persist=False)
        later = segments[i + 1 :]
        if later and (result.truncated or later[0].base_offset < segment.next_offset):
            logger.warning(
                "dropping %d segments of %s after a bad batch", len(later), log.directory
            )
            for dropped in later:
                dropped.delete_files()
            del segments[i + 1 :]
            break
        min_offset = segment.next_offset
    log.recovered_by_scan = True
    log._unflushed = segments[first:-1]
    end_offset = segments[-1].next_offset
    log._recovery_point = min(recovery_point, end_offset)
    log._writes += 1
    log._epochs.truncate_from_end(end_offset)
    if log._epochs.entries != epochs_before or not epochs_readable:
        log._epochs.save()
