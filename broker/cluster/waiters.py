"""Writes waiting for a high watermark: a partition leader's (replication.py) and the
controller quorum's (quorum/quorum.py) each keep one of these."""

from __future__ import annotations

import asyncio


class HighWatermarkWaiters:
    def __init__(self) -> None:
        self._waiting: list[tuple[int, asyncio.Future[None]]] = []

    def wait_for(self, offset: int, high_watermark: int) -> asyncio.Future[None]:
        """Completes once the high watermark reaches `offset` (at once if it has)."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if high_watermark >= offset:
            future.set_result(None)
        else:
            self._waiting.append((offset, future))
        return future

    def reached(self, high_watermark: int) -> None:
        waiting = []
        for offset, future in self._waiting:
            if offset <= high_watermark:
                if not future.done():
                    future.set_result(None)
            else:
                waiting.append((offset, future))
        self._waiting = waiting

    def fail(self, error: Exception) -> None:
        """The node stopped leading: every waiting write fails with `error`."""
        for _offset, future in self._waiting:
            if not future.done():
                future.set_exception(error)
        self._waiting = []
