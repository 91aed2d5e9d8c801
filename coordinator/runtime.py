"""The coordinator runtime: shards over the partitions of an internal topic.

Each partition of `__consumer_offsets` (or `__transaction_state`) has one shard:
a state machine touched only by the operations submitted to it, each run at once and
to its end on the event loop's one thread, so no locks guard it. Operations may
follow one another before the first one's records are written: their records are
appended in one write, and each answer waits for the write of its records and of
everything before them. The write contract:

    operation(shard) -> Result(records, response)
    runtime: append records to the partition -> shard.replay(each) -> answer

If the append fails nothing is applied and the caller gets the error. Loading
after a restart calls the same `replay` on every stored record, so normal
operation and recovery share one code path. Until a shard has loaded, its
callers get COORDINATOR_LOAD_IN_PROGRESS, whether they submit an operation or
read its state (`ready_shard`); once it resigned (another node leads its
partition), NOT_COORDINATOR, and nothing more is written. Keys hashing to
another partition never reach it. A node that comes to lead a partition loads
its shard at once, whether or not anything asked for the coordinator before.

Timers (session expiry, rebalance timeouts, ...) fire by submitting an
operation to the shard like any request.
"""

from __future__ import annotations

import asyncio
import gc
import time
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import structlog

from odradek.coordinator.partitioning import partition_for
from odradek.protocol.batch import (
    ATTR_TRANSACTIONAL,
    build_batch,
    control_batch,
    iter_batches,
    iter_records,
)
from odradek.protocol.errors import ErrorCode
from odradek.storage import faults

if TYPE_CHECKING:
    from odradek.storage.log import PartitionLog


class _Named(Protocol):
    @property
    def name(self) -> str: ...


class Partition(Protocol):
    """The partition of the internal topic a shard writes to, as the broker hosts it."""

    @property
    def log(self) -> PartitionLog: ...

    @property
    def topic(self) -> _Named: ...

    @property
    def leader_epoch(self) -> int: ...

    @property
    def led_here(self) -> bool: ...

    def appended(self) -> None:
        """Records were written: wake the fetches waiting for them."""

    def replicated(self, end_offset: int) -> asyncio.Future[None] | None:
        """None once records below `end_offset` are on every in-sync replica, else
        what completes then."""


log = structlog.get_logger("coordinator")

T = TypeVar("T")

Record = tuple[bytes | None, bytes | None]


@dataclass
class Result(Generic[T]):
    records: list[Record] = field(default_factory=list)
    response: T | None = None
    # (producer id, epoch): write `records` as one transactional batch of that producer
    producer: tuple[int, int] | None = None
    # (producer id, epoch, commit): write a transaction marker instead of records
    control: tuple[int, int, bool] | None = None


class CoordinatorError(Exception):
    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message or str(code))
        self.code = code


class Shard(Protocol):
    """What the runtime asks of a shard: its state machine is the shard's own."""

    def replay(self, offset: int, key: bytes | None, value: bytes | None, producer_id: int) -> None:
        """Apply one record; `producer_id` is set (>= 0) for transactional records."""

    def replay_control(self, producer_id: int, commit: bool) -> None:
        """A transaction marker for `producer_id`'s records on this partition."""

    def begin_load(self) -> None:
        """The stored records are about to be replayed (on_loaded follows the last)."""

    def on_loaded(self) -> None:
        """Every stored record has been replayed: arm the timers."""


Operation = Callable[[Any], "Result[Any]"]
# how long a shard's load replays before the loop serves anything else; one shard of
# the loop loads at a time, or fifty would each take a slice between two socket reads
LOAD_SLICE_S = 0.005
_LOADING: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
    weakref.WeakKeyDictionary()
)


def _loading_lock() -> asyncio.Lock:
    return _LOADING.setdefault(asyncio.get_running_loop(), asyncio.Lock())


# an operation's future, and what it is to get once its records are written
Answer = tuple[asyncio.Future[Any], Any, BaseException | None]


