"""The coordinator runtime around a shard that loads or resigns, on a real partition
log: a node that comes to lead a partition loads its shard at once (even when
nothing asked for the coordinator before), callers of a loading shard get
COORDINATOR_LOAD_IN_PROGRESS whether they submit an operation or read its state,
and a shard that resigned answers NOT_COORDINATOR and writes nothing more."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from odradek.coordinator.runtime import (
    CoordinatorError,
    CoordinatorRuntime,
    Partition,
    ShardRuntime,
)
from odradek.coordinator.txn.shard import TxnConfig, TxnShard
from odradek.protocol.errors import ErrorCode
from odradek.storage.config import LogConfig
from odradek.storage.log import PartitionLog

TOPIC = "__transaction_state"


@dataclass
class _Named:
    name: str


@dataclass
class LocalPartition:
    """A partition of the internal topic hosted here, as the runtime sees one: a real
    log, led by this node, its records replicated as soon as they are written."""

    log: PartitionLog
    topic: _Named = field(default_factory=lambda: _Named(TOPIC))
    leader_epoch: int = 0
    led_here: bool = True

    def appended(self) -> None:
        pass

    def replicated(self, end_offset: int) -> asyncio.Future[None] | None:
        return None


def _runtime(partitions: Sequence[Partition]) -> CoordinatorRuntime:
    async def create_topic(_name: str, _count: int) -> Sequence[Partition]:
        return partitions

    async def flush(_partition: Any) -> None:
        return None

    return CoordinatorRuntime(
        TOPIC, len(partitions), lambda runtime: TxnShard(runtime, TxnConfig()), create_topic, flush
    )


def _init_producer_id(transactional_id: str) -> Any:
    return lambda shard: shard.init_producer_id(transactional_id, 60000, -1, -1, lambda: 7, 0)


def _partitions(tmp_path: Path, count: int) -> list[LocalPartition]:
    return [
        LocalPartition(PartitionLog.open(tmp_path / f"{TOPIC}-{i}", LogConfig()))
        for i in range(count)
    ]


async def test_leading_a_partition_loads_its_shard_and_starts_the_runtime(
    tmp_path: Path,
) -> None:
    partitions = _partitions(tmp_path, 2)
    runtime = _runtime(partitions)
    runtime.lead(1, partitions[1])  # before anything asked for the coordinator
    shard = runtime.shard_at(1)
    for ask in (shard.ready_shard, lambda: shard.submit(_init_producer_id("tx"))):
        with pytest.raises(CoordinatorError) as refused:
            ask()
        assert refused.value.code == ErrorCode.coordinator_load_in_progress
    await shard.wait_loaded()
    assert isinstance(shard.ready_shard(), TxnShard)
    assert await shard.submit(_init_producer_id("tx")) == (0, 7, 0)
    await runtime.ensure_started()  # started by lead: the other partition loaded too
    assert sorted(runtime.shards) == [0, 1]
    await runtime.stop()


async def test_a_resigned_shard_answers_not_coordinator_and_writes_nothing(
    tmp_path: Path,
) -> None:
    partitions = _partitions(tmp_path, 1)
    runtime = _runtime(partitions)
    await runtime.ensure_started()
    shard = runtime.shard_at(0)
    await shard.wait_loaded()
    assert await shard.submit(_init_producer_id("before")) == (0, 7, 0)
    end = partitions[0].log.log_end_offset
    pending = shard.submit(_init_producer_id("after"))  # its write waits for the loop
    runtime.resign(0)
    with pytest.raises(CoordinatorError) as moved:
        await pending
    assert moved.value.code == ErrorCode.not_coordinator
    assert partitions[0].log.log_end_offset == end
    for ask in (shard.ready_shard, lambda: shard.submit(_init_producer_id("later"))):
        with pytest.raises(CoordinatorError) as refused:
            ask()
        assert refused.value.code == ErrorCode.not_coordinator
    await runtime.stop()


async def test_waiting_for_a_load_ends_when_the_shard_resigns_first(tmp_path: Path) -> None:
    partitions = _partitions(tmp_path, 1)
    runtime = _runtime(partitions)
    runtime.lead(0, partitions[0])
    shard: ShardRuntime = runtime.shard_at(0)
    runtime.resign(0)  # before its load ran
    await asyncio.wait_for(shard.wait_loaded(), 5)
    with pytest.raises(CoordinatorError) as moved:
        shard.submit(_init_producer_id("tx"))
    assert moved.value.code == ErrorCode.not_coordinator
    await runtime.stop()
