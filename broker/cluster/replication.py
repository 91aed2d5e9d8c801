"""Replicas of partitions in a cluster of several nodes.

The cluster's metadata (this node's view of `__cluster_metadata`) says, for every
partition, its replicas, its leader with the leader epoch, and its in-sync replicas
(ISR). `ReplicaManager.apply` makes this node follow it:

- topics appear, grow, change configs and go as the view says; this node keeps a log
  only for the partitions it has a replica of;
- a partition this node leads takes writes at its leader epoch, and tracks what each
  follower has (their fetches say so). Its high watermark is the log end every ISR
  member has reached: consumers read below it, and `acks=all` answers once it has
  passed the records. A follower that has not caught up for `replica.lag.time.max.ms`
  leaves the ISR, one that has caught up joins it again (AlterPartition, through the
  controller, which checks the leader and partition epochs);
- a partition this node follows is fetched from its leader (broker/cluster/replica_fetcher.py),
  after cutting its log back to where it agrees with the leader's.

A node that stops leading a partition (a new epoch elsewhere) answers the produce
requests still waiting on it with NOT_LEADER_OR_FOLLOWER.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog

from odradek.broker.cluster import high_watermarks, throttles
from odradek.broker.cluster.controller import METADATA_TOPIC
from odradek.broker.cluster.node_client import NodeUnreachable
from odradek.broker.cluster.throttles import Throttles
from odradek.broker.cluster.waiters import HighWatermarkWaiters
from odradek.broker.slices import Slices
from odradek.coordinator.cluster import records as rec
from odradek.coordinator.cluster.shard import ClusterShard, now_ms
from odradek.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from odradek.broker.cluster.node import Node
    from odradek.broker.cluster.replica_fetcher import ReplicaFetchers
    from odradek.broker.dataplane.topics import Partition

log = structlog.get_logger("replication")

ALTER_PARTITION = 56
ISR_CHANGE_RETRY_S = 0.2


class NotLeader(Exception):
    """The partition's leadership moved while a write waited for its replicas."""


@dataclass
class Follower:
    """What the leader knows of one follower, from its fetches."""

    log_end_offset: int = -1
    caught_up_ms: int = field(default_factory=now_ms)
    last_fetch_ms: int = 0
    leader_end_at_last_fetch: int = 0


class PartitionReplica:
    """This node's replica of one partition: its place in the partition's metadata,
    and, while it leads, its followers' progress and the high watermark."""

    def __init__(self, node_id: int, value: rec.PartitionValue, high_watermark: int) -> None:
        self.node_id = node_id
        self.leader_id = value.leader
        self.leader_epoch = value.leader_epoch
        self.partition_epoch = value.partition_epoch
        self.replicas = value.replicas
        self.isr = value.isr
        self.high_watermark = high_watermark
        self.followers: dict[int, Follower] = {}
        self.isr_change_pending = False
        # while an ISR change may have been made but its outcome is not known here yet,
        # the high watermark waits for the old and the new members alike (Kafka's
        # "maximal ISR", KIP-497): a replica the controller may already count as in
        # sync has every record acknowledged
        self.maximal_isr: tuple[int, ...] = ()
        self._waiters = HighWatermarkWaiters()

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.node_id

    def take(self, value: rec.PartitionValue) -> None:
        if value.partition_epoch != self.partition_epoch:
            self.maximal_isr = ()  # the metadata says how the change ended
        self.leader_id = value.leader
        self.leader_epoch = value.leader_epoch
        self.partition_epoch = value.partition_epoch
        self.replicas = value.replicas
        self.isr = value.isr

    def wait_for(self, offset: int) -> asyncio.Future[None]:
        """Completes once the high watermark reaches `offset`."""
        return self._waiters.wait_for(offset, self.high_watermark)

    def advance(self, high_watermark: int) -> bool:
        if high_watermark <= self.high_watermark:
            return False
        self.high_watermark = high_watermark
        self._waiters.reached(high_watermark)
        return True

    def update_high_watermark(self, log_end_offset: int) -> bool:
        """The leader's high watermark: the log end every ISR member has reached."""
        end = log_end_offset
        for node in {*self.isr, *self.maximal_isr}:
            if node != self.node_id:
                follower = self.followers.get(node)
                end = min(end, follower.log_end_offset if follower is not None else -1)
        return self.advance(end)

    def deposed(self) -> None:
        self._waiters.fail(NotLeader())


