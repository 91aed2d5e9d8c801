"""Group commit: fsyncs asked for by many requests at once share one round."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from odradek.storage import PartitionLog


class Flusher:
    def __init__(self) -> None:
        self._pending: dict[int, PartitionLog] = {}
        self._round: asyncio.Future[None] | None = None
        self._worker: asyncio.Task[None] | None = None

    async def flush(self, logs: Iterable[PartitionLog]) -> None:
        """Return once every log given has been fsynced by a round that started after the call."""
        loop = asyncio.get_running_loop()
        for log in logs:
            self._pending[id(log)] = log
        if self._round is None:
            self._round = loop.create_future()
        waiter = self._round
        if self._worker is None or self._worker.done():
            self._worker = loop.create_task(self._run())
        await asyncio.shield(waiter)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._round is not None:
            logs, self._pending = list(self._pending.values()), {}
            current, self._round = self._round, None
            try:
                await loop.run_in_executor(None, _fsync_all, logs)
            except Exception as exc:  # a failed fsync fails every waiter of the round
                current.set_exception(exc)
            else:
                current.set_result(None)


def _fsync_all(logs: list[PartitionLog]) -> None:
    for log in logs:
        log.flush()
