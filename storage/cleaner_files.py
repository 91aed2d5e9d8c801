"""The compaction pass's files on disk (see storage/cleaner.py for the pass).

- A cleaned segment is written as `<base>.log.cleaned` through a buffer and fsynced
  (Output); a group of segments merged into one becomes `<base>.<end>.swap` before
  the old files go, which is the commit point.
- recover_cleaner_files(), called when a partition log opens, undoes what a crash
  interrupted before that point (drops `.cleaned` files) and completes what it
  interrupted after it (finishes `.swap` files).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from odradek.storage.checkpoint import fsync_dir, write_all
from odradek.storage.index import SegmentIndex
from odradek.storage.segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    parse_segment_name,
    pread_exact,
    scan_headers,
)

CLEANED_SUFFIX = ".log.cleaned"
SWAP_SUFFIX = ".swap"
_CHUNK = 1 << 20


class Output:
    """A new segment file, written through a buffer."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self.size = 0
        self._buffer = bytearray()

    def write(self, data: bytes) -> None:
        self._buffer += data
        self.size += len(data)
        if len(self._buffer) >= _CHUNK:
            self._flush()

    def copy(self, fd: int, start: int, end: int) -> None:
        while start < end:
            chunk = pread_exact(fd, min(_CHUNK, end - start), start)
            self.write(chunk)
            start += len(chunk)

    def _flush(self) -> None:
        write_all(self.fd, self._buffer)
        self._buffer.clear()

    def finish(self) -> None:
        self._flush()
        os.fsync(self.fd)
        os.close(self.fd)
        self.fd = -1

    def discard(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1
        unlink(self.path)


def index_of(path: Path, base: int, size: int, end: int, interval: int) -> SegmentIndex:
    index = SegmentIndex(base)
    fd = os.open(path, os.O_RDONLY)
    try:
        index.add_headers(scan_headers(fd, 0, size), interval)
    finally:
        os.close(fd)
    if size:  # the segment still ends where the next starts
        index.last_offset = end - 1
    index.seal()
    return index


def swap_name(base: int, end: int) -> str:
    return f"{base:020d}.{end:020d}{SWAP_SUFFIX}"


def _parseswap_name(name: str) -> tuple[int, int] | None:
    if not name.endswith(SWAP_SUFFIX):
        return None
    base, dot, end = name[: -len(SWAP_SUFFIX)].partition(".")
    if dot and len(base) == len(end) == 20 and base.isdigit() and end.isdigit():
        return int(base), int(end)
    return None


def unlink(*paths: Path) -> None:
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def recover_cleaner_files(directory: Path) -> None:
    """Undo or finish a compaction that a crash interrupted: drop `.cleaned` files
    (the old segments are whole), complete `.swap` files (the new one is)."""
    names = os.listdir(directory)
    changed = False
    for name in names:
        if name.endswith(CLEANED_SUFFIX):
            unlink(directory / name)
            changed = True
    bases = sorted(base for name in names if (base := parse_segment_name(name)) is not None)
    for name in sorted(names):
        span = _parseswap_name(name)
        if span is None:
            continue
        base, end = span
        for other in bases:
            if base < other < end:
                unlink(*_segment_files(directory, other))
        unlink(*_segment_files(directory, base)[1:])
        os.replace(directory / name, directory / f"{base:020d}{LOG_SUFFIX}")
        changed = True
    if changed:
        fsync_dir(directory)


def _segment_files(directory: Path, base: int) -> tuple[Path, Path, Path]:
    stem = f"{base:020d}"
    return (
        directory / (stem + LOG_SUFFIX),
        directory / (stem + INDEX_SUFFIX),
        directory / (stem + TIME_INDEX_SUFFIX),
    )
