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
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import structlog

from coordinator.runtime import CoordinatorError, CoordinatorRuntime, Result
from coordinator.txn.shard import MarkerPlan, TxnConfig, TxnShard

if TYPE_CHECKING:
    from broker.server import Broker

log = structlog.get_logger("transactions")

TRANSACTION_TOPIC = "__transaction_state"
CRASH_AT = os.environ.get("ODRADEK_TXN_CRASH_AT", "")


def crash_point(step: str) -> None:
    if step == CRASH_AT:
        log.warning("fault injection: killing the broker", step=step)
        os.kill(os.getpid(), signal.SIGKILL)


def _now() -> int:
    return int(time.time() * 1000)


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

    async def _maintain(self) -> None:
        interval = self.broker.config.txn_abort_interval_ms / 1000
        while not all(s.loaded for s in self.runtime.shards.values()):
            await asyncio.sleep(0.01)
        for shard in list(self.runtime.shards.values()):
            for plan in await shard.submit(lambda s: s.unfinished()):
                await self.finish(plan)
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
                    for shard in list(self.runtime.shards.values()):
                        await shard.submit(lambda s: s.expire_idle(_now()))
            except asyncio.CancelledError:
                raise
            except Exception:  # keep scanning: a failed round is retried at the next one
                log.exception("transaction maintenance failed")

    async def _abort_timed_out(self) -> None:
        for shard in list(self.runtime.shards.values()):
            plans = await shard.submit(lambda s: s.abort_timed_out(_now()))
            for plan in plans:
                log.info("aborting a timed-out transaction", transactional_id=plan.transactional_id)
                await self.finish(plan)

    # -- ending transactions ------------------------------------------------------------

    async def end_transaction(
        self, transactional_id: str, producer_id: int, epoch: int, commit: bool
    ) -> int:
        crash_point("before-prepare")
        answer = await self.run(
            transactional_id,
            lambda s: s.prepare_end(transactional_id, producer_id, epoch, commit, _now()),
        )
        if not isinstance(answer, MarkerPlan):
            return int(answer)
        crash_point("after-prepare")
        await self.finish(answer)
        return 0

    async def finish(self, plan: MarkerPlan) -> None:
        """Write every marker, then the Complete* record."""
        await self.write_markers(plan.producer_id, plan.epoch, plan.commit, plan.partitions)
        crash_point("after-markers")
        await self.run(plan.transactional_id, lambda s: s.complete_end(plan, _now()))

    async def write_markers(
        self, producer_id: int, epoch: int, commit: bool, partitions: Any
    ) -> dict[tuple[str, int], int]:
        """Append a COMMIT or ABORT marker to each partition; error code per partition."""
        results: dict[tuple[str, int], int] = {}
        groups = self.broker.groups
        for topic, index in sorted(partitions):
            if topic == groups.topic:
                await groups.ensure_started()
                shard = groups.shards.get(index)
                if shard is None:
                    results[(topic, index)] = 3
                    continue
                while True:
                    try:
                        await shard.submit(
                            lambda _s: Result([], None, control=(producer_id, epoch, commit))
                        )
                        break
                    except CoordinatorError:  # still loading: markers are retried, never dropped
                        await asyncio.sleep(0.05)
                results[(topic, index)] = 0
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
            if t != groups.topic and (p := self.broker.topics.partition(t, i)) is not None
        ]
        await self.broker.flush_if_due(touched, _now())
        return results

    # -- checks used by Produce and TxnOffsetCommit ----------------------------------------

    def shard_of(self, transactional_id: str) -> TxnShard | None:
        if not self.runtime.shards:
            return None
        runtime = self.runtime.shards.get(self.runtime.partition_for(transactional_id))
        if runtime is None or not runtime.loaded:
            return None
        shard: TxnShard = runtime.shard
        return shard

    def in_transaction(
        self, transactional_id: str, producer_id: int, epoch: int, partition: tuple[str, int]
    ) -> bool:
        shard = self.shard_of(transactional_id)
        return shard is not None and shard.in_transaction(
            transactional_id, producer_id, epoch, partition
        )
