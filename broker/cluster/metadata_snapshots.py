"""When the leading controller snapshots the metadata and what it then lets go of, as
Kafka's KRaft does:

- a snapshot is taken once `metadata.log.max.record.bytes.between.snapshots` of records
  were appended since the last one, or `metadata.log.max.snapshot.interval.ms` passed
  with records appended; only of committed state (the log ends at the high watermark),
  so no snapshot holds a record a new leader could cut;
- once the log is longer than `metadata.max.retention.bytes`, or the latest snapshot
  older than `metadata.max.retention.ms`, the log starts at the latest snapshot's end
  offset and older snapshots go: a node that restarts loads the snapshot and then the
  log; a follower or broker that needs what was let go of fetches the snapshot
  (FetchSnapshot).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from odradek.broker.cluster.quorum import snapshots
from odradek.broker.cluster.quorum.snapshots import SnapshotId
from odradek.broker.cluster.quorum.voters import control_records
from odradek.coordinator.cluster.snapshot import capture, records_of
from odradek.coordinator.runtime import CoordinatorError, Result

if TYPE_CHECKING:
    from odradek.broker.cluster.controller import Controller
    from odradek.broker.dataplane.topics import Partition
    from odradek.coordinator.cluster.shard import ClusterShard

log = structlog.get_logger("controller")
CHECK_EVERY_S = 0.5


def load_latest(shard: ClusterShard, directory: Path, log_start: int) -> None:
    """The snapshot the log starts after, into a new shard (nothing when the log starts
    at 0). Raises FileNotFoundError when the log was cut and no snapshot holds what went."""
    if log_start <= 0:
        return
    found = [s for s in snapshots.listed(directory) if s.end_offset == log_start]
    if not found:
        raise FileNotFoundError(f"no snapshot of the metadata before offset {log_start}")
    for offset, (key, value) in enumerate(snapshots.read(directory, found[-1])):
        shard.replay(offset, key, value, -1)
    shard.last_offset = log_start - 1


class MetadataSnapshots:
    def __init__(self, controller: Controller, partition: Partition, config: Any) -> None:
        self._controller = controller
        self._partition = partition
        self.directory = Path(partition.log.directory)
        self._max_bytes: int = config.metadata_log_max_record_bytes_between_snapshots
        self._interval_ms: int = config.metadata_log_max_snapshot_interval_ms
        self._retention_bytes: int = config.metadata_max_retention_bytes
        self._retention_ms: int = config.metadata_max_retention_ms
        latest = snapshots.latest(self.directory)
        self.last: SnapshotId | None = latest
        self._size_then = partition.log.size_bytes()
        self._taken_ms = int(time.time() * 1000)

    def due(self, now_ms: int, end: int) -> bool:
        """Is a snapshot up to `end` (the log's end, or what a follower replayed) due?"""
        if end <= (self.last.end_offset if self.last is not None else 0):
            return False
        grown = self._partition.log.size_bytes() - self._size_then
        late = 0 < self._interval_ms <= now_ms - self._taken_ms
        return grown >= self._max_bytes or late

    async def run(self) -> None:
        while True:
            await asyncio.sleep(CHECK_EVERY_S)
            view = self._controller.follower_view
            try:
                now_ms = int(time.time() * 1000)
                if self._controller.is_active:
                    if self.due(now_ms, self._partition.log.log_end_offset):
                        await self.take()
                elif view is not None and view.view is not None:
                    if self.due(now_ms, view.replayed_to):
                        await self._write(*self._follower_capture(view.view, view.replayed_to))
                else:
                    continue
                self.clean()
            except (CoordinatorError, OSError) as exc:
                log.warning("metadata snapshot not taken", error=str(exc))
            except Exception:  # a bug here must not end snapshots for good
                log.exception("metadata snapshot failed")

    async def take(self) -> SnapshotId | None:
        """A snapshot of the committed metadata; None while records wait for a majority."""
        taken = await self._controller.run(self._capture)
        if taken is None:
            return None
        await self._write(*taken)
        return taken[0]

    async def _write(self, snapshot: SnapshotId, captured: Any, last_ms: int, control: Any) -> None:
        def written() -> None:  # many partitions take a while: off the event loop
            snapshots.write(self.directory, snapshot, records_of(captured), last_ms, control)

        await asyncio.to_thread(written)
        self.last = snapshot
        self._size_then = self._partition.log.size_bytes()
        self._taken_ms = int(time.time() * 1000)
        log.info("metadata snapshot written", end_offset=snapshot.end_offset, epoch=snapshot.epoch)
        self.clean()

    def _follower_capture(self, view: ClusterShard, end: int) -> tuple[Any, ...]:
        """A follower's snapshot: its view of the committed log, up to `end`."""
        epochs = [epoch for epoch, start in self._partition.log.leader_epochs if start < end]
        snapshot = SnapshotId(end, epochs[-1] if epochs else 0)
        return snapshot, capture(view), int(time.time() * 1000), self._control(snapshot)

    def _capture(self, shard: ClusterShard) -> Result[Any]:
        plog = self._partition.log
        quorum = self._controller.quorum
        if quorum is None or plog.log_end_offset != quorum.high_watermark:
            return Result([], None)
        snapshot = SnapshotId(plog.log_end_offset, plog.latest_epoch)
        return Result(
            [], (snapshot, capture(shard), int(time.time() * 1000), self._control(snapshot))
        )

    def _control(self, snapshot: SnapshotId) -> list[Any]:
        """A dynamic quorum's kraft.version and voters go with the snapshot."""
        quorum = self._controller.quorum
        if quorum is None or quorum.history.kraft_version < 1:
            return []
        history = quorum.history
        return control_records(history.kraft_version, history.voters_at(snapshot.end_offset))

    def clean(self) -> None:
        """Past retention, the log starts where the latest snapshot ends."""
        plog, latest = self._partition.log, self.last
        if latest is None or plog.log_start_offset >= latest.end_offset:
            return
        too_big = 0 <= self._retention_bytes < plog.size_bytes()
        # what the latest snapshot holds is at least as old as the snapshot
        age = int(time.time() * 1000) - self._taken_ms
        too_old = 0 <= self._retention_ms < age
        if not (too_big or too_old):
            return
        start = plog.delete_records_before(latest.end_offset)
        snapshots.remove_older(self.directory, latest)
        self._size_then = plog.size_bytes()
        log.info("metadata log now starts after its snapshot", log_start_offset=start)
