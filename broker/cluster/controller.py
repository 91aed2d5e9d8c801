"""The controller role: the cluster's metadata in `__cluster_metadata`, a log the
voters of `controller.quorum.voters` keep together (quorum/quorum.py). The quorum's
leader runs the metadata shard (coordinator/cluster/shard.py) on the coordinator
runtime and answers the controller APIs; the other controllers answer NOT_CONTROLLER
and follow its log, ready to take over.

Brokers register and heartbeat (BrokerRegistration, BrokerHeartbeat) with the leader,
read the metadata log with Fetch and replay it into a view of their own;
DescribeQuorum shows the voters and the brokers as observers, with the metadata
offset each last reported.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from odradek.broker.cluster.controller_documents import (
    ControllerAcls,
    ControllerCredentials,
    ControllerFeatures,
    ControllerQuotas,
    ControllerTokens,
    bootstrap_features,
)
from odradek.broker.cluster.follower_view import FollowerView
from odradek.broker.cluster.metadata_documents import MetadataDocuments
from odradek.broker.cluster.metadata_snapshots import MetadataSnapshots, load_latest
from odradek.broker.cluster.node_client import NodeUnreachable
from odradek.broker.cluster.quorum import own_entry
from odradek.broker.cluster.quorum.first_voters import listed_directory_id, voter_history
from odradek.broker.cluster.quorum.quorum import Quorum
from odradek.broker.cluster.quorum.requests import METADATA_TOPIC
from odradek.broker.cluster.quorum.voter_changes import VoterChanges
from odradek.broker.cluster.quorum.voters import NO_DIRECTORY, VoterHistory, VoterNode
from odradek.broker.settings.cluster_config import ClusterConfig
from odradek.broker.settings.listeners import SECURITY_PROTOCOLS
from odradek.coordinator.cluster import controllers
from odradek.coordinator.cluster.records import ControllerValue, Endpoint
from odradek.coordinator.cluster.shard import ClusterSettings, ClusterShard
from odradek.coordinator.runtime import (
    CoordinatorError,
    CoordinatorRuntime,
    Operation,
    ShardRuntime,
)
from odradek.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from odradek.broker.cluster.node import Node
    from odradek.broker.dataplane.topics import Partition

# Written through the page cache like every other log here: it survives kill -9; a
# power cut may lose the last decisions (Kafka's Raft log fsyncs each; that costs
# ~20 ms a write on this kind of disk, twice in a node's start). Its records are
# Kafka's, without keys: nothing to compact them by, and every one is kept.
log = structlog.get_logger("controller")
REGISTER_EVERY_S = 0.5
METADATA_TOPIC_CONFIGS = {"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"}


@dataclass
class Observer:
    """A broker following the metadata log, as DescribeQuorum shows it."""

    log_end_offset: int = -1
    last_seen_ms: int = -1
    caught_up_ms: int = -1  # when it last had all the leader's committed records


class Controller:
    def __init__(self, broker: Node, cluster: ClusterConfig) -> None:
        self.cluster = cluster
        self.node_id = cluster.node_id
        settings = ClusterSettings(
            cluster_id=broker.config.cluster_id,
            broker_session_timeout_ms=broker.config.broker_session_timeout_ms,
        )
        self._broker = broker
        self.runtime = CoordinatorRuntime(
            METADATA_TOPIC,
            1,
            lambda runtime: self._new_shard(runtime, settings),
            lambda name, count: broker.internal_topic(name, count, METADATA_TOPIC_CONFIGS),
            broker.flush_partition,
        )
        self.observers: dict[int, Observer] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.incarnation_id = uuid.uuid4()
        self._bootstrapped = asyncio.Event()  # operations wait for a new leader's first records
        self._bootstrapped.set()
        self.quorum: Quorum | None = None
        self.voter_changes: VoterChanges | None = None
        self.follower_view: FollowerView | None = None  # while it does not lead
        self.snapshots: MetadataSnapshots | None = None
        self._partition: Partition | None = None
        self.acls = ControllerAcls(self)
        self.credentials = ControllerCredentials(self)
        self.features = ControllerFeatures(self)
        self.quotas = ControllerQuotas(self)
        self.tokens = ControllerTokens(self, broker.config.delegation_token_secret_key)

    async def start(self) -> None:
        """Join the quorum; a quorum of one leads at once, and this returns once its
        shard has loaded."""
        partitions = await self._broker.internal_topic(METADATA_TOPIC, 1, METADATA_TOPIC_CONFIGS)
        partition = self._partition = partitions[0]
        if partition.topic.configs != METADATA_TOPIC_CONFIGS:  # compacted, before the format
            self._broker.topics.set_configs(METADATA_TOPIC, METADATA_TOPIC_CONFIGS)
        me = self.own_voter(partition)
        history = self._voter_history(partition, me)
        cluster_id = self._broker.config.cluster_id
        if self._broker.config.controller_quorum_auto_join_enable:
            self._spawn(own_entry.auto_join(lambda: self.quorum, cluster_id, me))
        self._spawn(own_entry.tell_each_leader(lambda: self.quorum, cluster_id, me))
        self.snapshots = MetadataSnapshots(self, partition, self._broker.config)
        self._spawn(self.snapshots.run())
        self._spawn(self._register_self())
        self.quorum = Quorum(
            self.node_id,
            history,
            partition,
            self._broker.config,
            on_lead=self._lead,
            on_resign=self._resign,
            listener=self._listener_name(),
            bootstrap_servers=self.cluster.bootstrap_servers,
        )
        partition.replication = self.quorum
        self.voter_changes = VoterChanges(self.quorum, me)
        self.quorum.start()
        if not self.cluster.is_broker:  # (a broker's member keeps a view already)
            view = FollowerView(self._broker, partition, self._broker.config.cluster_id)
            self.follower_view = view
            self._spawn(view.run(self.quorum))
        if history.voters.ids() == [self.node_id]:
            while not self.quorum.is_leader:
                await asyncio.sleep(0.001)
            await self.runtime.shard_at(0).wait_loaded()

    def _listener_name(self) -> str:
        names = self.cluster.controller_listener_names
        return names[0] if names else "CONTROLLER"

    def own_voter(self, partition: Partition) -> VoterNode:
        """This controller as a voter: its id, its metadata directory's id and its
        controller endpoints."""
        log_dirs = self._broker.topics.log_dirs
        log_dir = log_dirs.holding(Path(partition.log.directory))
        initial = self._broker.config.initial_controllers
        listed = listed_directory_id(initial, self.node_id, self._listener_name())
        if log_dir is not None and listed is not None and partition.log.log_end_offset == 0:
            log_dirs.assign_directory_id(log_dir, listed)  # as kafka-storage format does
        directory_id = log_dir.directory_id if log_dir is not None else NO_DIRECTORY
        endpoints = tuple(
            (lis.name, lis.advertised_host, lis.advertised_port)
            for lis in self._broker.listeners
            if lis.controller
        )
        return VoterNode(self.node_id, directory_id, endpoints)

    def _voter_history(self, partition: Partition, me: VoterNode) -> VoterHistory:
        return voter_history(
            static_voters={v.node_id: (v.host, v.port) for v in self.cluster.voters},
            listener=self._listener_name(),
            me=me,
            bootstrap_servers=self.cluster.bootstrap_servers,
            initial=self._broker.config.initial_controllers,
            log=partition.log,
        )

    def _lead(self) -> None:
        assert self._partition is not None
        self.runtime.lead(0, self._partition)
        self._bootstrapped = asyncio.Event()
        self._spawn(self._bootstrap())

    async def _register_self(self) -> None:
        """Register this controller with the leader of every new epoch, as Kafka's
        controllers do (ControllerRegistration; the leader, with itself)."""
        registered_epoch = -1
        value = ControllerValue(
            self.incarnation_id,
            tuple(
                Endpoint(lis.name, lis.advertised_host, lis.advertised_port, lis.security_protocol)
                for lis in self._broker.listeners
                if lis.controller
            ),
        )
        register = partial(controllers.register, node_id=self.node_id, value=value)
        while True:
            await asyncio.sleep(REGISTER_EVERY_S)
            quorum = self.quorum
            if quorum is None or quorum.leader_id < 0 or quorum.leader_epoch == registered_epoch:
                continue
            epoch = quorum.leader_epoch
            try:
                if quorum.is_leader:
                    if not self.is_active:
                        continue
                    await self.run(register)
                else:
                    request = registration_request(self.node_id, value)
                    answer = await quorum.peers.client(quorum.leader_id).call(70, 0, request)
                    if answer.error_code != ErrorCode.none:
                        continue
                registered_epoch = epoch
            except (CoordinatorError, NodeUnreachable):
                continue

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _new_shard(self, runtime: ShardRuntime, settings: ClusterSettings) -> ClusterShard:
        """The controller's shard, from the snapshot the log starts after, if any."""
        shard = ClusterShard(runtime, settings, MetadataDocuments())
        if self._partition is not None:
            plog = self._partition.log
            load_latest(shard, Path(plog.directory), plog.log_start_offset)
        return shard

    async def _bootstrap(self) -> None:
        """A new cluster's first records, as Kafka's controller writes them from its
        bootstrap: the finalized feature levels, metadata.version among them."""
        try:
            shard = self.runtime.shard_at(0)
            await shard.wait_loaded()
            await shard.submit(bootstrap_features)
        except CoordinatorError:
            pass  # no longer leading: the next leader writes them
        finally:
            self._bootstrapped.set()

    def _resign(self) -> None:
        self.runtime.resign(0)
        self.observers.clear()

    @property
    def is_active(self) -> bool:
        """This controller leads the quorum and its shard has loaded."""
        shard = self.runtime.shards.get(0)
        return (
            self.quorum is not None and self.quorum.is_leader and shard is not None and shard.loaded
        )

    def metadata_view(self) -> ClusterShard | None:
        """The cluster's metadata as this controller has it: its shard while it leads,
        else what it follows (None on a node that is a broker too: its member's view)."""
        if self.is_active:
            return self.shard
        return None if self.follower_view is None else self.follower_view.view

    @property
    def shard(self) -> ClusterShard:
        shard: ClusterShard = self.runtime.shard_at(0).shard
        return shard

    async def run(self, operation: Operation) -> Any:
        await self._bootstrapped.wait()
        return await self.runtime.shard_at(0).submit(operation)

    def high_watermark(self) -> int:
        return 0 if self.quorum is None else self.quorum.high_watermark

    def observed(self, node_id: int, offset: int) -> None:
        """`node_id` (a broker, or a controller that is not a voter) has the metadata
        log up to `offset`."""
        observer = self.observers.setdefault(node_id, Observer())
        observer.log_end_offset = offset + 1
        observer.last_seen_ms = int(time.time() * 1000)
        if observer.log_end_offset >= self.high_watermark():
            observer.caught_up_ms = observer.last_seen_ms

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self.quorum is not None:
            await self.quorum.stop()
        await self.runtime.stop()


def registration_request(node_id: int, value: ControllerValue) -> dict[str, Any]:
    return {
        "controller_id": node_id,
        "incarnation_id": value.incarnation_id,
        "zk_migration_ready": False,
        "listeners": [
            {
                "name": e.listener,
                "host": e.host,
                "port": e.port,
                "security_protocol": SECURITY_PROTOCOLS.index(e.security_protocol),
            }
            for e in value.endpoints
        ],
        "features": [],
    }
