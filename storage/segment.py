"""One segment: a `.log` file of whole batches plus its sparse indexes."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from odradek.protocol.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    InvalidBatch,
    TruncatedBatch,
    crc_matches,
    read_header,
)
from odradek.storage.checkpoint import write_all
from odradek.storage.index import SegmentIndex

logger = logging.getLogger(__name__)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"

# Same layout odradek.protocol.batch reads; used to peek at a header without the batch body.
_HEADER = struct.Struct(">qiibIhiqqqhii")
_SCAN_CHUNK = 16 * 1024
_RECOVERY_CHUNK = 1 << 20
_READ_CHUNK = 1 << 20
_LENGTH = struct.Struct(">i")
INT32_MAX = (1 << 31) - 1

# Large appends reserve disk blocks ahead of the end of the file (fallocate with
# FALLOC_FL_KEEP_SIZE, so the file size is unchanged): writing into blocks already
# reserved skips the filesystem's per-block allocation, a third of the kernel's
# cost of writing a megabyte on ext4. Sealing the segment gives back what is left.
RESERVE_FROM = 64 * 1024  # appends at least this large reserve ahead
RESERVE_AHEAD = 16 * 1024 * 1024
_FALLOC_FL_KEEP_SIZE = 1

# Fault injection for tests of a full disk where no small file system can be
# mounted: while the file this names exists, every segment append fails with ENOSPC.
FULL_DISK_FLAG = os.environ.get("ODRADEK_FULL_DISK_FLAG", "")


def _load_fallocate() -> Any:
    try:
        fallocate = ctypes.CDLL("libc.so.6", use_errno=True).fallocate
    except (OSError, AttributeError):  # not Linux with glibc
        return None
    fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    return fallocate


_fallocate = _load_fallocate()


def reserve_blocks(fd: int, offset: int, length: int) -> bool:
    """Allocate disk blocks for [offset, offset + length) without changing the file size."""
    return _fallocate is not None and _fallocate(fd, _FALLOC_FL_KEEP_SIZE, offset, length) == 0


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


def parse_segment_name(name: str) -> int | None:
    """Base offset of a `<20 digits>.log` file name, else None."""
    stem, dot, suffix = name.partition(".")
    if dot and suffix == "log" and len(stem) == 20 and stem.isdigit():
        return int(stem)
    return None


class SharedFd:
    """A file descriptor closed when its last holder drops it.

    A segment and every LogSlice read from it hold the same SharedFd, so a
    slice stays readable (and sendfile-able) even if retention deletes the
    segment meanwhile: the data lives until the last slice is gone.
    """

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __del__(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


def scan_headers(fd: int, position: int, end: int) -> Iterator[BatchHeader]:
    """Headers (with file positions) of the batches in [position, end) of a file,
    read in chunks without their bodies; no CRC check."""
    buf = b""
    buf_start = position
    while position < end:
        at = position - buf_start
        if at + HEADER_SIZE > len(buf):
            buf = os.pread(fd, min(_SCAN_CHUNK, end - position), position)
            buf_start, at = position, 0
        header = peek_header(buf, at, position)
        if position + header.size > end:
            raise TruncatedBatch(f"batch at file position {position} runs past {end}")
        yield header
        position += header.size


def pread_exact(fd: int, size: int, position: int) -> bytes:
    data = os.pread(fd, size, position)
    if len(data) == size:
        return data
    parts = [data]
    got = len(data)
    while got < size:
        more = os.pread(fd, size - got, position + got)
        if not more:
            raise TruncatedBatch(f"file ends {size - got} bytes early at {position + got}")
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def read_batches(fd: int, end: int, position: int = 0) -> Iterator[tuple[int, BatchHeader, bytes]]:
    """(file position, header at position 0, batch) for each batch in [position, end),
    read a chunk at a time."""
    while position < end:
        chunk = pread_exact(fd, min(_READ_CHUNK, end - position), position)
        at = 0
        while at < len(chunk):
            try:
                header = read_header(chunk, at)
            except TruncatedBatch:
                break
            batch = chunk[at : at + header.size]
            yield position + at, read_header(batch), batch
            at += header.size
        if at == 0:  # one batch larger than the chunk
            length = int.from_bytes(chunk[8:12], "big", signed=True) + LOG_OVERHEAD
            if not HEADER_SIZE <= length <= end - position:
                raise TruncatedBatch(f"no whole batch at byte {position} of a segment")
            batch = pread_exact(fd, length, position)
            yield position, read_header(batch), batch
            at = length
        position += at


def peek_header(buf: bytes, offset: int, position: int) -> BatchHeader:
    """The header at buf[offset:], whose batch may extend past the buffer."""
    if len(buf) - offset < HEADER_SIZE:
        raise TruncatedBatch(f"a batch header at {position} is cut short")
    header = BatchHeader._make((position, *_HEADER.unpack_from(buf, offset)))
    if header.magic != 2 or header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise InvalidBatch(f"no valid batch header at {position}")
    return header


@dataclass
class RecoveredSegment:
    valid_size: int
    next_offset: int
    epochs: list[tuple[int, int]] = field(default_factory=list)  # (epoch, first offset)
    reason: str = ""
    truncated: bool = False


class Segment:
    def __init__(self, directory: Path, base_offset: int, size: int, next_offset: int) -> None:
        self.base_offset = base_offset
        name = segment_name(base_offset)
        self.path = directory / (name + LOG_SUFFIX)
        self.index_path = directory / (name + INDEX_SUFFIX)
        self.time_index_path = directory / (name + TIME_INDEX_SUFFIX)
        self.size = size
        self.next_offset = next_offset
        self.roll_base_ms: int | None = None  # when it started, for segment.ms
        self._file: SharedFd | None = None
        self._writable = False
        self._reserved_end = 0  # blocks are reserved up to here (see RESERVE_FROM)
        self._index: SegmentIndex | None = None
        self.unsynced: set[Path] = set()  # index files written since the last fsync

    @classmethod
    def create(cls, directory: Path, base_offset: int) -> Segment:
        segment = cls(directory, base_offset, 0, base_offset)
        for stale in (segment.index_path, segment.time_index_path):
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()
        fd = os.open(segment.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC, 0o644)
        segment._file = SharedFd(fd)
        segment._writable = True
        segment._index = SegmentIndex(base_offset)
        return segment

    # -- file access ---------------------------------------------------------------

    def open_writable(self) -> None:
        if not self._writable:
            self._file = SharedFd(os.open(self.path, os.O_RDWR | os.O_APPEND))
            self._writable = True

    @property
    def file(self) -> SharedFd:
        if self._file is None:
            self._file = SharedFd(os.open(self.path, os.O_RDONLY))
        return self._file

    def append(self, data: bytes | bytearray | memoryview) -> None:
        """One write of whole batches; a failed write leaves no partial batch behind."""
        if FULL_DISK_FLAG and os.path.exists(FULL_DISK_FLAG):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
        fd = self.file.fd
        if len(data) >= RESERVE_FROM and self.size + len(data) > self._reserved_end:
            self._reserve_ahead(fd, self.size + len(data) + RESERVE_AHEAD)
        try:
            written = os.write(fd, data)
            if written != len(data):  # short only when the disk is full
                write_all(fd, memoryview(data)[written:])
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, self.size)
            raise
        self.size += len(data)

    def _reserve_ahead(self, fd: int, end: int) -> None:
        if reserve_blocks(fd, self.size, end - self.size):
            self._reserved_end = end
        else:  # the filesystem cannot: stop asking
            self._reserved_end = 1 << 62

    def _release_reserved(self) -> None:
        if self._writable and self._file is not None and self._reserved_end > self.size:
            with contextlib.suppress(OSError):
                os.ftruncate(self._file.fd, self.size)  # frees blocks past the end
        self._reserved_end = 0

    def read(self, position: int, size: int) -> bytes:
        return pread_exact(self.file.fd, size, position)

    def headers(self, position: int = 0, end: int | None = None) -> Iterator[BatchHeader]:
        """Headers of the batches from `position` on, with file positions; no CRC check."""
        return scan_headers(self.file.fd, position, self.size if end is None else end)

    def first_header(self) -> BatchHeader | None:
        if self.size == 0:
            return None
        return next(self.headers(0), None)

    def close(self) -> None:
        self._release_reserved()
        self._file = None  # LogSlices still holding it keep it open
        self._writable = False

    def delete_files(self) -> None:
        self.close()
        self._index = None
        for path in (self.path, self.index_path, self.time_index_path):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    # -- indexes ---------------------------------------------------------------------

    def index(self, interval: int) -> SegmentIndex:
        """The indexes, loaded from the files on first use, rebuilt if they look wrong."""
        if self._index is None:
            index = self._load_index()
            if index is None:
                index = self.rebuild_index(interval)
            self._index = index
        return self._index

    def largest_timestamp(self, interval: int) -> int:
        """The largest record timestamp, else the file's modification time (what
        retention and the cleaner's min.compaction.lag.ms go by)."""
        largest = self.index(interval).max_timestamp
        if largest >= 0:
            return largest
        return int(os.stat(self.path).st_mtime * 1000)

    def _load_index(self) -> SegmentIndex | None:
        try:
            index_data = self.index_path.read_bytes()
            time_data = self.time_index_path.read_bytes()
        except FileNotFoundError:
            return None if self.size else SegmentIndex(self.base_offset)
        index = SegmentIndex.parse(self.base_offset, index_data, time_data, self.size)
        if index is None:
            logger.warning("rebuilding the malformed index of %s", self.path)
            return None
        if index.offsets:
            # The last entry must point at a batch with the offset it claims.
            try:
                header = next(self.headers(index.positions[-1]))
            except (InvalidBatch, StopIteration):
                header = None
            if header is None or header.base_offset != self.base_offset + index.offsets[-1]:
                logger.warning("rebuilding the stale index of %s", self.path)
                return None
        # A sealed index ends with the segment's last offset (see SegmentIndex.seal).
        if self.size and (
            not index.time_offsets
            or self.base_offset + index.time_offsets[-1] != self.next_offset - 1
        ):
            logger.warning("rebuilding the incomplete time index of %s", self.path)
            return None
        return index

    def rebuild_index(self, interval: int) -> SegmentIndex:
        """Index built from the batch headers (no CRC check), written to the files."""
        index = SegmentIndex(self.base_offset)
        index.add_headers(self.headers(0), interval)
        if self.size:
            # Compaction may have removed the segment's last records: it still ends
            # where the next one starts (what _load_index checks).
            index.last_offset = max(index.last_offset, self.next_offset - 1)
        index.seal()
        self._index = index
        self.write_index_files()
        return index

    def adopt_index(self, index: SegmentIndex) -> None:
        """Use `index`, built for this segment's file, and write it to the index files."""
        self._index = index
        self.write_index_files()

    def write_index_files(self) -> None:
        """Replace both index files with everything in memory."""
        if self._index is None:
            return
        self._index.persisted_offsets = self._index.persisted_times = 0
        self._write_pending(os.O_TRUNC)

    def persist_index(self) -> bool:
        """Append the entries not yet in the files; True if anything was written."""
        if self._index is None:
            return False
        if not self.index_path.exists() or not self.time_index_path.exists():
            self.write_index_files()
            return True
        return self._write_pending(os.O_APPEND)

    def _write_pending(self, mode: int) -> bool:
        assert self._index is not None
        offsets, times = self._index.pending()
        written = False
        for path, data in ((self.index_path, offsets), (self.time_index_path, times)):
            if data or mode == os.O_TRUNC or not path.exists():
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | mode, 0o644)
                try:
                    write_all(fd, data)
                finally:
                    os.close(fd)
                self.unsynced.add(path)
                written = True
        self._index.mark_persisted()
        return written

    def seal(self) -> None:
        """No more appends: final time entry, then indexes to the files."""
        self._release_reserved()
        if self._index is not None:
            self._index.seal()
        self.persist_index()

    # -- recovery --------------------------------------------------------------------

    def recover(self, min_offset: int, interval: int) -> RecoveredSegment:
        """Check every batch (length, magic, CRC32C, increasing offsets) and rebuild
        the indexes. Stops at the first bad batch: its position is `valid_size`."""
        fd = self.file.fd
        file_size = os.fstat(fd).st_size
        index = SegmentIndex(self.base_offset)
        result = RecoveredSegment(0, max(min_offset, self.base_offset))
        latest_epoch = -1
        buf = b""
        buf_start = 0
        position = 0
        while position < file_size:
            remaining = file_size - position
            at = position - buf_start
            if len(buf) - at < LOG_OVERHEAD:
                buf = os.pread(fd, min(_RECOVERY_CHUNK, remaining), position)
                buf_start, at = position, 0
            if remaining < HEADER_SIZE:
                result.reason = "torn batch header"
                break
            size = _LENGTH.unpack_from(buf, at + 8)[0] + LOG_OVERHEAD
            if size < HEADER_SIZE or size > remaining:
                result.reason = f"impossible batch length at byte {position}"
                break
            if len(buf) - at < size:
                buf = os.pread(fd, min(max(_RECOVERY_CHUNK, size), remaining), position)
                buf_start, at = position, 0
            try:
                header = read_header(buf, at)
            except InvalidBatch as exc:
                result.reason = str(exc)
                break
            if not crc_matches(buf, header):
                result.reason = f"CRC mismatch at byte {position}"
                break
            if header.base_offset < result.next_offset:
                result.reason = f"offset {header.base_offset} at byte {position} goes backwards"
                break
            if header.last_offset - self.base_offset > INT32_MAX:
                result.reason = f"offset {header.last_offset} does not fit this segment"
                break
            index.add_batch(
                header.base_offset,
                header.last_offset,
                position,
                header.size,
                header.max_timestamp,
                interval,
            )
            if header.partition_leader_epoch > latest_epoch:
                latest_epoch = header.partition_leader_epoch
                result.epochs.append((latest_epoch, header.base_offset))
            result.next_offset = header.next_offset
            position += header.size
        result.valid_size = position
        result.truncated = position < file_size
        if result.truncated:
            logger.warning(
                "truncating %s at byte %d of %d: %s",
                self.path,
                position,
                file_size,
                result.reason or "torn batch",
            )
            os.truncate(self.path, position)
        self.size = position
        self.next_offset = result.next_offset
        if position == 0:
            self.next_offset = max(min_offset, self.base_offset)
        index.last_offset = self.next_offset - 1
        index.seal()
        self._index = index
        self.write_index_files()
        return result
