"""Long work on the event loop done a slice at a time: after SLICE_S of it the loop
serves everyone else before the work goes on (a full Metadata answer, the
housekeeping pass, a new topic's logs, following the cluster's metadata)."""

from __future__ import annotations

import asyncio
import time

SLICE_S = 0.01  # the longest such work holds the event loop at a time


class Slices:
    __slots__ = ("_ends", "_every")

    def __init__(self, every: float = SLICE_S) -> None:
        self._every = every
        self._ends = time.monotonic() + every

    async def pause_if_due(self) -> None:
        """Let the others go if this slice is used up."""
        if time.monotonic() >= self._ends:
            await asyncio.sleep(0)
            self._ends = time.monotonic() + self._every
