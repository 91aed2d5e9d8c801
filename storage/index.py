"""The sparse offset and time indexes of one segment, kept in memory.

`.index` entries are (int32 offset relative to the segment base, int32 file
position) of a batch start, keyed by the batch's base offset. `.timeindex`
entries are (int64 timestamp, int32 relative offset): every record at or
before that offset has a timestamp <= the entry's, and timestamps never
decrease. Both are big-endian. Entries are appended in memory and written to
the files when the segment is flushed, rolled or closed. Any subset of correct
offset entries is a correct index; the time index of a sealed segment must end
with (largest timestamp, last offset), which is how a truncated one is caught.
"""

from __future__ import annotations

import bisect
import struct
import sys
from array import array
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from odradek.protocol.batch import BatchHeader

OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")
NO_TIMESTAMP = -1


class SegmentIndex:
    def __init__(self, base_offset: int) -> None:
        self.base_offset = base_offset
        self.offsets = array("i")  # relative base offset of an indexed batch
        self.positions = array("i")  # its file position
        self.times = array("q")  # largest timestamp so far
        self.time_offsets = array("i")  # relative offset up to which `times` holds
        self.persisted_offsets = 0  # entries already written to the .index file
        self.persisted_times = 0
        self.bytes_since_entry = 0
        self.max_timestamp = NO_TIMESTAMP
        self.last_offset = base_offset - 1

    def add_batch(
        self,
        base_offset: int,
        last_offset: int,
        position: int,
        size: int,
        max_timestamp: int,
        interval: int,
    ) -> None:
        """Account for a batch appended at `position`; O(1)."""
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
        self.last_offset = last_offset
        if self.bytes_since_entry >= interval and position > 0:
            self.offsets.append(base_offset - self.base_offset)
            self.positions.append(position)
            self._add_time(self.max_timestamp, last_offset)
            self.bytes_since_entry = 0
        self.bytes_since_entry += size

    def add_headers(self, headers: Iterable[BatchHeader], interval: int) -> None:
        """Account for batches already in a file, from their headers (file positions)."""
        for header in headers:
            self.add_batch(
                header.base_offset,
                header.last_offset,
                header.position,
                header.size,
                header.max_timestamp,
                interval,
            )

    def seal(self) -> None:
        """The segment takes no more batches (for now): end the time index with an
        entry (largest timestamp, last offset), so a reader can tell it is complete."""
        if self.last_offset < self.base_offset:
            return
        if not self.time_offsets or self.time_offsets[-1] != self.last_offset - self.base_offset:
            self.times.append(self.max_timestamp)
            self.time_offsets.append(self.last_offset - self.base_offset)

    def _add_time(self, timestamp: int, offset: int) -> None:
        if timestamp > (self.times[-1] if self.times else NO_TIMESTAMP):
            self.times.append(timestamp)
            self.time_offsets.append(offset - self.base_offset)

    def position_for(self, offset: int) -> int:
        """File position of the last indexed batch whose base offset is <= `offset`."""
        i = bisect.bisect_right(self.offsets, offset - self.base_offset) - 1
        return self.positions[i] if i >= 0 else 0

    def position_before(self, position_limit: int, offset_limit: int | None) -> int:
        """The furthest indexed batch start <= position_limit with base offset < offset_limit.

        Every batch before that position is whole and below the offset limit.
        """
        i = bisect.bisect_right(self.positions, position_limit) - 1
        if offset_limit is not None:
            i = min(i, bisect.bisect_left(self.offsets, offset_limit - self.base_offset) - 1)
        return self.positions[i] if i >= 0 else 0

    def offset_before_time(self, timestamp: int) -> int:
        """An offset such that every record before it has a timestamp < `timestamp`."""
        i = bisect.bisect_left(self.times, timestamp) - 1
        if i < 0:
            return self.base_offset
        return self.base_offset + self.time_offsets[i] + 1

    def pending(self) -> tuple[bytes, bytes]:
        """Entries not yet in the files, encoded; call `mark_persisted` once written."""
        offsets = b"".join(
            OFFSET_ENTRY.pack(self.offsets[i], self.positions[i])
            for i in range(self.persisted_offsets, len(self.offsets))
        )
        times = b"".join(
            TIME_ENTRY.pack(self.times[i], self.time_offsets[i])
            for i in range(self.persisted_times, len(self.times))
        )
        return offsets, times

    def mark_persisted(self) -> None:
        self.persisted_offsets = len(self.offsets)
        self.persisted_times = len(self.times)

    @classmethod
    def parse(
        cls, base_offset: int, index_data: bytes, time_data: bytes, segment_size: int
    ) -> SegmentIndex | None:
        """The index stored in the files, or None if anything about it is implausible."""
        if len(index_data) % OFFSET_ENTRY.size or len(time_data) % TIME_ENTRY.size:
            return None
        index = cls(base_offset)
        pairs = array("i", index_data)
        if sys.byteorder == "little":
            pairs.byteswap()
        index.offsets = pairs[0::2]
        index.positions = pairs[1::2]
        for timestamp, offset in TIME_ENTRY.iter_unpack(time_data):
            index.times.append(timestamp)
            index.time_offsets.append(offset)
        if not (
            _increasing(index.offsets, strict=True, minimum=0)
            and _increasing(index.positions, strict=True, minimum=1)
            and _increasing(index.times, strict=False, minimum=NO_TIMESTAMP)
            and _increasing(index.time_offsets, strict=False, minimum=0)
        ):
            return None
        if index.positions and index.positions[-1] >= segment_size:
            return None
        index.mark_persisted()
        if index.times:
            index.max_timestamp = index.times[-1]
            index.last_offset = base_offset + index.time_offsets[-1]
        return index


def _increasing(values: array[int], *, strict: bool, minimum: int) -> bool:
    if not values:
        return True
    if values[0] < minimum:
        return False
    if strict:
        return all(a < b for a, b in zip(values, values[1:], strict=False))
    return all(a <= b for a, b in zip(values, values[1:], strict=False))
