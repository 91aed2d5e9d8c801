"""Moving a replica to another log directory of this node (AlterReplicaLogDirs).

As on Kafka, the copy is a "future" log, `<topic>-<partition>.<uuid>-future` in the
target directory, filled from the current log while the current one keeps serving
every request. The copy goes a slice at a time (SLICE_BYTES), giving the event loop
back between slices; once it has caught up, it is fsynced in a worker thread, then,
in one step of the loop (so no append comes between), the last records are copied,
the old directory is renamed `<topic>-<partition>.<uuid>-delete`, the future one
takes the partition's name and becomes the partition's log, and the old one is
removed in a worker thread. Compaction leaves a moving partition alone. The copy is
this node's fetch from its own replica: a test's pause-fetching fault holds it too.

A restart resumes a move from where its future log got to. A future log whose
current log is gone had finished its copy: it becomes the partition's log
(topics.py). A failure of either directory ends the move (and the future log).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import structlog

from odradek.broker.dataplane.log_dirs import LogDir, delete_name, future_name
from odradek.broker.dataplane.topics import Partition, TopicRegistry
from odradek.protocol.batch import BatchHeader
from odradek.storage import PartitionLog

log = structlog.get_logger("broker")

SLICE_BYTES = 1 << 20
PAUSED_CHECK_S = 0.05


class SourceFailed(Exception):
    """Reading the current log failed (its directory's error is the cause)."""


@dataclass(eq=False)
class Move:
    partition: Partition
    source: PartitionLog  # the partition's log when the move began
    future: PartitionLog
    target: LogDir
    task: asyncio.Task[None] | None = None

    @property
    def offset_lag(self) -> int:
        """How far the copy is behind the current log (DescribeLogDirs' is_future rows)."""
        return max(self.source.log_end_offset - self.future.log_end_offset, 0)


class ReplicaMoves:
    def __init__(self, topics: TopicRegistry) -> None:
        self.topics = topics
        self.moves: dict[Partition, Move] = {}
        # does a test's fault hold the copy of (topic, partition)? (broker/faults/)
        self.paused: Callable[[str, int], bool] = lambda _topic, _partition: False
        topics.dir_failed.append(self._dir_failed)

    def of(self, partition: Partition) -> Move | None:
        return self.moves.get(partition)

    def start(self, partition: Partition, target: LogDir, path: Path | None = None) -> None:
        """Move the partition's replica to `target` (a move elsewhere stops); nothing
        when it is there already. `path`: a future log left by the last run, to
        resume. Raises OSError when the future log cannot be created."""
        move = self.moves.get(partition)
        if move is not None:
            if move.target is target:
                return
            self.stop(move)
        if partition.log_dir is target:
            return
        source = partition.log
        if path is None:
            path = target.path / future_name(partition.dir_name)
        future = PartitionLog.open(path, source.config)
        target.partitions += 1
        move = Move(partition, source, future, target)
        self.moves[partition] = move
        move.task = asyncio.get_running_loop().create_task(self._run(move))
        log.info(
            "moving replica",
            topic=partition.topic.name,
            partition=partition.index,
            source=str(source.directory.parent),
            target=target.name,
            resumed_at=future.log_end_offset,
        )

    def resume_found(self) -> None:
        """The moves a previous run left unfinished (future logs found at start-up)."""
        for partition, path in self.topics.found_futures:
            target = self.topics.log_dirs.holding(path)
            if target is None or not target.online or partition in self.moves:
                shutil.rmtree(path, ignore_errors=True)
                continue
            try:
                self.start(partition, target, path)
            except OSError as exc:
                self.topics.fail_dir(target, exc, "resume replica move")
        self.topics.found_futures = []

    def stop(self, move: Move, remove: bool = True) -> None:
        """End a move and drop its future log (its files too, unless the target failed)."""
        if self.moves.get(move.partition) is move:
            del self.moves[move.partition]
        if move.task is not None and move.task is not asyncio.current_task():
            move.task.cancel()
        move.future.abandon()
        move.target.partitions -= 1
        if remove:
            _remove_later(move.future.directory)

    async def close(self) -> None:
        tasks = [m.task for m in self.moves.values() if m.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for move in list(self.moves.values()):
            if self.moves.get(move.partition) is move:
                del self.moves[move.partition]
            move.future.close()  # the next start resumes from here

    def _dir_failed(self, log_dir: LogDir, lost: list[Partition]) -> None:
        gone = set(lost)
        for move in list(self.moves.values()):
            if move.target is log_dir:
                self.stop(move, remove=False)
            elif move.partition in gone:
                self.stop(move)

    def _wanted(self, move: Move) -> bool:
        partition = move.partition
        return (
            self.topics.partition(partition.topic.name, partition.index) is partition
            and partition.hosted
            and not partition.offline
            and partition.log is move.source
            and move.target.online
        )

    async def _run(self, move: Move) -> None:
        try:
            while self._wanted(move):
                if self.paused(move.partition.topic.name, move.partition.index):
                    await asyncio.sleep(PAUSED_CHECK_S)
                    continue
                if _copy_slice(move):
                    # the bulk of the fsync off the loop; the swap's own is short
                    await asyncio.to_thread(move.future.flush)
                    if not self._wanted(move):
                        break
                    while not _copy_slice(move):
                        pass
                    self._swap(move)
                    return
                await asyncio.sleep(0)
            if self.moves.get(move.partition) is move:
                self.stop(move)
        except SourceFailed as failed:
            cause = failed.__cause__
            assert isinstance(cause, OSError)
            self.topics.fail_log(move.source, cause, "replica move")
            if self.moves.get(move.partition) is move:
                self.stop(move)
        except OSError as exc:
            self.topics.fail_dir(move.target, exc, "replica move")
            if self.moves.get(move.partition) is move:
                self.stop(move, remove=False)

    def _swap(self, move: Move) -> None:
        """The future log becomes the partition's log, in one step of the loop."""
        partition, old, future = move.partition, move.source, move.future
        if future.log_start_offset < old.log_start_offset:
            future.delete_records_before(old.log_start_offset)
        future.close()
        old_dir = old.directory
        removed = old_dir.with_name(delete_name(partition.dir_name))
        try:
            os.rename(old_dir, removed)
        except OSError as exc:
            raise SourceFailed() from exc
        final = move.target.path / partition.dir_name
        try:
            os.rename(future.directory, final)
            new = PartitionLog.open(final, self.topics.log_config(partition.topic))
        except OSError:
            os.rename(removed, old_dir)
            raise
        old.abandon()
        source_dir = partition.log_dir
        partition.replace_log(new, move.target)
        if source_dir is not None:
            source_dir.partitions -= 1
        del self.moves[partition]
        _remove_later(removed)
        log.info(
            "replica moved",
            topic=partition.topic.name,
            partition=partition.index,
            log_dir=move.target.name,
            log_end_offset=new.log_end_offset,
        )


def _copy_slice(move: Move) -> bool:
    """Copy up to SLICE_BYTES of batches from the current log to the future one;
    True when the future log has everything the current one has."""
    source, future = move.source, move.future
    if future.log_end_offset > source.log_end_offset:  # the source was cut back
        future.truncate_to(source.log_end_offset)
    if future.log_end_offset == source.log_end_offset:
        return True
    data = bytearray()
    headers: list[BatchHeader] = []
    start = max(future.log_end_offset, source.log_start_offset)
    try:
        for header, batch in source.iter_batches(start):
            if header.next_offset <= future.log_end_offset:
                continue
            headers.append(header._replace(position=len(data)))
            data += batch
            if len(data) >= SLICE_BYTES:
                break
    except OSError as exc:
        raise SourceFailed() from exc
    if headers:
        future.append_as_is(data, headers, gaps=True)
    return future.log_end_offset == source.log_end_offset


def _remove_later(path: Path) -> None:
    """Remove a directory in a worker thread: a large log takes a while."""
    asyncio.get_running_loop().run_in_executor(None, shutil.rmtree, path, True)
