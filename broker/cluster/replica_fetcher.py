"""Followers fetch from their leaders, as Kafka's replica fetchers do: one task per
leader node, one Fetch v18 (topics by id, this node's id in `replica_state`, and each
partition's high watermark as this node knows it, so the leader answers as soon as it
has a newer one) for every partition it follows there, records appended exactly as the
leader wrote them (offsets, leader epochs, producer ids), the producer state rebuilt
from them as on the leader.

Before fetching a partition for the first time under a leader (or after the leader
said the offset was out of range), the follower asks the leader where its own latest
leader epoch ends (OffsetForLeaderEpoch) and cuts its log there: records that only a
deposed leader wrote go, as Kafka's truncation does.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from odradek.broker.cluster.node_client import NodeClient, NodeUnreachable
from odradek.broker.dataplane.partition import control_type
from odradek.coordinator.cluster.shard import now_ms
from odradek.protocol.batch import iter_batches
from odradek.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from odradek.broker.cluster.node import Node
    from odradek.broker.cluster.replication import ReplicaManager
    from odradek.broker.dataplane.topics import Partition

log = structlog.get_logger("replication")

FETCH, OFFSET_FOR_LEADER_EPOCH = 1, 23
FETCH_VERSION = 18  # topics by id, and the follower's high watermark (KIP-1166)
RETRY_S = 0.1
PARTITION_MAX_BYTES = 1024 * 1024
MAX_BYTES = 16 * 1024 * 1024

Key = tuple[str, int]


@dataclass
class Followed:
    partition: Partition
    truncate_first: bool = True


class ReplicaFetchers:
    def __init__(self, broker: Node, manager: ReplicaManager) -> None:
        self.broker = broker
        self.manager = manager
        self._by_leader: dict[int, LeaderFetcher] = {}

    def add(self, partition: Partition, leader: int) -> None:
        fetcher = self._by_leader.get(leader)
        if fetcher is None:
            fetcher = self._by_leader[leader] = LeaderFetcher(self.broker, leader)
        fetcher.follow(partition)

    def remove(self, partition: Partition) -> None:
        for fetcher in self._by_leader.values():
            fetcher.forget(partition)

    async def stop(self) -> None:
        for fetcher in self._by_leader.values():
            await fetcher.stop()


class LeaderFetcher:
    def __init__(self, broker: Node, leader: int) -> None:
        self.broker = broker
        self.leader = leader
        self.partitions: dict[Key, Followed] = {}
        self._wake = asyncio.Event()
        self._client: NodeClient | None = None
        self._waiting: asyncio.Future[None] | None = None  # the fetch in flight
        self._task = asyncio.create_task(self._run(), name=f"replica-fetcher-{leader}")

    def follow(self, partition: Partition) -> None:
        self.partitions[_key(partition)] = Followed(partition)
        self._wake.set()
        if self._waiting is not None:  # a long poll without it: ask again at once
            self._waiting.cancel()

    def forget(self, partition: Partition) -> None:
        self.partitions.pop(_key(partition), None)

    async def stop(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        if self._client is not None:
            self._client.close()

    async def _run(self) -> None:
        while True:
            if not self.partitions:
                self._wake.clear()
                await self._wake.wait()
                continue
            try:
                client = self._connect()
                if client is None:
                    await asyncio.sleep(RETRY_S)
                    continue
                await self._truncate(client)
                fetching = self._waiting = asyncio.ensure_future(self._fetch(client))
                try:
                    await asyncio.wait({fetching})  # follow() may cut it short
                finally:
                    self._waiting = None
                    if not fetching.done():  # this task itself is cancelled
                        fetching.cancel()
                if not fetching.cancelled():
                    fetching.result()  # its error, if any
            except NodeUnreachable as exc:
                log.debug("leader unreachable", leader=self.leader, error=str(exc))
                await asyncio.sleep(RETRY_S)
            except Exception:
                log.exception("replica fetch failed", leader=self.leader)
                await asyncio.sleep(RETRY_S)

    def _connect(self) -> NodeClient | None:
        """A client for the leader's inter-broker endpoint, as its registration gives it."""
        member = self.broker.member
        if member is None:
            return None
        endpoint = member.endpoint_of(self.leader)
        if endpoint is None:
            return None
        host, port = endpoint
        if self._client is None or (self._client.host, self._client.port) != (host, port):
            if self._client is not None:
                self._client.close()
            wait_s = self.broker.config.replica_fetch_wait_max_ms / 1000
            self._client = NodeClient(host, port, wait_s + 5.0)
        return self._client

    # -- truncation ---------------------------------------------------------------------

    async def _truncate(self, client: NodeClient) -> None:
        pending = [f for f in self.partitions.values() if f.truncate_first]
        if not pending:
            return
        request = {
            "replica_id": self.broker.config.node_id,
            "topics": _by_topic(
                (
                    f.partition,
                    {
                        "partition": f.partition.index,
                        "current_leader_epoch": f.partition.leader_epoch,
                        "leader_epoch": f.partition.log.latest_epoch,
                    },
                )
                for f in pending
            ),
        }
        answer = await client.call(OFFSET_FOR_LEADER_EPOCH, 4, request)
        for topic in answer.topics:
            for result in topic.partitions:
                found = self.partitions.get((topic.topic, result.partition))
                if found is None or result.error_code != ErrorCode.none:
                    continue
                self._cut(found.partition, result.leader_epoch, result.end_offset)
                found.truncate_first = False

    def _cut(self, partition: Partition, leader_epoch: int, end_offset: int) -> None:
        plog = partition.log
        asked = plog.latest_epoch
        if asked < 0:
            return  # nothing written under any leader: nothing can diverge
        if leader_epoch < 0 or end_offset < 0:
            target = min(partition.high_watermark, plog.log_end_offset)
        elif leader_epoch != asked:
            # The leader never had our latest epoch: we agree up to where our copy of
            # the leader's epoch ends.
            target = min(end_offset, plog.end_offset_for_epoch(leader_epoch)[1])
        else:
            target = end_offset
        if target < plog.log_end_offset:
            before = plog.log_end_offset
            after = plog.truncate_to(max(target, 0))
            partition.reload_producer_state()
            _lower_high_watermark(partition, after)
            log.warning(
                "truncated a diverged log",
                topic=partition.topic.name,
                partition=partition.index,
                log_end_offset_before=before,
                log_end_offset=after,
            )

    # -- fetching -----------------------------------------------------------------------

    async def _fetch(self, client: NodeClient) -> None:
        replicas = self.broker.replicas
        paused = replicas.fetching_paused if replicas is not None else _never
        quota = replicas.throttles.follower if replicas is not None else None
        held_back = quota is not None and quota.exceeded(now_ms())
        followed = [
            f
            for f in self.partitions.values()
            if not f.truncate_first
            and not paused(f.partition.topic.name, f.partition.index)
            and not (
                held_back and replicas is not None and replicas.follower_throttled(f.partition)
            )
        ]
        if not followed:
            await asyncio.sleep(RETRY_S)  # (a fault pauses every partition fetched here)
            return
        topics = _by_topic_id(
            (item.partition, _fetch_position(item.partition)) for item in followed
        )
        names = {item.partition.topic.topic_id: item.partition.topic.name for item in followed}
        request = {
            "replica_state": {"replica_id": self.broker.config.node_id, "replica_epoch": -1},
            "max_wait": self.broker.config.replica_fetch_wait_max_ms,
            "min_bytes": self.broker.config.replica_fetch_min_bytes,
            "max_bytes": MAX_BYTES,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": topics,
        }
        answer = await client.call(FETCH, FETCH_VERSION, request)
        backoff = False
        for topic in answer.responses:
            name = names.get(topic.topic_id)
            for result in topic.partitions:
                taken = self.partitions.get((name, result.partition_index)) if name else None
                if taken is not None:
                    backoff |= not self._take(taken, result)
        if backoff:
            await asyncio.sleep(RETRY_S)

    def _take(self, item: Followed, result: Any) -> bool:
        """Append what the leader sent; False when the leader could not serve it."""
        partition = item.partition
        code = result.error_code
        plog = partition.log
        if code == ErrorCode.offset_out_of_range:
            if plog.log_end_offset < result.log_start_offset:
                plog.start_over_at(result.log_start_offset)
                partition.reload_producer_state()
            else:
                item.truncate_first = True
            return True
        if code != ErrorCode.none:
            return False  # not the leader (yet, or any more): the view will say
        records = memoryview(result.records or b"")  # a view into the answer, not a copy
        if records:
            headers = [h for h in iter_batches(records) if h.base_offset >= plog.log_end_offset]
            if headers:
                first = headers[0].position
                data = records[first : headers[-1].position + headers[-1].size]
                headers = [h._replace(position=h.position - first) for h in headers]
                plog.append_as_is(data, headers, gaps=True)
                for header in headers:
                    if header.producer_id >= 0:
                        commit = None
                        if header.is_control:
                            batch = bytes(data[header.position : header.position + header.size])
                            commit = control_type(batch)
                        partition.producers.record(header, commit)
                self.broker.appended_bytes += len(data)
                replicas = self.broker.replicas
                if replicas is not None and replicas.follower_throttled(partition):
                    replicas.throttles.follower.record(len(data), now_ms())
        if result.log_start_offset > plog.log_start_offset:
            plog.delete_records_before(min(result.log_start_offset, plog.log_end_offset))
        replica = partition.replication
        if replica is not None:
            replica.high_watermark = min(result.high_watermark, plog.log_end_offset)
        return True


