"""Producer id allocation: ids come in blocks whose end is persisted before any id
of the block is handed out, so no id is ever issued twice, even after kill -9.

One node of its own keeps the end of its block in its data directory; a broker of a
cluster takes blocks from the controller (AllocateProducerIds), whose metadata log
keeps it, so that two brokers never hand out the same id. It asks for the next block
while the current one still has ids (`ready`, awaited before allocating)."""

from __future__ import annotations

import asyncio
import os
from collections import deque
from collections.abc import Awaitable, Callable
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

    async def ready(self) -> None:
        """Nothing to wait for: the blocks are this node's own."""

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


LOW_WATER = 100  # ids left when the next block is asked for


class ClusterProducerIds:
    def __init__(self, take_block: Callable[[], Awaitable[tuple[int, int]]]) -> None:
        self._take_block = take_block  # (first id, count) from the controller
        self._blocks: deque[tuple[int, int]] = deque()  # [start, end) ranges
        self._refill: asyncio.Task[None] | None = None

    def _left(self) -> int:
        return sum(end - start for start, end in self._blocks)

    async def ready(self) -> None:
        """Ids on hand, the next block asked for once they run low (raises
        NodeUnreachable when the controller cannot be reached and none are left)."""
        if self._left() < LOW_WATER and (self._refill is None or self._refill.done()):
            self._refill = asyncio.get_running_loop().create_task(self._fetch())
        if not self._blocks and self._refill is not None:
            await asyncio.shield(self._refill)

    async def _fetch(self) -> None:
        start, count = await self._take_block()
        self._blocks.append((start, start + count))

    def allocate(self) -> int:
        if not self._blocks:
            raise RuntimeError("no producer ids on hand: await ready() first")
        start, end = self._blocks[0]
        if start + 1 >= end:
            self._blocks.popleft()
        else:
            self._blocks[0] = (start + 1, end)
        return start
