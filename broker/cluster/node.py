"""What the cluster roles need of the broker they run in (server.py's Broker), so
that they depend on this and not on the server that assembles them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from odradek.broker.dataplane.topics import Partition, TopicRegistry
from odradek.broker.settings.config import BrokerConfig
from odradek.broker.settings.listeners import Listener

if TYPE_CHECKING:
    from odradek.broker.cluster.member import ClusterMember
    from odradek.broker.cluster.replication import ReplicaManager


class Node(Protocol):
    @property
    def config(self) -> BrokerConfig: ...
    @property
    def topics(self) -> TopicRegistry: ...
    @property
    def listeners(self) -> list[Listener]: ...
    @property
    def member(self) -> ClusterMember | None: ...
    @property
    def replicas(self) -> ReplicaManager | None: ...

    appended_bytes: int  # the background work watches it to tell when writes stop

    async def internal_topic(
        self, name: str, partitions: int, configs: dict[str, str]
    ) -> list[Partition]: ...

    async def flush_partition(self, partition: Partition) -> None: ...

    def adopt_document(self, name: str, document: bytes) -> None:
        """The cluster's ACLs, SCRAM credentials or client quotas changed: this broker
        follows."""

    def remove_topic(self, name: str) -> None: ...

    def coordinator_moved(self, partition: Partition, leads: bool) -> None:
        """A partition of an internal topic got a new leader: its shard follows."""