def _fetch_position(partition: Partition) -> dict[str, Any]:
    return {
        "partition": partition.index,
        "current_leader_epoch": partition.leader_epoch,
        "fetch_offset": partition.log.log_end_offset,
        "last_fetched_epoch": -1,
        "log_start_offset": partition.log.log_start_offset,
        "partition_max_bytes": PARTITION_MAX_BYTES,
        "high_watermark": partition.high_watermark,  # the leader answers when it has a newer one
    }


def _by_topic(entries: Iterable[tuple[Partition, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per-partition request entries grouped under their topics' names."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for partition, entry in entries:
        topics.setdefault(partition.topic.name, []).append(entry)
    return [{"topic": name, "partitions": parts} for name, parts in topics.items()]


def _by_topic_id(entries: Iterable[tuple[Partition, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per-partition request entries grouped under their topics' ids."""
    topics: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for partition, entry in entries:
        topics.setdefault(partition.topic.topic_id, []).append(entry)
    return [{"topic_id": topic_id, "partitions": parts} for topic_id, parts in topics.items()]


def _lower_high_watermark(partition: Partition, end: int) -> None:
    replica = partition.replication
    if replica is not None and replica.high_watermark > end:
        replica.high_watermark = end


def _never(topic: str, partition: int) -> bool:
    return False


def _key(partition: Partition) -> Key:
    return partition.topic.name, partition.index
