"""Producer id allocation: ids come in blocks whose end is persisted before any id
of the block is handed out, so no id is ever issued twice, even after kill -9."""

from __future__ import annotations

import os
from pathlib import Path

BLOCK_SIZE = 1000


class ProducerIdAllocator:
    def __init__(self, data_dir: Path) -> None:
        self._path = data_dir / "producer-id-block"
        try:
            self._next = int(self._path.read_text().strip())
        except (OSError, ValueError):
            self._next = 0
        self._block_end = self._next  # nothing reserved yet in this run

    def allocate(self) -> int:
        if self._next >= self._block_end:
            self._reserve(self._next + BLOCK_SIZE)
        producer_id = self._next
        self._next += 1
        return producer_id

    def _reserve(self, block_end: int) -> None:
        tmp = self._path.with_suffix(".tmp")
        with open(tmp, "w") as out:
            out.write(str(block_end))
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self._path)
        self._block_end = block_end
