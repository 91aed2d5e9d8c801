"""A range of whole batches in one segment file, as a read hands it out: Fetch sends it
with sendfile, share fetches cut it into parts."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from odradek.protocol.batch import BatchHeader
from odradek.storage.segment import SharedFd, pread_exact, scan_headers


@dataclass(frozen=True)
class LogSlice:
    """Whole batches lying at [position, position + size) of one segment file.

    `fileno()` is a descriptor open on that file for as long as this object
    lives, even if retention deletes the segment meanwhile: send it with
    `os.sendfile(socket_fd, slice.fileno(), slice.position, slice.size)` (or
    `os.pread`) while holding a reference to the slice. Never seek it or close
    it: it is shared with the log and with other slices.
    """

    path: Path
    position: int
    size: int
    handle: SharedFd | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return self.size

    def fileno(self) -> int:
        if self.handle is None:
            raise ValueError("this slice has no open file")
        return self.handle.fd

    def headers(self) -> list[BatchHeader]:
        """The headers of the slice's batches (positions in the file), bodies unread."""
        if self.handle is not None:
            return list(scan_headers(self.handle.fd, self.position, self.position + self.size))
        fd = os.open(self.path, os.O_RDONLY)
        try:
            return list(scan_headers(fd, self.position, self.position + self.size))
        finally:
            os.close(fd)

    def part(self, position: int, end: int) -> LogSlice:
        """The batches lying at [position, end) of the file, a part of this slice."""
        return LogSlice(self.path, position, end - position, self.handle)

    def read(self, skip: int = 0) -> bytes:
        """The slice's bytes, from `skip` bytes into it."""
        if self.handle is not None:
            return pread_exact(self.handle.fd, self.size - skip, self.position + skip)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            return pread_exact(fd, self.size - skip, self.position + skip)
        finally:
            os.close(fd)
