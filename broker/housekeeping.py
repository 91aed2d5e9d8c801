"""The broker's background work, one task each: retention, time-based rolls,
flushes, producer id expiry, a check of the log directories and new partitions frozen
for the collector (keep_house);
compaction of compacted topics, the internal ones among them (clean_logs); idle
connections (sweep_connections); expired delegation tokens (remove_expired_tokens)."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import time
from typing import Protocol

import structlog

from odradek.broker.coordinators.share import ShareCoordinator
from odradek.broker.dataplane.flusher import Flusher
from odradek.broker.dataplane.log_dirs import is_full_disk
from odradek.broker.dataplane.replica_moves import ReplicaMoves
from odradek.broker.dataplane.topics import TopicRegistry
from odradek.broker.network import memory
from odradek.broker.network.connections import ConnectionTable
from odradek.broker.security.delegation_tokens import TokenStoreLike
from odradek.broker.settings.config import BrokerConfig
from odradek.broker.slices import Slices
from odradek.coordinator.runtime import CoordinatorError
from odradek.storage import faults

log = structlog.get_logger("broker")


class Broker(Protocol):
    """What the background work needs of the broker (server.py's Broker)."""

    @property
    def config(self) -> BrokerConfig: ...
    @property
    def topics(self) -> TopicRegistry: ...
    @property
    def flusher(self) -> Flusher: ...
    @property
    def connections(self) -> ConnectionTable: ...
    @property
    def share(self) -> ShareCoordinator: ...
    @property
    def appended_bytes(self) -> int: ...
    @property
    def replica_moves(self) -> ReplicaMoves: ...

    def now_ms(self) -> int: ...


async def clean_logs(broker: Broker) -> None:
    """Compaction of compacted topics (the internal ones among them), off the event loop."""
    backoff = broker.config.log_cleaner_backoff_ms / 1000
    while True:
        await asyncio.sleep(backoff)
        for partition in broker.topics.hosted_partitions():
            topic = partition.topic
            plog = partition.log
            if not plog.config.compacts or broker.replica_moves.of(partition) is not None:
                continue  # (a replica being moved is compacted once it has moved)
            await broker.flusher.flush([plog])
            producers = set(partition.producers.producers)
            try:
                stats = await asyncio.to_thread(
                    plog.compact, broker.now_ms(), producer_ids=producers
                )
            except OSError as exc:
                if not broker.topics.fail_log(plog, exc, "compaction"):
                    log.warning("compaction failed", topic=topic.name, error=str(exc))
                continue
            except Exception:
                log.exception("compaction failed", topic=topic.name, partition=partition.index)
                continue
            if stats.cleaned:
                log.info(
                    "compacted",
                    topic=topic.name,
                    partition=partition.index,
                    **dataclasses.asdict(stats),
                )


async def sweep_connections(broker: Broker) -> None:
    """Connections idle past connections.max.idle.ms, and a collection after many closed."""
    while True:
        await asyncio.sleep(1)
        broker.connections.sweep()


async def keep_house(broker: Broker) -> None:
    """Retention, time-based rolls and flushes, producer id expiry; and new partitions
    frozen for the garbage collector."""
    interval = min(broker.config.log_retention_check_interval_ms, 1000) / 1000
    last_retention = last_prune = 0.0
    appended_before = broker.appended_bytes
    trimmed = True
    frozen_at = broker.topics.partitions_made
    while True:
        await asyncio.sleep(interval)
        if broker.topics.partitions_made != frozen_at:
            # What new partitions made (logs, indexes, producer tables) lives on: frozen,
            # as start-up's is, or every full collection walks it while the loop waits
            # (at 10,000 partitions 40-160 ms each).
            frozen_at = broker.topics.partitions_made
            gc.freeze()
        if broker.appended_bytes != appended_before:
            appended_before, trimmed = broker.appended_bytes, False
        elif not trimmed:  # Produce traffic has stopped: hand back the freed buffers
            memory.release_free_memory()
            trimmed = True
        now_ms = int(time.time() * 1000)
        check_retention = time.monotonic() - last_retention >= (
            broker.config.log_retention_check_interval_ms / 1000
        )
        check_log_dirs(broker.topics)
        due = []
        slices = Slices()
        for partition in list(broker.topics.hosted_partitions()):
            await slices.pause_if_due()  # thousands of partitions: others go too
            if not broker.topics.still_hosted(partition):
                continue  # deleted, moved or its directory failed while others went
            plog = partition.log
            try:
                plog.roll_if_due(now_ms)
                if check_retention and plog.apply_retention(now_ms):
                    partition.producers.drop_below(plog.log_start_offset)
            except OSError as exc:
                if not broker.topics.fail_log(plog, exc, "retention"):
                    faults.report(plog.directory, exc, "retention")
                continue
            partition.producers.expire(now_ms, broker.config.producer_id_expiration_ms)
            if plog.needs_flush(now_ms):
                due.append(plog)
        if check_retention:
            last_retention = time.monotonic()
        prune_interval = broker.config.share_coordinator_state_topic_prune_interval_ms / 1000
        if time.monotonic() - last_prune >= prune_interval:
            last_prune = time.monotonic()
            broker.share.prune()
        if due:
            try:
                await broker.flusher.flush(due)
            except OSError as exc:  # a full disk: the next round tries again
                faults.report(broker.config.data_dir, exc, "flush")


def check_log_dirs(topics: TopicRegistry) -> None:
    """A log directory removed, replaced or made unwritable fails here, even with no
    traffic (Kafka finds out at its next checkpoint write into it)."""
    for log_dir in topics.log_dirs.online():
        try:
            topics.log_dirs.probe(log_dir)
        except OSError as exc:
            if not is_full_disk(exc):
                topics.fail_dir(log_dir, exc, "check")


async def remove_expired_tokens(tokens: TokenStoreLike, interval_ms: int) -> None:
    """Delegation tokens past their expiry or max timestamp, removed every
    delegation.token.expiry.check.interval.ms (by the controller in a cluster)."""
    while True:
        await asyncio.sleep(interval_ms / 1000)
        now_ms = int(time.time() * 1000)
        try:
            expired = [t.token_id for t in tokens.tokens().values() if t.expired(now_ms)]
            if not expired:
                continue
            await tokens.change([], expired)
        except CoordinatorError:
            continue  # a controller that does not lead the quorum: the leader removes them
        except Exception:
            log.exception("expired delegation tokens not removed")
        else:
            log.info("expired delegation tokens removed", token_ids=expired)
