"""The coordinator runtime: shards over the partitions of an internal topic.

Each partition of `__consumer_offsets` (or `__transaction_state`) has one shard:
a state machine that only its own serial executor touches (a queue drained by
one task), so no locks guard it. The write contract:

    operation(shard) -> Result(records, response)
    runtime: append records to the partition -> shard.replay(each) -> answer

If the append fails nothing is applied and the caller gets the error. Loading
after a restart calls the same `replay` on every stored record, so normal
operation and recovery share one code path. Until a shard has loaded, its
callers get COORDINATOR_LOAD_IN_PROGRESS; keys hashing to another partition
never reach it.

Timers (session expiry, rebalance timeouts, ...) fire by submitting an
operation to the shard like any request.
"""

from __future__ import annotations

import asyncio
import functools
import struct
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import structlog

from protocol.batch import (
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    build_batch,
    iter_batches,
    iter_records,
)
from storage import faults

if TYPE_CHECKING:
    from broker.topics import Partition

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


NOT_COORDINATOR = 16
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15


class Shard(Protocol):
    def replay(self, offset: int, key: bytes, value: bytes | None, producer_id: int) -> None:
        """Apply one record; `producer_id` is set (>= 0) for transactional records."""

    def replay_control(self, producer_id: int, commit: bool) -> None:
        """A transaction marker for `producer_id`'s records on this partition."""

    def on_loaded(self) -> None:
        """Every stored record has been replayed: arm the timers."""


def control_batch(producer_id: int, epoch: int, commit: bool, now_ms: int) -> bytes:
    """A transaction marker: key = (version 0, type), value = (version 0, coordinator epoch)."""
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, 0)
    return build_batch(
        [(key, value)],
        timestamp=now_ms,
        attributes=ATTR_TRANSACTIONAL | ATTR_CONTROL,
        producer_id=producer_id,
        producer_epoch=epoch,
    )


