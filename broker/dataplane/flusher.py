"""Group commit: fsyncs asked for by many requests at once share one round."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from odradek.storage import PartitionLog


def _not_handled(_log: PartitionLog, _exc: OSError) -> bool:
    return False


class Flusher:
    """`failed(log, exc)` hears of each log whose fsync failed: True when it dealt
    with it (the log's directory went offline), False to fail the round's waiters."""

    def __init__(self, failed: Callable[[PartitionLog, OSError], bool] = _not_handled) -> None:
        self._pending: dict[int, PartitionLog] = {}
        self._round: asyncio.Future[None] | None = None
        self._worker: asyncio.Task[None] | None = None
        self.failed = failed

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
                failures = await loop.run_in_executor(None, _fsync_all, logs)
                unhandled = [exc for log, exc in failures if not self.failed(log, exc)]
            except Exception as exc:  # a failed fsync fails every waiter of the round
                current.set_exception(exc)
            else:
                if unhandled:
                    current.set_exception(unhandled[0])
                else:
                    current.set_result(None)


def _fsync_all(logs: list[PartitionLog]) -> list[tuple[PartitionLog, OSError]]:
    """fsync each log; the ones that failed, with their error."""
    failures = []
    for log in logs:
        try:
            log.flush()
        except OSError as exc:
            failures.append((log, exc))
    return failures
