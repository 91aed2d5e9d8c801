"""The transaction coordinator's runtime side: shards over `__transaction_state`,
and the cross-partition work a shard cannot do itself, namely writing markers.

A transaction is complete only when every marker is appended (data partitions
and the group's `__consumer_offsets` partition, where the marker materialises
the pending offsets) and the Complete* record is written. EndTxn answers after
that, so a client never sees CONCURRENT_TRANSACTIONS for its own commit.

Fault injection for crash tests: ODRADEK_TXN_CRASH_AT names a step of EndTxn
(`before-prepare`, `after-prepare`, `mid-markers`, `after-markers`) at
which the process kills itself; it is off unless the variable is set.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

import structlog

from odradek.broker.dataplane.topics import Partition, TopicRegistry
from odradek.broker.settings.config import BrokerConfig
from odradek.coordinator.runtime import CoordinatorError, CoordinatorRuntime, Result, ShardRuntime
from odradek.coordinator.txn.shard import MarkerPlan, TxnConfig, TxnShard
from odradek.protocol.errors import ErrorCode


class MarkerSender(Protocol):
    """A cluster member's way to other brokers: markers for the partitions they lead,
    and partitions to add to a transaction another broker coordinates."""

    async def send_markers(
        self,
        leader: int,
        producer_id: int,
        epoch: int,
        commit: bool,
        partitions: list[tuple[str, int]],
    ) -> dict[tuple[str, int], int]: ...

    async def add_to_transaction(
        self,
        coordinator: int,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: list[tuple[str, int]],
    ) -> dict[tuple[str, int], int]: ...


class ProducerIds(Protocol):
    def allocate(self) -> int: ...


class Broker(Protocol):
    """What the transaction coordinator needs of the broker (server.py's Broker)."""

    @property
    def config(self) -> BrokerConfig: ...
    @property
    def topics(self) -> TopicRegistry: ...
    @property
    def groups(self) -> CoordinatorRuntime: ...
    @property
    def member(self) -> MarkerSender | None: ...
    @property
    def producer_ids(self) -> ProducerIds: ...

    def write_marker(
        self, partition: Partition, producer_id: int, epoch: int, commit: bool
    ) -> None: ...

    async def flush_if_due(self, partitions: Iterable[Partition], now_ms: int) -> None: ...


log = structlog.get_logger("transactions")

MARKER_RETRY_S = 0.1

TRANSACTION_TOPIC = "__transaction_state"
CRASH_AT = os.environ.get("ODRADEK_TXN_CRASH_AT", "")


def crash_point(step: str) -> None:
    if step == CRASH_AT:
        log.warning("fault injection: killing the broker", step=step)
        os.kill(os.getpid(), signal.SIGKILL)


def _now() -> int:
    return int(time.time() * 1000)


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:  # the next request retries
        log.error("transaction coordinator failed to start", error=repr(task.exception()))


class TransactionCoordinator:
    def __init__(
        self,
        broker: Broker,
        create_topic: Callable[[str, int], Awaitable[Any]],
        flush: Callable[[Any], Awaitable[None]],
    ) -> None:
        config = broker.config
        self.broker = broker
        self.config = TxnConfig(
            max_timeout_ms=config.transaction_max_timeout_ms,
            transactional_id_expiration_ms=config.transactional_id_expiration_ms,
        )
        self.runtime = CoordinatorRuntime(
            TRANSACTION_TOPIC,
            config.transaction_state_log_num_partitions,
            lambda runtime: TxnShard(runtime, self.config),
            create_topic,
            flush,
        )
        self._background: asyncio.Task[None] | None = None
        self._recoveries: set[asyncio.Task[None]] = set()
        self._starting: asyncio.Task[None] | None = None

    async def ensure_started(self) -> None:
        await self.runtime.ensure_started()
        if self._background is None:
            self._background = asyncio.get_running_loop().create_task(self._maintain())

    async def stop(self) -> None:
        if self._background is not None:
            self._background.cancel()
            await asyncio.gather(self._background, return_exceptions=True)
        await self.runtime.stop()

    async def run(self, transactional_id: str, operation: Callable[[Any], Any]) -> Any:
        await self.ensure_started()
        return await self.runtime.run(transactional_id, operation)

    # -- the periodic work: recovery, timeouts, expiry ---------------------------------

    def lead(self, index: int, partition: Partition) -> None:
        """This node leads a partition of the topic now (a cluster's failover): its shard
        loads at once, the coordinator starts if nothing had asked for it on this node
        (its first round ends what the old coordinator left unfinished), else that
        partition's unfinished transactions are ended."""
        self.runtime.lead(index, partition)
        if self._background is not None:
            self.recover(index)
        elif self._starting is None or self._starting.done():
            self._starting = asyncio.get_running_loop().create_task(self.ensure_started())
            self._starting.add_done_callback(_log_failure)

    def recover(self, index: int) -> None:
        """This node took over a shard (a cluster's failover): end what its old
        coordinator decided but did not finish."""
        runtime = self.runtime.shards.get(index)
        if runtime is None:
            return
        task = asyncio.get_running_loop().create_task(self._finish_unfinished(runtime))
        self._recoveries.add(task)
        task.add_done_callback(self._recoveries.discard)

    async def _finish_unfinished(self, runtime: ShardRuntime) -> None:
        await runtime.wait_loaded()
        try:
            for plan in await runtime.submit(lambda s: s.unfinished()):
                await self.finish(plan)
        except CoordinatorError as exc:  # moved on again meanwhile
            log.info("transaction recovery stopped", partition=runtime.index, code=exc.code)

    async def _maintain(self) -> None:
        interval = self.broker.config.txn_abort_interval_ms / 1000
        while not all(s.loaded for s in self.runtime.shards.values()):
            await asyncio.sleep(0.01)
        for runtime in list(self.runtime.shards.values()):
            await self._finish_unfinished(runtime)
        last_expiry = time.monotonic()
        # Kafka's transaction.remove.expired.transaction.cleanup.interval.ms (1 hour), or
        # more often when ids expire sooner than that
        expiry_interval = min(
            3600.0, max(self.config.transactional_id_expiration_ms / 1000, interval)
        )
        while True:
            await asyncio.sleep(interval)
            try:
                await self._abort_timed_out()
                if time.monotonic() - last_expiry > expiry_interval:
                    last_expiry = time.monotonic()
                    await self._on_each_shard(lambda s: s.expire_idle(_now()))
            except asyncio.CancelledError:
                raise
            except Exception:  # keep scanning: a failed round is retried at the next one
                log.exception("transaction maintenance failed")

    async def _abort_timed_out(self) -> None:
        for plans in await self._on_each_shard(lambda s: s.abort_timed_out(_now())):
            for plan in plans:
                log.info("aborting a timed-out transaction", transactional_id=plan.transactional_id)
                await self.finish(plan)

    async def _on_each_shard(self, operation: Callable[[Any], Any]) -> list[Any]:
        """`operation`'s answer from each shard here; one that is loading or moved away
        is left for the next round, not the end of this one."""
        answers = []
        for shard in list(self.runtime.shards.values()):
            try:
                answers.append(await shard.submit(operation))
            except CoordinatorError:
                continue
        return answers

    # -- ending transactions ------------------------------------------------------------

    async def end_transaction(
        self, transactional_id: str, producer_id: int, epoch: int, commit: bool, bump: bool = False
    ) -> tuple[int, int, int]:
        """(error code, producer id, epoch) once the transaction is complete; with
        `bump` (transactions version 2) the id and epoch the producer goes on with."""
        crash_point("before-prepare")
        answer = await self.run(
            transactional_id,
            lambda s: s.prepare_end(transactional_id, producer_id, epoch, commit, _now(), bump),
        )
        if isinstance(answer, MarkerPlan):
            crash_point("after-prepare")
            await self.finish(answer)
        elif answer:
            return int(answer), -1, -1
        pid, new_epoch = await self.run(transactional_id, lambda s: s.producer_of(transactional_id))
        return 0, pid, new_epoch

    async def finish(self, plan: MarkerPlan) -> None:
        """Write every marker, then the Complete* record."""
        await self.write_markers(plan.producer_id, plan.epoch, plan.commit, plan.partitions)
        crash_point("after-markers")
        await self.run(
            plan.transactional_id,
            lambda s: s.complete_end(plan, _now(), self.new_producer_id),
        )

    async def write_markers(
        self, producer_id: int, epoch: int, commit: bool, partitions: Any, forward: bool = True
    ) -> dict[tuple[str, int], int]:
        """Append a COMMIT or ABORT marker to each partition; error code per partition.
        In a cluster the partitions led elsewhere get theirs from their leaders
        (WriteTxnMarkers), unless `forward` is off (a request from a coordinator)."""
        results: dict[tuple[str, int], int] = {}
        groups = self.broker.groups
        remote = []
        for topic, index in sorted(partitions):
            here = self.broker.topics.partition(topic, index)
            if here is not None and not here.led_here:
                if forward:
                    remote.append((topic, index))
                else:
                    results[(topic, index)] = ErrorCode.not_leader_or_follower
                continue
            if topic == groups.topic:
                code = await self._offsets_marker(index, producer_id, epoch, commit)
                if code == ErrorCode.not_leader_or_follower and forward:
                    remote.append((topic, index))  # it moved meanwhile: its new leader
                else:
                    results[(topic, index)] = code
                crash_point("mid-markers")
                continue
            partition = self.broker.topics.partition(topic, index)
            if partition is None:
                results[(topic, index)] = 3  # the topic was deleted: nothing to mark
                continue
            self.broker.write_marker(partition, producer_id, epoch, commit)
            results[(topic, index)] = 0
            crash_point("mid-markers")
        touched = [
            p
            for t, i in partitions
            if t != groups.topic
            and (p := self.broker.topics.partition(t, i)) is not None
            and p.led_here
        ]
        await self.broker.flush_if_due(touched, _now())
        for partition in touched:
            replicated = partition.replicated(partition.log.log_end_offset)
            if replicated is not None:
                try:
                    await replicated
                except Exception:  # deposed meanwhile: its new leader takes the marker
                    results[(partition.topic.name, partition.index)] = (
                        ErrorCode.not_leader_or_follower
                    )
        if remote:
            results.update(await self._markers_elsewhere(producer_id, epoch, commit, remote))
        return results

    async def _offsets_marker(self, index: int, producer_id: int, epoch: int, commit: bool) -> int:
        """The marker on a `__consumer_offsets` partition led here, written through its
        group shard: retried while the shard loads or its write fails (never dropped),
        NOT_LEADER_OR_FOLLOWER once another node leads the partition."""
        groups = self.broker.groups
        await groups.ensure_started()
        marker = Result[None]([], None, control=(producer_id, epoch, commit))
        while True:
            here = self.broker.topics.partition(groups.topic, index)
            if here is not None and not here.led_here:
                return ErrorCode.not_leader_or_follower
            shard = groups.shards.get(index)  # looked up again: it may have moved and back
            if here is None or shard is None:
                return ErrorCode.unknown_topic_or_partition
            try:
                await shard.submit(lambda _s: marker)
                return ErrorCode.none
            except CoordinatorError:
                await asyncio.sleep(0.05)

    async def _markers_elsewhere(
        self, producer_id: int, epoch: int, commit: bool, partitions: list[tuple[str, int]]
    ) -> dict[tuple[str, int], int]:
        """Markers for partitions led by other brokers, sent to their leaders and sent
        again (to whoever leads then) until each is written or its topic is gone."""
        member = self.broker.member
        assert member is not None
        results: dict[tuple[str, int], int] = {}
        left = list(partitions)
        while left:
            by_leader: dict[int, list[tuple[str, int]]] = {}
            for topic, index in left:
                partition = self.broker.topics.partition(topic, index)
                if partition is None or partition.replication is None:
                    results[(topic, index)] = ErrorCode.unknown_topic_or_partition
                    continue
                by_leader.setdefault(partition.replication.leader_id, []).append((topic, index))
            left = []
            for leader, wanted in by_leader.items():
                codes = await member.send_markers(leader, producer_id, epoch, commit, wanted)
                for tp in wanted:
                    code = codes.get(tp, ErrorCode.not_leader_or_follower)
                    if code in (ErrorCode.none, ErrorCode.unknown_topic_or_partition):
                        results[tp] = code
                    else:
                        left.append(tp)
            if left:
                await asyncio.sleep(MARKER_RETRY_S)
        return results

    async def add_implicitly(
        self, transactional_id: str, producer_id: int, epoch: int, partitions: set[tuple[str, int]]
    ) -> dict[tuple[str, int], int]:
        """Transactions version 2: a Produce (v12+) or a TxnOffsetCommit (v5+) adds its
        partitions to the producer's transaction itself, here or at the coordinator of
        another broker. The error code per partition (0 once it is in)."""
        if self.coordinates(transactional_id):
            try:
                code = await self.run(
                    transactional_id,
                    lambda s: s.add_partitions(
                        transactional_id, producer_id, epoch, partitions, _now()
                    ),
                )
            except CoordinatorError as exc:
                code = exc.code
            return dict.fromkeys(partitions, int(code))
        member = self.broker.member
        index = self.runtime.partition_for(transactional_id)
        state = self.broker.topics.partition(self.runtime.topic, index)
        if member is None or state is None or state.replication is None:
            return dict.fromkeys(partitions, int(ErrorCode.coordinator_not_available))
        return await member.add_to_transaction(
            state.replication.leader_id, transactional_id, producer_id, epoch, sorted(partitions)
        )

    def new_producer_id(self) -> int:
        return self.broker.producer_ids.allocate()

    # -- checks used by Produce and TxnOffsetCommit ----------------------------------------

    def shard_of(self, transactional_id: str) -> TxnShard:
        """The id's shard, to read; CoordinatorError as an operation on it would get:
        COORDINATOR_LOAD_IN_PROGRESS while it loads (a coordinator that just took over),
        NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE when it is not here."""
        shard: TxnShard = self.runtime.shard_for(transactional_id).ready_shard()
        return shard

    def coordinates(self, transactional_id: str) -> bool:
        """This node coordinates the id's transactions (always, on one node of its own)."""
        if self.broker.member is None:
            return True
        index = self.runtime.partition_for(transactional_id)
        partition = self.broker.topics.partition(self.runtime.topic, index)
        return partition is not None and partition.led_here

    def in_transaction(
        self, transactional_id: str, producer_id: int, epoch: int, partition: tuple[str, int]
    ) -> bool:
        """The producer's open transaction has the partition; CoordinatorError while
        the shard that knows cannot tell (see shard_of)."""
        return self.shard_of(transactional_id).in_transaction(
            transactional_id, producer_id, epoch, partition
        )