def java_string_hash(text: str) -> int:
    """Java's String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    raw = text.encode("utf-16-be")
    for i in range(0, len(raw), 2):
        h = (31 * h + ((raw[i] << 8) | raw[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


@functools.lru_cache(maxsize=65536)
def partition_for(key: str, partitions: int) -> int:
    h = java_string_hash(key)
    return 0 if h == -(1 << 31) else abs(h) % partitions


Operation = Callable[[Any], "Result[Any]"]


class ShardRuntime:
    """One shard, its partition and its serial executor."""

    def __init__(
        self,
        index: int,
        partition: Partition,
        shard: Any,
        flush: Callable[[Partition], Awaitable[None]],
    ) -> None:
        self.index = index
        self.partition = partition
        self.shard = shard
        self._flush = flush
        self.loaded = False
        self._loaded_event = asyncio.Event()
        self._queue: asyncio.Queue[tuple[Operation, asyncio.Future[Any]]] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._busy = False  # an operation (and the flush it owes) is under way
        self._pending_answers: dict[asyncio.Future[Any], Any] = {}
        self._background: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        self._worker = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)

    def _load(self) -> None:
        started = time.monotonic()
        count = 0
        log_start = self.partition.log.log_start_offset
        for header, data in self.partition.log.iter_batches(log_start):
            if header.is_control:
                for _delta, key, _value in iter_records(data):
                    if key is not None and len(key) >= 4:
                        self.shard.replay_control(header.producer_id, key[3] == 1)
                continue
            producer_id = header.producer_id if header.is_transactional else -1
            for delta, key, value in iter_records(data):
                if key is None:
                    continue
                self.shard.replay(header.base_offset + delta, key, value, producer_id)
                count += 1
        self.loaded = True
        self._loaded_event.set()
        self.shard.on_loaded()
        log.info(
            "shard loaded",
            topic=self.partition.topic.name,
            partition=self.index,
            records=count,
            ms=round((time.monotonic() - started) * 1000, 1),
        )

    async def _run(self) -> None:
        try:
            self._load()
        except Exception:
            log.exception("shard failed to load", partition=self.index)
            raise
        while True:
            operation, future = await self._queue.get()
            if future.cancelled():
                continue
            self._busy = True
            try:
                if self._execute(operation, future):
                    try:
                        await self._flush(self.partition)
                    except OSError as exc:
                        self._pending_answers.pop(future, None)
                        self._fail(future, exc, "flush")
                    self._answer(future)
            finally:
                self._busy = False

    def _execute(self, operation: Operation, future: asyncio.Future[Any]) -> bool:
        """Run one operation and append its records. True when the answer must
        wait for a flush (it is then parked on the future's `pending` attribute)."""
        try:
            result = operation(self.shard)
            wrote = bool(result.records or result.control)
            if wrote:
                self._append(result)
        except CoordinatorError as exc:
            if not future.done():
                future.set_exception(exc)
            return False
        except Exception as exc:
            self._fail(future, exc, "append")
            return False
        if wrote and self.partition.log.flush_policy_due(int(time.time() * 1000)):
            self._pending_answers[future] = result.response
            return True
        if not future.done():
            future.set_result(result.response)
        return False

    def _fail(self, future: asyncio.Future[Any], exc: Exception, operation: str) -> None:
        """A storage error (a full disk, ...) answers NOT_COORDINATOR, as Kafka maps it
        for its coordinators: clients look the coordinator up again and retry."""
        if isinstance(exc, OSError) and faults.is_storage_error(exc):
            faults.report(self.partition.log.directory, exc, f"coordinator {operation}")
            exc = CoordinatorError(NOT_COORDINATOR, f"storage error: {exc.strerror}")
        else:
            log.exception("coordinator operation failed", partition=self.index)
        if not future.done():
            future.set_exception(exc)

    def _answer(self, future: asyncio.Future[Any]) -> None:
        response = self._pending_answers.pop(future, None)
        if not future.done():
            future.set_result(response)

    def _append(self, result: Result[Any]) -> None:
        now_ms = int(time.time() * 1000)
        if result.control is not None:
            producer_id, epoch, commit = result.control
            batch = control_batch(producer_id, epoch, commit, now_ms)
        elif result.producer is not None:
            producer_id, epoch = result.producer
            batch = build_batch(
                result.records,
                timestamp=now_ms,
                attributes=ATTR_TRANSACTIONAL,
                producer_id=producer_id,
                producer_epoch=epoch,
            )
        else:
            producer_id = -1
            batch = build_batch(result.records, timestamp=now_ms)
        data = bytearray(batch)
        headers = list(iter_batches(data, check_crc=False))
        info = self.partition.log.append(data, headers, leader_epoch=0, now_ms=now_ms)
        self.partition.data_arrived()
        if result.control is not None:
            self.shard.replay_control(producer_id, result.control[2])
            return
        for i, (key, value) in enumerate(result.records):
            if key is not None:
                self.shard.replay(info.first_offset + i, key, value, producer_id)

    async def wait_loaded(self) -> None:
        await self._loaded_event.wait()

    def submit(self, operation: Operation) -> asyncio.Future[Any]:
        if not self.loaded:
            raise CoordinatorError(COORDINATOR_LOAD_IN_PROGRESS)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self._busy or not self._queue.empty():
            self._queue.put_nowait((operation, future))
            return future
        # Nothing runs on this shard now: run the operation at once instead of
        # handing it to the worker task (same order, two fewer task switches).
        self._busy = True
        try:
            if self._execute(operation, future):
                flushing = asyncio.get_running_loop().create_task(self._flush_then_answer(future))
                self._background.add(flushing)
                flushing.add_done_callback(self._background.discard)
                return future
        finally:
            if not self._background:
                self._busy = False
        return future

    async def _flush_then_answer(self, future: asyncio.Future[Any]) -> None:
        try:
            await self._flush(self.partition)
            self._answer(future)
        except Exception as exc:
            if not future.done():
                future.set_exception(exc)
        finally:
            self._busy = False

    # Timers: a firing timer submits its operation like any request.
    def schedule(self, key: str, delay_ms: float, operation: Operation) -> None:
        self.cancel(key)
        loop = asyncio.get_running_loop()

        def fire() -> None:
            self._timers.pop(key, None)
            future: asyncio.Future[Any] = loop.create_future()
            future.add_done_callback(_consume_exception)
            self._queue.put_nowait((operation, future))

        self._timers[key] = loop.call_later(max(delay_ms, 0) / 1000, fire)

    def cancel(self, key: str) -> None:
        handle = self._timers.pop(key, None)
        if handle is not None:
            handle.cancel()

    def has_timer(self, key: str) -> bool:
        return key in self._timers


def _consume_exception(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


class CoordinatorRuntime:
    """All shards of one internal topic."""

    def __init__(
        self,
        topic: str,
        partitions: int,
        make_shard: Callable[[ShardRuntime], Any],
        create_topic: Callable[[str, int], Awaitable[list[Partition]]],
        flush: Callable[[Partition], Awaitable[None]],
    ) -> None:
        self.topic = topic
        self.partitions = partitions
        self._make_shard = make_shard
        self._create_topic = create_topic
        self._flush = flush
        self.shards: dict[int, ShardRuntime] = {}
        self._starting: asyncio.Task[None] | None = None

    def partition_for(self, key: str) -> int:
        return partition_for(key, self.partitions)

    async def ensure_started(self) -> None:
        if self._starting is None:
            self._starting = asyncio.get_running_loop().create_task(self._start())
        await asyncio.shield(self._starting)

    async def _start(self) -> None:
        partitions = await self._create_topic(self.topic, self.partitions)
        self.partitions = len(partitions)
        for index, partition in enumerate(partitions):
            runtime = ShardRuntime(index, partition, None, self._flush)
            runtime.shard = self._make_shard(runtime)
            self.shards[index] = runtime
            runtime.start()

    def shard_for(self, key: str) -> ShardRuntime:
        return self.shard_at(self.partition_for(key))

    def shard_at(self, index: int) -> ShardRuntime:
        runtime = self.shards.get(index)
        if runtime is None:
            raise CoordinatorError(COORDINATOR_NOT_AVAILABLE)
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