class ShardRuntime:
    """One shard, its partition and its serial executor.

    Operations run one at a time on the event loop, each against the state left
    by the one before: its records are replayed into the shard at once, with the
    offsets they will have, and kept pending. Before the loop hands control to
    anything else, one callback writes every pending record of the shard in one
    append and only then answers the operations. So a burst of commits or joins
    costs one write and one pass of answers, and no answer (nor anything a waiter
    woken by an operation sends) leaves before its records are in the log. If the
    write fails, the shard is rebuilt from the log and the operations fail.
    """

    def __init__(
        self,
        index: int,
        partition: Partition,
        shard: Shard | None,
        flush: Callable[[Any], Awaitable[None]],  # (the broker's Partition)
        make_shard: Callable[[ShardRuntime], Shard],
    ) -> None:
        self.index = index
        self.partition = partition
        # Any: the operations and checks that read it know which shard type they hold
        self.shard: Any = shard
        self._flush = flush
        self._make_shard = make_shard
        self.loaded = False
        self.resigned = False  # another node leads the partition: no more operations
        self._loaded_event = asyncio.Event()
        self._worker: asyncio.Task[None] | None = None
        self._timers: dict[str, _Timer] = {}
        # what the operations since the last write owe the log and their callers
        self._batches: list[bytes] = []
        self._plain: list[Record] = []  # records of non-transactional results, one batch
        self._answers: list[Answer] = []
        self._first_offset = 0  # where the pending records go
        self._next_offset = 0
        self._write_scheduled = False
        self._flushing: asyncio.Task[None] | None = None  # answers waiting for an fsync
        self._background: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None  # (looking it up costs a getpid)

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._worker = self._loop.create_task(self._run())

    def resign(self) -> None:
        """Stop taking operations at once: the partition's log is another leader's now.
        Operations run since the last write are answered NOT_COORDINATOR by it."""
        self.resigned = True
        self._loaded_event.set()  # waiters for the load see the resignation instead
        for timer in self._timers.values():
            timer.handle.cancel()
        self._timers.clear()

    async def stop(self) -> None:
        self.resign()
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)

    async def _load(self) -> None:
        """Replay every stored record, a slice at a time: after LOAD_SLICE_S of work the
        loop serves everything else before the next slice, so a broker whose shards
        hold millions of records keeps answering while they load."""
        started = time.monotonic()
        count = 0
        slice_ends = started + LOAD_SLICE_S
        log_start = self.partition.log.log_start_offset
        self.shard.begin_load()
        for header, data in self.partition.log.iter_batches(log_start):
            if header.is_control:
                for _delta, key, _value in iter_records(data):
                    if key is not None and len(key) >= 4:
                        self.shard.replay_control(header.producer_id, key[3] == 1)
            else:
                producer_id = header.producer_id if header.is_transactional else -1
                for delta, key, value in iter_records(data):
                    self.shard.replay(header.base_offset + delta, key, value, producer_id)
                    count += 1
            if time.monotonic() >= slice_ends:
                await asyncio.sleep(0)
                if self.resigned:
                    return
                slice_ends = time.monotonic() + LOAD_SLICE_S
        self.loaded = True
        self._loaded_event.set()
        self.shard.on_loaded()
        gc.freeze()  # what the load built lives on: the collector's full passes skip it
        log.info(
            "shard loaded",
            topic=self.partition.topic.name,
            partition=self.index,
            records=count,
            ms=round((time.monotonic() - started) * 1000, 1),
        )

    async def _run(self) -> None:
        try:
            async with _loading_lock():
                if not self.resigned:
                    await self._load()
        except Exception:
            log.exception("shard failed to load", partition=self.index)
            raise

    async def wait_loaded(self) -> None:
        """Until the shard has loaded, or resigned before it could."""
        await self._loaded_event.wait()

    def check_ready(self) -> None:
        """CoordinatorError unless the shard may be asked: COORDINATOR_LOAD_IN_PROGRESS
        while it loads, NOT_COORDINATOR once it resigned."""
        if self.resigned:
            raise CoordinatorError(ErrorCode.not_coordinator, "the coordinator moved")
        if not self.loaded:
            raise CoordinatorError(
                ErrorCode.coordinator_load_in_progress, "the coordinator is loading"
            )

    def ready_shard(self) -> Any:
        """The shard, for a check that reads its state without an operation; raises as
        `submit` does while it loads or after it resigned."""
        self.check_ready()
        return self.shard

    def submit(self, operation: Operation) -> asyncio.Future[Any]:
        self.check_ready()
        assert self._loop is not None
        future: asyncio.Future[Any] = self._loop.create_future()
        self._execute(operation, future)
        return future

    def _execute(self, operation: Operation, future: asyncio.Future[Any]) -> None:
        """Run one operation now; its answer waits for the write of anything pending."""
        if not self._answers:
            self._next_offset = self._first_offset = self.partition.log.log_end_offset
        # Scheduled before the operation runs, so the write comes before any callback
        # (a waiter woken by this operation) that the operation schedules.
        self._schedule_write()
        try:
            result = operation(self.shard)
            if result.records or result.control:
                self._take(result)
            elif not self._answers:  # wrote nothing, and nothing before it waits
                future.set_result(result.response)
                return
        except CoordinatorError as exc:
            self._answers.append((future, None, exc))
            return
        except Exception as exc:
            if isinstance(exc, OSError):
                exc = self._storage_error(exc, "operation")
            else:
                log.exception("coordinator operation failed", partition=self.index)
            self._answers.append((future, None, exc))
            return
        self._answers.append((future, result.response, None))

    def _take(self, result: Result[Any]) -> None:
        """Replay `result`'s records with the offsets they will have and keep them."""
        now_ms = int(time.time() * 1000)
        if result.control is not None:
            producer_id, epoch, commit = result.control
            self.shard.replay_control(producer_id, commit)
            self._next_offset += 1
            self._seal_plain()
            self._batches.append(control_batch(producer_id, epoch, commit, now_ms))
            return
        producer_id = result.producer[0] if result.producer is not None else -1
        for key, value in result.records:
            self.shard.replay(self._next_offset, key, value, producer_id)
            self._next_offset += 1
        if result.producer is None:
            self._plain.extend(result.records)
            return
        self._seal_plain()
        self._batches.append(
            build_batch(
                result.records,
                timestamp=now_ms,
                attributes=ATTR_TRANSACTIONAL,
                producer_id=producer_id,
                producer_epoch=result.producer[1],
            )
        )

    def _seal_plain(self) -> None:
        if self._plain:
            self._batches.append(build_batch(self._plain, timestamp=int(time.time() * 1000)))
            self._plain = []

    def _schedule_write(self) -> None:
        if not self._write_scheduled:
            self._write_scheduled = True
            assert self._loop is not None
            self._loop.call_soon(self._write)

    def _write(self) -> None:
        """Append what the operations since the last write produced, then answer them."""
        self._write_scheduled = False
        self._seal_plain()
        batches, self._batches = self._batches, []
        answers, self._answers = self._answers, []
        if self.resigned:  # the log is another leader's now: nothing of this goes in it
            error = CoordinatorError(ErrorCode.not_coordinator, "the coordinator moved")
            self._answer([(future, None, error) for future, _response, _error in answers])
            return
        if not batches:
            self._answer(answers)
            return
        first = self._first_offset
        try:
            data = bytearray(b"".join(batches))
            headers = list(iter_batches(data, check_crc=False))
            partition = self.partition
            info = partition.log.append(
                data, headers, leader_epoch=partition.leader_epoch, now_ms=int(time.time() * 1000)
            )
            if info.first_offset != first:
                raise RuntimeError(f"appended at {info.first_offset}, replayed at {first}")
        except Exception as exc:
            self._failed_write(answers, exc)
            return
        partition.appended()
        # in a cluster, answers wait until the partition's in-sync replicas have it
        replicated = partition.replicated(info.last_offset + 1)
        previous = self._flushing
        if (
            previous is None
            and replicated is None
            and not partition.log.flush_policy_due(int(time.time() * 1000))
        ):
            self._answer(answers)
            return
        assert self._loop is not None
        task = self._loop.create_task(self._flush_then_answer(previous, answers, replicated))
        self._flushing = task
        self._background.add(task)
        task.add_done_callback(self._flush_done)

    def _flush_done(self, task: asyncio.Task[None]) -> None:
        self._background.discard(task)
        if self._flushing is task:
            self._flushing = None

    async def _flush_then_answer(
        self,
        previous: asyncio.Task[None] | None,
        answers: list[Answer],
        replicated: asyncio.Future[None] | None = None,
    ) -> None:
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)
        try:
            if self.partition.log.flush_policy_due(int(time.time() * 1000)):
                await self._flush(self.partition)
        except OSError as exc:
            error = self._storage_error(exc, "flush")
            answers = [(future, None, error) for future, _response, _error in answers]
        if replicated is not None:
            try:
                await replicated
            except Exception:  # this node stopped leading the partition meanwhile
                error = CoordinatorError(ErrorCode.not_coordinator, "the coordinator moved")
                answers = [(future, None, error) for future, _response, _error in answers]
        self._answer(answers)

    @staticmethod
    def _answer(answers: list[Answer]) -> None:
        for future, response, error in answers:
            if future.done():
                continue
            if error is None:
                future.set_result(response)
            else:
                future.set_exception(error)

    def _failed_write(
        self,
        answers: list[Answer],
        exc: Exception,
    ) -> None:
        """The records are not in the log: nothing they said may stay in the state."""
        error = self._storage_error(exc, "append")
        self._answer([(future, None, error) for future, _response, _error in answers])
        self._rebuild()

    def _storage_error(self, exc: Exception, operation: str) -> Exception:
        """A storage error (a full disk, ...) answers NOT_COORDINATOR, as Kafka maps it
        for its coordinators: clients look the coordinator up again and retry."""
        if isinstance(exc, OSError) and faults.is_storage_error(exc):
            faults.report(self.partition.log.directory, exc, f"coordinator {operation}")
            return CoordinatorError(ErrorCode.not_coordinator, f"storage error: {exc.strerror}")
        log.error("coordinator write failed", partition=self.index, error=repr(exc))
        return CoordinatorError(ErrorCode.not_coordinator, f"write failed: {exc}")

    def _rebuild(self) -> None:
        """A new shard from what the log holds (timers and waiters of the old one go),
        loaded as at start: its callers get COORDINATOR_LOAD_IN_PROGRESS meanwhile."""
        for timer in self._timers.values():
            timer.handle.cancel()
        self._timers.clear()
        self.loaded = False
        self._loaded_event = asyncio.Event()
        self.shard = self._make_shard(self)
        assert self._loop is not None
        self._worker = self._loop.create_task(self._run())  # the last one has ended

    # Timers: a firing timer runs its operation like any request. Moving a timer later
    # (a session kept alive by every heartbeat or commit) only records the new time; the
    # timer that fires early sets itself again for what is left.
    def schedule(self, key: str, delay_ms: float, operation: Operation) -> None:
        loop = self._loop
        assert loop is not None
        due = loop.time() + max(delay_ms, 0) / 1000
        timer = self._timers.get(key)
        if timer is not None and timer.handle.when() <= due:
            timer.due = due
            timer.operation = operation
            return
        if timer is not None:
            timer.handle.cancel()
        self._timers[key] = _Timer(loop.call_at(due, self._fire, key), due, operation)

    def _fire(self, key: str) -> None:
        timer = self._timers.get(key)
        if timer is None:
            return
        loop = self._loop
        assert loop is not None
        if timer.due > loop.time():
            timer.handle = loop.call_at(timer.due, self._fire, key)
            return
        del self._timers[key]
        if not self.loaded or self.resigned:
            return
        future: asyncio.Future[Any] = loop.create_future()
        future.add_done_callback(_consume_exception)
        self._execute(timer.operation, future)

    def cancel(self, key: str) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.handle.cancel()

    def has_timer(self, key: str) -> bool:
        return key in self._timers


