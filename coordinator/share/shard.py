"""The share coordinator shard for one `__share_group_state` partition.

It owns the share-partitions (group, topic id, partition) whose key hashes to its
partition: their in-flight records, acquisition locks and delivery counts. What must
survive a restart is written before it is applied (the runtime's write contract):
acknowledgements, releases and run-out locks are ShareUpdate records, and every
`snapshot_every` updates of a share-partition a ShareSnapshot holds its whole state.
Loading replays them. Acquisitions stay in memory: after a restart an acquired record
is available again, and its delivery count is the last one written.

The share-group-state requests (Initialize / Read / Write / Delete / ReadSummary) are
operations here too.
"""

from __future__ import annotations

import asyncio
import copy
import time
from dataclasses import dataclass
from typing import Any

from odradek.coordinator.runtime import Record, Result, ShardRuntime
from odradek.coordinator.share import records as sr
from odradek.coordinator.share.partition import (
    ACQUIRED,
    AcknowledgeError,
    Delta,
    FetchedBatch,
    SharePartition,
    StateBatch,
)
from odradek.coordinator.share.records import ShareKey
from odradek.protocol.errors import ErrorCode


@dataclass
class ShareConfig:
    record_lock_duration_ms: int = 30000
    delivery_count_limit: int = 5
    max_record_locks: int = 2000
    snapshot_every: int = 500  # share.coordinator.snapshot.update.records.per.snapshot


def _now() -> int:
    return int(time.time() * 1000)