class ReplicaManager:
    def __init__(self, broker: Node, node_id: int) -> None:
        self.broker = broker
        self.node_id = node_id
        self.fetchers: ReplicaFetchers | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._isr_check: asyncio.Task[None] | None = None
        self._checkpointing: asyncio.Task[None] | None = None
        # the high watermarks of the last run, for replicas that start again
        self._checkpoint = high_watermarks.read(broker.config.data_dir)
        self._written = dict(self._checkpoint)
        # does a test's fault stop this node fetching (topic, partition)? (broker/faults/)
        self.fetching_paused: Callable[[str, int], bool] = lambda topic, partition: False
        config = broker.config
        self.throttles = Throttles(
            node_id,
            config.replication_quota_window_num,
            config.replication_quota_window_size_seconds,
        )

    def start(self) -> None:
        from odradek.broker.cluster.replica_fetcher import ReplicaFetchers

        self.fetchers = ReplicaFetchers(self.broker, self)
        self._isr_check = asyncio.create_task(self._check_isr(), name="isr-check")
        self._checkpointing = asyncio.create_task(self._checkpoints(), name="hw-checkpoint")

    async def stop(self) -> None:
        for task in (self._isr_check, self._checkpointing):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self.write_checkpoint()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.fetchers is not None:
            await self.fetchers.stop()

    # -- following the view -----------------------------------------------------------

    async def apply(self, view: ClusterShard) -> None:
        """Make the local topics and replicas what the cluster's metadata says: those
        of the topics that changed since the last time (all, the first time), a slice
        of the event loop at a time (a new topic's logs too: registry.add_in_slices)."""
        changed = view.take_changes()
        names = list(view.topics) if changed is None else sorted(changed)
        slices = Slices()
        for done, name in enumerate(names):
            await slices.pause_if_due()
            try:
                await self._apply_topic(view, name)
            except BaseException:  # the next apply does what is left
                view.give_back_changes(None if changed is None else set(names[done:]))
                raise
        if changed is None:
            for topic in list(self.broker.topics):
                if topic.name not in view.topics and topic.name != METADATA_TOPIC:
                    self.broker.remove_topic(topic.name)

    async def _apply_topic(self, view: ClusterShard, name: str) -> None:
        registry = self.broker.topics
        state = view.topics.get(name)
        if state is None:  # gone
            if registry.get(name) is not None and name != METADATA_TOPIC:
                self.broker.remove_topic(name)
            return
        if not state.partitions:
            return
        count = max(state.partitions) + 1
        mine = {i for i, p in state.partitions.items() if self.node_id in p.replicas}
        topic = registry.get(name)
        if topic is not None and topic.topic_id != state.topic_id:
            self.broker.remove_topic(name)  # deleted and created again meanwhile
            topic = None
        if topic is None:
            topic = await registry.add_in_slices(name, state.topic_id, count, state.configs, mine)
            log.info("topic added", topic=name, partitions=count, replicas_here=sorted(mine))
        else:
            if topic.configs != state.configs:
                registry.set_configs(name, state.configs)
            if len(topic.partitions) < count:
                registry.add_partitions(name, count, mine)
            for partition in list(topic.partitions):
                if partition.index in mine:
                    registry.host(partition)
                elif partition.hosted and partition.index in state.partitions:
                    self._drop(partition)
        for index, value in state.partitions.items():
            self._follow(topic.partitions[index], value)

    def _drop(self, partition: Partition) -> None:
        """This node's replica was reassigned away: it stops and deletes its copy."""
        if self.fetchers is not None:
            self.fetchers.remove(partition)
        replica = partition.replication
        if isinstance(replica, PartitionReplica):
            replica.deposed()
            replica.followers = {}
            if replica.is_leader:
                self.broker.coordinator_moved(partition, leads=False)
        self.broker.topics.unhost(partition)
        log.info("replica removed", topic=partition.topic.name, partition=partition.index)

    def _follow(self, partition: Partition, value: rec.PartitionValue) -> None:
        replica = partition.replication
        if not isinstance(replica, PartitionReplica):
            start = -1
            if partition.hosted:
                plog = partition.log
                known = self._checkpoint.get((partition.topic.name, partition.index), -1)
                start = min(max(known, plog.log_start_offset), plog.log_end_offset)
            replica = PartitionReplica(self.node_id, value, start)
            partition.replication = replica
            changed = True
        else:
            if value.partition_epoch < replica.partition_epoch:
                return  # an AlterPartition answer already told this node more
            changed = (value.leader, value.leader_epoch) != (
                replica.leader_id,
                replica.leader_epoch,
            )
            replica.take(value)
        if not partition.hosted:
            return
        if changed:
            if replica.is_leader:
                self._lead(partition, replica)
            else:
                self._follow_leader(partition, replica)
        elif replica.is_leader:
            _track_followers(replica)
            self.advance_high_watermark(partition)

    def _lead(self, partition: Partition, replica: PartitionReplica) -> None:
        if self.fetchers is not None:
            self.fetchers.remove(partition)
        now = now_ms()
        replica.followers = {
            node: Follower(caught_up_ms=now) for node in replica.replicas if node != self.node_id
        }
        log.info(
            "leading",
            topic=partition.topic.name,
            partition=partition.index,
            leader_epoch=replica.leader_epoch,
            log_end_offset=partition.log.log_end_offset,
        )
        self.advance_high_watermark(partition)
        partition.data_arrived()
        self.broker.coordinator_moved(partition, leads=True)

    def _follow_leader(self, partition: Partition, replica: PartitionReplica) -> None:
        replica.followers = {}
        replica.deposed()
        partition.data_arrived()  # parked fetches look again, and see the news
        self.broker.coordinator_moved(partition, leads=False)
        if self.fetchers is not None:
            self.fetchers.remove(partition)
            # a replica whose directory failed fetches nothing (it would rejoin the ISR)
            if replica.leader_id != rec.NO_LEADER and not partition.offline:
                self.fetchers.add(partition, replica.leader_id)

    # -- the high watermark checkpoint ------------------------------------------------

    async def _checkpoints(self) -> None:
        while True:
            await asyncio.sleep(high_watermarks.INTERVAL_S)
            current = self._high_watermarks()
            if current == self._written:
                continue
            try:  # (thousands of lines, written and synced: off the event loop)
                await asyncio.to_thread(high_watermarks.write, self.broker.config.data_dir, current)
                self._written = current
            except OSError as exc:
                log.warning("high watermark checkpoint not written", error=str(exc))

    def write_checkpoint(self) -> None:
        """Every hosted replica's high watermark, if any moved since the last write."""
        current = self._high_watermarks()
        if current != self._written:
            high_watermarks.write(self.broker.config.data_dir, current)
            self._written = current

    def _high_watermarks(self) -> dict[tuple[str, int], int]:
        return {
            (p.topic.name, p.index): p.replication.high_watermark
            for p in self.broker.topics.hosted_partitions()
            if isinstance(p.replication, PartitionReplica) and p.replication.high_watermark >= 0
        }

    # -- leading ----------------------------------------------------------------------

    def follower_fetched(self, partition: Partition, node: int, fetch_offset: int) -> None:
        """A follower asked for records from `fetch_offset`: it has everything below."""
        replica = partition.replication
        if not isinstance(replica, PartitionReplica) or not replica.is_leader:
            return
        follower = replica.followers.get(node)
        if follower is None:
            return
        now = now_ms()
        end = partition.log.log_end_offset
        if fetch_offset >= end:
            follower.caught_up_ms = now
        elif fetch_offset >= follower.leader_end_at_last_fetch:
            follower.caught_up_ms = max(follower.caught_up_ms, follower.last_fetch_ms)
        follower.last_fetch_ms, follower.leader_end_at_last_fetch = now, end
        follower.log_end_offset = fetch_offset
        if node not in replica.isr and self._may_join_isr(partition, replica, node, fetch_offset):
            self._change_isr(partition, replica, (*replica.isr, node))
        self.advance_high_watermark(partition)

    def leader_holds_back(self, partition: Partition, node: int) -> bool:
        """Is a follower's fetch of this partition answered without records (a throttled
        replica out of sync, while the leader's replication rate is over its limit)?"""
        return self._leader_throttled(partition, node) and self.throttles.leader.exceeded(now_ms())

    def leader_sent(self, partition: Partition, node: int, size: int) -> None:
        if size and self._leader_throttled(partition, node):
            self.throttles.leader.record(size, now_ms())

    def _leader_throttled(self, partition: Partition, node: int) -> bool:
        replica = partition.replication
        if not isinstance(replica, PartitionReplica) or node in replica.isr:
            return False
        configs = partition.topic.configs
        return throttles.throttled(
            configs, throttles.LEADER_REPLICAS, partition.index, self.node_id
        )

    def follower_throttled(self, partition: Partition) -> bool:
        """Is this node's replica of the partition a throttled one catching up?"""
        replica = partition.replication
        if not isinstance(replica, PartitionReplica) or self.node_id in replica.isr:
            return False
        configs = partition.topic.configs
        return throttles.throttled(
            configs, throttles.FOLLOWER_REPLICAS, partition.index, self.node_id
        )

    def _may_join_isr(
        self, partition: Partition, replica: PartitionReplica, node: int, offset: int
    ) -> bool:
        """Caught up to the high watermark and to the start of this leader's epoch, and
        not fenced: a fenced broker (cut off from the controllers, say) may still fetch,
        but the controller refuses it the ISR, and would be asked again at every fetch."""
        epochs = partition.log.leader_epochs
        epoch_start = next((o for e, o in epochs if e == replica.leader_epoch), 0)
        if offset < replica.high_watermark or offset < epoch_start:
            return False
        member = self.broker.member
        registration = member.view.brokers.get(node) if member is not None else None
        return registration is not None and not registration.value.fenced

    def advance_high_watermark(self, partition: Partition) -> None:
        replica = partition.replication
        if not isinstance(replica, PartitionReplica) or not replica.is_leader:
            return
        if replica.update_high_watermark(partition.log.log_end_offset):
            partition.high_watermark_moved()

    async def _check_isr(self) -> None:
        """Followers that fell behind for replica.lag.time.max.ms leave the ISR."""
        lag_ms = self.broker.config.replica_lag_time_max_ms
        while True:
            await asyncio.sleep(max(lag_ms / 2000, 0.05))
            now = now_ms()
            for partition in self.broker.topics.hosted_partitions():
                replica = partition.replication
                if not isinstance(replica, PartitionReplica) or not replica.is_leader:
                    continue
                end = partition.log.log_end_offset
                lagging = {
                    node
                    for node in replica.isr
                    if node != self.node_id
                    and (follower := replica.followers.get(node)) is not None
                    and follower.log_end_offset < end
                    and now - follower.caught_up_ms > lag_ms
                }
                if lagging:
                    isr = tuple(n for n in replica.isr if n not in lagging)
                    log.warning(
                        "followers out of sync",
                        topic=partition.topic.name,
                        partition=partition.index,
                        leaving=sorted(lagging),
                    )
                    self._change_isr(partition, replica, isr)

    def _change_isr(
        self, partition: Partition, replica: PartitionReplica, isr: tuple[int, ...]
    ) -> None:
        if replica.isr_change_pending:
            return
        replica.isr_change_pending = True
        replica.maximal_isr = (*replica.isr, *(n for n in isr if n not in replica.isr))
        task = asyncio.create_task(self._alter_partition(partition, replica, isr))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _alter_partition(
        self, partition: Partition, replica: PartitionReplica, isr: tuple[int, ...]
    ) -> None:
        member = self.broker.member
        assert member is not None
        request = {
            "broker_id": self.node_id,
            "broker_epoch": member.broker_epoch,
            "topics": [
                {
                    "topic_id": partition.topic.topic_id,
                    "partitions": [
                        {
                            "partition_index": partition.index,
                            "leader_epoch": replica.leader_epoch,
                            "new_isr": list(isr),
                            "leader_recovery_state": 0,
                            "partition_epoch": replica.partition_epoch,
                        }
                    ],
                }
            ],
        }
        epoch = replica.partition_epoch
        try:
            while True:
                try:
                    answer = await member.ask_controller(ALTER_PARTITION, 2, request)
                    break
                except NodeUnreachable as exc:  # it may have been made: asked again
                    log.warning("ISR change unanswered: asking again", error=str(exc))
                    await asyncio.sleep(ISR_CHANGE_RETRY_S)
                    if not replica.is_leader or replica.partition_epoch != epoch:
                        return  # the metadata moved on meanwhile
        finally:
            replica.isr_change_pending = False
        code = answer.error_code
        if code == ErrorCode.none and answer.topics:
            result: Any = answer.topics[0].partitions[0]
            code = result.error_code
        if code != ErrorCode.none:
            if code not in (ErrorCode.invalid_update_version, ErrorCode.fenced_leader_epoch):
                replica.maximal_isr = ()  # not made; else the metadata will tell
            log.info(
                "ISR change refused",
                topic=partition.topic.name,
                partition=partition.index,
                reason=ErrorCode(code).name,
            )
            return
        replica.maximal_isr = ()
        if result.partition_epoch > replica.partition_epoch:
            replica.isr = tuple(result.isr)
            replica.partition_epoch = result.partition_epoch
            log.info(
                "ISR changed",
                topic=partition.topic.name,
                partition=partition.index,
                isr=list(replica.isr),
            )
        self.advance_high_watermark(partition)


def _track_followers(replica: PartitionReplica) -> None:
    """The leader follows the progress of the replicas a reassignment adds, and forgets
    those it removes."""
    wanted = {node for node in replica.replicas if node != replica.node_id}
    for node in wanted - replica.followers.keys():
        replica.followers[node] = Follower()
    for node in replica.followers.keys() - wanted:
        del replica.followers[node]
