"""Finding records by time in a partition's log (storage/log.py), through each
segment's time index: ListOffsets by timestamp and the largest timestamp (v7+)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from odradek.protocol.batch import BatchHeader, read_header
from odradek.storage.index import NO_TIMESTAMP
from odradek.storage.records import record_timestamps
from odradek.storage.segment import Segment

if TYPE_CHECKING:
    from odradek.storage.log import PartitionLog


def offset_for_timestamp(log: PartitionLog, timestamp: int) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record with a timestamp >= `timestamp`."""
    with log._lock:
        log._check_open()
        interval = log.config.index_interval_bytes
        start = log.log_start_offset
        for segment in log._segments:
            index = segment.index(interval)
            if index.max_timestamp < timestamp:
                continue
            from_offset = max(index.offset_before_time(timestamp), start)
            for header in segment.headers(index.position_for(from_offset)):
                if header.next_offset <= from_offset or header.max_timestamp < timestamp:
                    continue
                found = _find_in_batch(log, segment, header, timestamp)
                if found is not None:
                    return found
        return None


def _find_in_batch(
    log: PartitionLog, segment: Segment, header: BatchHeader, timestamp: int
) -> tuple[int, int] | None:
    data = segment.read(header.position, header.size)
    records = record_timestamps(read_header(data), data)
    start = log.log_start_offset
    if records is None:
        return max(header.base_offset, start), header.max_timestamp
    for offset, stamp in records:
        if offset >= start and stamp >= timestamp:
            return offset, stamp
    return None


def max_timestamp(log: PartitionLog) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record with the largest timestamp."""
    with log._lock:
        log._check_open()
        interval = log.config.index_interval_bytes
        largest = max(
            (segment.index(interval).max_timestamp for segment in log._segments),
            default=NO_TIMESTAMP,
        )
        if largest < 0:
            return None
        found = log.offset_for_timestamp(largest)
        if found is not None:
            return found
        # The largest timestamp is on records below the log start offset, which
        # only the first segment holds: find the largest of the records left.
        live = max(
            (segment.index(interval).max_timestamp for segment in log._segments[1:]),
            default=NO_TIMESTAMP,
        )
        first = log._segments[0]
        start = log.log_start_offset
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
        return log.offset_for_timestamp(live) if live >= 0 else None