class ShareShard:
    def __init__(self, runtime: ShardRuntime | None, config: ShareConfig) -> None:
        self.runtime = runtime
        self.config = config
        self.partitions: dict[ShareKey, SharePartition] = {}
        self.snapshot_epochs: dict[ShareKey, int] = {}
        self.updates_since_snapshot: dict[ShareKey, int] = {}
        # share-partitions someone waits on: completed when records become available
        self._waiters: dict[ShareKey, asyncio.Future[None]] = {}
        self._woken: set[ShareKey] = set()
        # share-partitions whose next snapshot replaces their live state (set anew)
        self._resets: set[ShareKey] = set()
        # the lock duration the group's last acquisition ran with (renewals use it)
        self.lock_durations: dict[ShareKey, int] = {}
        # acquisition locks that ran out with records still held (a metric)
        self.lock_timeouts = 0
        # the offset of the shard's log from which each share-partition's state can be
        # rebuilt: its latest snapshot (or its first update, had it none)
        self.replay_from: dict[ShareKey, int] = {}

    def _loading(self) -> bool:
        return self.runtime is None or not self.runtime.loaded

    # -- replay --------------------------------------------------------------------

    def replay(self, offset: int, key: bytes | None, value: bytes | None, producer_id: int) -> None:
        if key is None:
            return  # every record here has a key
        kind, share_key = sr.decode_key(key)
        if value is None:
            self.partitions.pop(share_key, None)
            self.snapshot_epochs.pop(share_key, None)
            self.updates_since_snapshot.pop(share_key, None)
            self.replay_from.pop(share_key, None)
            return
        if kind == sr.SNAPSHOT:
            self.replay_from[share_key] = offset
            snapshot = sr.decode_snapshot(value)
            self.snapshot_epochs[share_key] = snapshot.snapshot_epoch
            self.updates_since_snapshot[share_key] = 0
            known = self.partitions.get(share_key)
            # live, a periodic snapshot says what the state already is (less its
            # acquisitions); one that sets the state anew replaces it
            if known is None or self._loading() or share_key in self._resets:
                self._resets.discard(share_key)
                partition = known or SharePartition(snapshot.start_offset)
                partition.restore(snapshot.start_offset, snapshot.batches, snapshot.state_epoch)
                partition.leader_epoch = snapshot.leader_epoch
                self.partitions[share_key] = partition
            return
        update = sr.decode_update(value)
        self.replay_from.setdefault(share_key, offset)
        partition = self.partitions.get(share_key) or SharePartition(update.start_offset)
        self.partitions[share_key] = partition
        self.updates_since_snapshot[share_key] = self.updates_since_snapshot.get(share_key, 0) + 1
        locks_before = self._locks_in(partition, update.batches)
        if partition.apply(Delta(update.start_offset, update.batches)):
            self._wake(share_key)
        if not self._loading():
            held = {r.lock for r in partition.runs if r.state == ACQUIRED}
            for lock in locks_before - held:
                self._cancel(_lock_timer(share_key, lock))

    def replay_control(self, producer_id: int, commit: bool) -> None:
        pass

    def begin_load(self) -> None:
        pass

    def on_loaded(self) -> None:
        pass

    def prunable_below(self, log_end_offset: int) -> int:
        """Records below this offset are needed by no share-partition's state."""
        return min(self.replay_from.values(), default=log_end_offset)

    @staticmethod
    def _locks_in(partition: SharePartition, batches: tuple[StateBatch, ...]) -> set[int]:
        locks = set()
        for batch in batches:
            for run in partition._overlapping(batch.first_offset, batch.last_offset):
                if run.state == ACQUIRED:
                    locks.add(run.lock)
        return locks

    # -- waiting for records ---------------------------------------------------------

    def availability(self, key: ShareKey) -> asyncio.Future[None]:
        """Completes when records of `key` become available again (a release)."""
        future = self._waiters.get(key)
        if future is None or future.done():
            future = self._waiters[key] = asyncio.get_running_loop().create_future()
        return future

    def take_woken(self, key: ShareKey) -> bool:
        """Were waiters on `key` woken since the last call?"""
        if key in self._woken:
            self._woken.discard(key)
            return True
        return False

    def _wake(self, key: ShareKey) -> None:
        future = self._waiters.pop(key, None)
        if future is not None and not future.done():
            future.set_result(None)
            self._woken.add(key)

    # -- the data plane: ShareFetch and ShareAcknowledge ----------------------------------

    def prepare_fetch(
        self, key: ShareKey, initial_start: int, log_start: int = 0
    ) -> Result[tuple[int, int]]:
        """(the next offset to read for `key`, the offset where reading can stop). A
        share-partition seen for the first time starts at `initial_start` (written
        first); one whose start the log has left behind (retention, DeleteRecords)
        moves on to the log start, what lay before it gone."""
        partition = self.partitions.get(key)
        records: list[Record] = []
        if partition is None:
            partition = SharePartition(initial_start)
            records = [self._snapshot_record(key, partition, 0)]
        elif partition.start < log_start:
            records = self._delta_records(key, partition, Delta(log_start))
            partition = copy.deepcopy(partition)  # as it will be once that is written
            partition.apply(Delta(log_start))
        below = partition.acquirable_below(self.config.max_record_locks)
        return Result(records, (partition.next_fetch_offset(), below))

    def acquire(
        self,
        key: ShareKey,
        member: str,
        batches: list[FetchedBatch],
        max_records: int,
        lock_ms: int,
        record_limit: bool = False,
        batch_size: int = 0,
    ) -> Result[list[tuple[int, int, int]]]:
        """[(first, last, delivery count)] acquired for `member`, each piece's lock
        armed (see SharePartition.acquire)."""
        partition = self.partitions.get(key)
        if partition is None:
            return Result([], [])
        acquired = partition.acquire(
            member,
            batches,
            max_records,
            self.config.max_record_locks,
            record_limit=record_limit,
            batch_size=batch_size,
        )
        for lock in dict.fromkeys(lock for *_, lock in acquired):
            self._arm_lock(key, lock, lock_ms)
        if acquired:
            self.lock_durations[key] = lock_ms
        return Result([], [(first, last, count) for first, last, count, _ in acquired])

    def acknowledge(
        self, key: ShareKey, member: str, acknowledgements: list[tuple[int, int, tuple[int, ...]]]
    ) -> Result[tuple[int, str | None]]:
        """(error code, message): INVALID_RECORD_STATE when `member` does not hold every
        acknowledged offset; nothing changes then."""
        partition = self.partitions.get(key)
        if partition is None:
            return Result([], (ErrorCode.invalid_record_state, "No records are acquired."))
        try:
            delta, renewed = partition.plan_acknowledge(
                member, acknowledgements, self.config.delivery_count_limit
            )
        except AcknowledgeError as exc:
            return Result([], (exc.code, exc.message))
        for first, _last in renewed:
            self._renew(key, partition, first)
        return Result(self._delta_records(key, partition, delta), (ErrorCode.none, None))

    def release(self, key: ShareKey, member: str | None, lock: int | None) -> Result[None]:
        partition = self.partitions.get(key)
        if partition is None:
            return Result()
        delta = partition.plan_release(member, lock, self.config.delivery_count_limit)
        return Result(self._delta_records(key, partition, delta))

    def release_member(self, group_id: str, member: str) -> Result[None]:
        """Everything `member` holds in the group's share-partitions of this shard."""
        records: list[Record] = []
        for key, partition in self.partitions.items():
            if key.group_id == group_id and partition.held_by(member):
                delta = partition.plan_release(member, None, self.config.delivery_count_limit)
                records += self._delta_records(key, partition, delta)
        return Result(records)

    def _renew(self, key: ShareKey, partition: SharePartition, offset: int) -> None:
        lock_ms = self.lock_durations.get(key, self.config.record_lock_duration_ms)
        for run in partition._overlapping(offset, offset):
            self._arm_lock(key, run.lock, lock_ms)

    def _arm_lock(self, key: ShareKey, lock: int, lock_ms: int) -> None:
        def expire(shard: ShareShard) -> Result[None]:
            result = shard.release(key, None, lock)
            if result.records:
                shard.lock_timeouts += 1
            return result

        self._schedule(_lock_timer(key, lock), lock_ms, expire)

    # -- the share-group-state requests ----------------------------------------------------

    def initialize(self, key: ShareKey, state_epoch: int, start_offset: int) -> Result[int]:
        known = self.partitions.get(key)
        if known is not None and state_epoch < known.state_epoch:
            return Result([], ErrorCode.fenced_state_epoch)
        fresh = SharePartition(start_offset, state_epoch=state_epoch)
        self._resets.add(key)
        return Result([self._snapshot_record(key, fresh, 0)], ErrorCode.none)

    def alter_start(self, key: ShareKey, start_offset: int) -> Result[None]:
        """Start the share-partition anew at `start_offset` (AlterShareGroupOffsets): a
        new state epoch, nothing in flight."""
        known = self.partitions.get(key)
        fresh = SharePartition(
            start_offset, state_epoch=0 if known is None else known.state_epoch + 1
        )
        self._resets.add(key)
        return Result([self._snapshot_record(key, fresh, 0)])

    def read(self, key: ShareKey) -> Result[dict[str, Any] | None]:
        partition = self.partitions.get(key)
        if partition is None:
            return Result([], None)
        return Result(
            [],
            {
                "state_epoch": partition.state_epoch,
                "leader_epoch": partition.leader_epoch,
                "start_offset": partition.start,
                "batches": partition.state_batches(),
            },
        )

    def write(
        self,
        key: ShareKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: tuple[StateBatch, ...],
    ) -> Result[int]:
        partition = self.partitions.get(key)
        if partition is None:
            fresh = SharePartition(start_offset, state_epoch=state_epoch)
            fresh.apply(Delta(start_offset, batches))
            return Result([self._snapshot_record(key, fresh, 0)], ErrorCode.none)
        if state_epoch < partition.state_epoch:
            return Result([], ErrorCode.fenced_state_epoch)
        if leader_epoch >= 0:
            partition.leader_epoch = max(partition.leader_epoch, leader_epoch)
        delta = Delta(start_offset if start_offset >= 0 else partition.start, batches)
        return Result(self._delta_records(key, partition, delta), ErrorCode.none)

    def delete(self, key: ShareKey) -> Result[int]:
        if key not in self.partitions:
            return Result([], ErrorCode.none)
        return Result(
            [(sr.encode_key(sr.SNAPSHOT, key), None), (sr.encode_key(sr.UPDATE, key), None)],
            ErrorCode.none,
        )

    def delete_group(self, group_id: str) -> Result[None]:
        records: list[Record] = []
        for key in self.partitions:
            if key.group_id == group_id:
                records += self.delete(key).records
        return Result(records)

    def keys_of_group(self, group_id: str) -> list[ShareKey]:
        return [key for key in self.partitions if key.group_id == group_id]

    # -- records ---------------------------------------------------------------------

    def _snapshot_record(self, key: ShareKey, partition: SharePartition, epoch: int) -> Record:
        now = _now()
        value = sr.Snapshot(
            snapshot_epoch=epoch,
            state_epoch=partition.state_epoch,
            leader_epoch=partition.leader_epoch,
            start_offset=partition.start,
            create_timestamp=now,
            write_timestamp=now,
            batches=partition.state_batches(),
        )
        return sr.encode_key(sr.SNAPSHOT, key), sr.encode_snapshot(value)

    def _delta_records(
        self, key: ShareKey, partition: SharePartition, delta: Delta
    ) -> list[Record]:
        if not delta.batches and delta.start_offset <= partition.start:
            return []
        epoch = self.snapshot_epochs.get(key, 0)
        if self.updates_since_snapshot.get(key, 0) + 1 >= self.config.snapshot_every:
            after = copy.deepcopy(partition)
            after.apply(delta)
            update = sr.Update(epoch, partition.leader_epoch, delta.start_offset, delta.batches)
            return [
                (sr.encode_key(sr.UPDATE, key), sr.encode_update(update)),
                self._snapshot_record(key, after, epoch + 1),
            ]
        update = sr.Update(epoch, partition.leader_epoch, delta.start_offset, delta.batches)
        return [(sr.encode_key(sr.UPDATE, key), sr.encode_update(update))]

    # -- timers ----------------------------------------------------------------------

    def _schedule(self, name: str, delay_ms: float, operation: Any) -> None:
        if self.runtime is not None:
            self.runtime.schedule(name, delay_ms, operation)

    def _cancel(self, name: str) -> None:
        if self.runtime is not None:
            self.runtime.cancel(name)


def _lock_timer(key: ShareKey, lock: int) -> str:
    return f"lock:{key.text()}:{lock}"
