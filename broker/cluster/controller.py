"""The controller role: the cluster's metadata in `__cluster_metadata`, kept by one
shard (coordinator/cluster/shard.py) on the coordinator runtime, and what the
controller listener answers from it.

Brokers register and heartbeat (BrokerRegistration, BrokerHeartbeat), read the
metadata log with Fetch as they would any partition and replay it into a view of
their own; DescribeQuorum shows this controller as the leader of its one-voter quorum
and the brokers as observers, with the metadata offset each last reported.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from odradek.broker.cluster.controller_documents import (
    ControllerAcls,
    ControllerCredentials,
    ControllerFeatures,
    ControllerQuotas,
    ControllerTokens,
)
from odradek.broker.settings.cluster_config import ClusterConfig
from odradek.coordinator.cluster.shard import ClusterSettings, ClusterShard
from odradek.coordinator.runtime import CoordinatorRuntime, Operation

if TYPE_CHECKING:
    from odradek.broker.cluster.node import Node

METADATA_TOPIC = "__cluster_metadata"
# Written through the page cache like every other log here: it survives kill -9; a
# power cut may lose the last decisions (Kafka's Raft log fsyncs each; that costs
# ~20 ms a write on this kind of disk, twice in a node's start).
METADATA_TOPIC_CONFIGS = {"cleanup.policy": "compact"}


@dataclass
class Observer:
    """A broker following the metadata log, as DescribeQuorum shows it."""

    log_end_offset: int = -1
    last_seen_ms: int = -1


class Controller:
    def __init__(self, broker: Node, cluster: ClusterConfig) -> None:
        self.cluster = cluster
        self.node_id = cluster.node_id
        settings = ClusterSettings(
            cluster_id=broker.config.cluster_id,
            broker_session_timeout_ms=broker.config.broker_session_timeout_ms,
        )
        self.runtime = CoordinatorRuntime(
            METADATA_TOPIC,
            1,
            lambda runtime: ClusterShard(runtime, settings),
            lambda name, count: broker.internal_topic(name, count, METADATA_TOPIC_CONFIGS),
            broker.flush_partition,
        )
        self.observers: dict[int, Observer] = {}
        self.acls = ControllerAcls(self)
        self.credentials = ControllerCredentials(self)
        self.features = ControllerFeatures(self)
        self.quotas = ControllerQuotas(self)
        self.tokens = ControllerTokens(self, broker.config.delegation_token_secret_key)

    async def start(self) -> None:
        await self.runtime.ensure_started()
        await self.runtime.shard_at(0).wait_loaded()

    @property
    def shard(self) -> ClusterShard:
        shard: ClusterShard = self.runtime.shard_at(0).shard
        return shard

    async def run(self, operation: Operation) -> Any:
        return await self.runtime.shard_at(0).submit(operation)

    def high_watermark(self) -> int:
        return int(self.runtime.shard_at(0).partition.log.log_end_offset)

    def observed(self, node_id: int, offset: int) -> None:
        observer = self.observers.setdefault(node_id, Observer())
        observer.log_end_offset = offset + 1
        observer.last_seen_ms = int(time.time() * 1000)

    async def stop(self) -> None:
        await self.runtime.stop()