@dataclass
class _Timer:
    handle: asyncio.TimerHandle
    due: float  # loop time
    operation: Operation


def _consume_exception(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


class CoordinatorRuntime:
    """All shards of one internal topic."""

    def __init__(
        self,
        topic: str,
        partitions: int,
        make_shard: Callable[[ShardRuntime], Shard],
        create_topic: Callable[[str, int], Awaitable[Sequence[Partition]]],
        flush: Callable[[Any], Awaitable[None]],  # (the broker's Partition)
    ) -> None:
        self.topic = topic
        self.partitions = partitions
        self._make_shard = make_shard
        self._create_topic = create_topic
        self._flush = flush
        self.shards: dict[int, ShardRuntime] = {}
        self._starting: asyncio.Task[None] | None = None
        self._started = False
        self._stopping: set[asyncio.Task[None]] = set()

    def partition_for(self, key: str) -> int:
        return partition_for(key, self.partitions)

    async def ensure_started(self) -> None:
        if self._started:
            return
        if self._starting is None or self._starting.done():  # first, or failed: again
            self._starting = asyncio.get_running_loop().create_task(self._start())
        await asyncio.shield(self._starting)

    async def _start(self) -> None:
        partitions = await self._create_topic(self.topic, self.partitions)
        self.partitions = len(partitions)
        for index, partition in enumerate(partitions):
            if partition.led_here and index not in self.shards:
                self._load(index, partition)
        self._started = True

    def _load(self, index: int, partition: Partition) -> None:
        runtime = ShardRuntime(index, partition, None, self._flush, self._make_shard)
        runtime.shard = self._make_shard(runtime)
        self.shards[index] = runtime
        runtime.start()

    def lead(self, index: int, partition: Partition) -> None:
        """This node leads the partition now (a cluster's failover): load its shard at
        once, so that its callers get COORDINATOR_LOAD_IN_PROGRESS until it has loaded,
        and start the runtime if nothing did yet (it loads the other partitions led
        here)."""
        current = self.shards.get(index)
        if current is not None and current.partition is partition:
            return
        self.resign(index)
        self._load(index, partition)
        if self._starting is None:
            self._starting = asyncio.get_running_loop().create_task(self._start())
            self._starting.add_done_callback(self._started_or_failed)

    def _started_or_failed(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:  # ensure_started retries
            log.error("coordinator failed to start", topic=self.topic, error=repr(task.exception()))

    def resign(self, index: int) -> None:
        """Another node leads the partition now: drop its shard (requests for its keys
        answer NOT_COORDINATOR, and clients look the coordinator up again)."""
        runtime = self.shards.pop(index, None)
        if runtime is not None:
            runtime.resign()
            task = asyncio.get_running_loop().create_task(runtime.stop())
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)
            log.info("shard unloaded", topic=self.topic, partition=index)

    def shard_for(self, key: str) -> ShardRuntime:
        return self.shard_at(self.partition_for(key))

    def shard_at(self, index: int) -> ShardRuntime:
        runtime = self.shards.get(index)
        if runtime is None:
            # started, the partition is led elsewhere; else still coming up
            code = (
                ErrorCode.not_coordinator if self._started else ErrorCode.coordinator_not_available
            )
            raise CoordinatorError(code)
        return runtime

    async def run(self, key: str, operation: Operation) -> Any:
        """Run `operation` on the shard owning `key`; errors are CoordinatorError."""
        await self.ensure_started()
        return await self.shard_for(key).submit(operation)

    def loaded(self) -> bool:
        return bool(self.shards) and all(s.loaded for s in self.shards.values())

    async def stop(self) -> None:
        for runtime in self.shards.values():
            await runtime.stop()
