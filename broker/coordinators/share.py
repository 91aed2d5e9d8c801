"""The share coordinator's runtime side: shards over `__share_group_state`, created on
first use, and the share sessions of the members that fetch.

A share-partition (group, topic id, partition) lives on the shard its key
"group:topic id:partition" hashes to. The topic keeps every record until the
share-partitions it describes are deleted (cleanup.policy=delete, no retention).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from odradek.broker.coordinators.share_sessions import ShareSessionCache, TopicPartition
from odradek.broker.dataplane.topics import Partition, Topic, TopicRegistry
from odradek.broker.settings.config import BrokerConfig
from odradek.coordinator.runtime import CoordinatorRuntime, ShardRuntime
from odradek.coordinator.share.records import ShareKey
from odradek.coordinator.share.shard import ShareConfig, ShareShard


class Broker(Protocol):
    """What the share coordinator needs of the broker (server.py's Broker)."""

    @property
    def config(self) -> BrokerConfig: ...
    @property
    def topics(self) -> TopicRegistry: ...

    async def create_topic(
        self, name: str, partitions: int, configs: Mapping[str, str]
    ) -> Topic: ...


SHARE_STATE_TOPIC = "__share_group_state"
KEYS_REMEMBERED = 100_000
SHARE_STATE_TOPIC_CONFIGS = {
    "cleanup.policy": "delete",
    "retention.ms": "-1",
    "segment.bytes": "104857600",
}


class ShareCoordinator:
    def __init__(self, broker: Broker, flush: Callable[[Partition], Awaitable[None]]) -> None:
        config = broker.config
        self.broker = broker
        self.config = ShareConfig(
            record_lock_duration_ms=config.group_share_record_lock_duration_ms,
            delivery_count_limit=config.group_share_delivery_count_limit,
            max_record_locks=config.group_share_partition_max_record_locks,
            snapshot_every=config.share_coordinator_snapshot_update_records_per_snapshot,
        )
        self.runtime = CoordinatorRuntime(
            SHARE_STATE_TOPIC,
            config.share_coordinator_state_topic_num_partitions,
            lambda runtime: ShareShard(runtime, self.config),
            self._create_topic,
            flush,
        )
        self.sessions = ShareSessionCache(config.share_max_share_sessions)
        self._releases: set[asyncio.Task[None]] = set()
        self._partition_of: dict[ShareKey, int] = {}

    async def _create_topic(self, name: str, partitions: int) -> list[Partition]:
        topic = self.broker.topics.get(name)
        if topic is None:
            topic = await self.broker.create_topic(name, partitions, SHARE_STATE_TOPIC_CONFIGS)
        return list(topic.partitions)

    async def ensure_started(self) -> None:
        await self.runtime.ensure_started()

    async def run(self, key: ShareKey, operation: Callable[[ShareShard], Any]) -> Any:
        """Run `operation` on the shard owning `key` (once it is loaded: the callers are
        this broker's own handlers, not clients that could retry); errors are
        CoordinatorError."""
        await self.runtime.ensure_started()
        shard = self._runtime_of(key)
        await shard.wait_loaded()
        return await shard.submit(operation)

    def shard(self, key: ShareKey) -> ShareShard:
        """The loaded shard owning `key` (CoordinatorError while it loads, or once it
        resigned), for what reads its state outside an operation."""
        shard: ShareShard = self._runtime_of(key).ready_shard()
        return shard

    def woken(self, key: ShareKey) -> bool:
        """Were members waiting on `key` woken since the last call? (Not while its shard
        loads or after it resigned: nobody waits on it then.)"""
        runtime = self._runtime_of(key)
        return runtime.loaded and not runtime.resigned and runtime.shard.take_woken(key)

    def _runtime_of(self, key: ShareKey) -> ShardRuntime:
        # the key's hash walks its text character by character: worth remembering
        index = self._partition_of.get(key)
        if index is None:
            if len(self._partition_of) >= KEYS_REMEMBERED:
                self._partition_of.clear()
            index = self._partition_of[key] = self.runtime.partition_for(key.text())
        return self.runtime.shard_at(index)

    async def release_member(
        self, group_id: str, member_id: str, partitions: list[TopicPartition]
    ) -> None:
        """Make what the member holds in these share-partitions available to others."""
        for topic_id, index in partitions:
            key = ShareKey(group_id, topic_id, index)
            await self.run(key, functools.partial(_release, key=key, member_id=member_id))

    def keys_of_group(self, group_id: str) -> list[ShareKey]:
        """The share-partitions of a group with state, on every shard."""
        if not self.runtime.shards:
            return []
        return [
            key
            for runtime in self.runtime.shards.values()
            for key in runtime.shard.keys_of_group(group_id)
        ]

    async def delete_group_state(self, group_id: str) -> None:
        # every shard loaded first: the keys of one still loading are not all known yet
        for runtime in list(self.runtime.shards.values()):
            await runtime.wait_loaded()
        for key in self.keys_of_group(group_id):
            await self.run(key, functools.partial(_delete, key=key))

    def connection_closed(self, connection_id: str) -> None:
        """The sessions opened on a closed connection end; what they hold is released."""
        if not self.sessions.sessions:
            return
        for session in self.sessions.close_connection(connection_id):
            partitions = list(session.partitions)
            task = asyncio.create_task(
                self.release_member(session.group_id, session.member_id, partitions)
            )
            self._releases.add(task)
            task.add_done_callback(self._releases.discard)

    def _loaded_shards(self) -> list[ShareShard]:
        return [runtime.shard for runtime in list(self.runtime.shards.values())]

    def in_flight_records(self) -> float:
        return float(
            sum(p.in_flight() for s in self._loaded_shards() for p in s.partitions.values())
        )

    def lock_timeouts(self) -> float:
        return float(sum(s.lock_timeouts for s in self._loaded_shards()))

    def prune(self) -> int:
        """Delete the records of `__share_group_state` that no share-partition's state
        needs any more (those before its latest snapshot), as Kafka's share coordinator
        does every `share.coordinator.state.topic.prune.interval.ms`. Returns how many
        records went."""
        pruned = 0
        for runtime in list(self.runtime.shards.values()):
            if not runtime.loaded:
                continue
            log = runtime.partition.log
            below = runtime.shard.prunable_below(log.log_end_offset)
            if below > log.log_start_offset:
                before = log.log_start_offset
                pruned += log.delete_records_before(below) - before
        return pruned

    async def stop(self) -> None:
        await self.runtime.stop()


def _delete(shard: ShareShard, key: ShareKey) -> Any:
    return shard.delete(key)


def _release(shard: ShareShard, key: ShareKey, member_id: str) -> Any:
    return shard.release(key, member_id, None)
