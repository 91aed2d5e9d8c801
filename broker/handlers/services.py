"""What the handlers may use of the broker, typed: the stores and coordinators, and
the few operations the broker itself performs (appending with producer checks, topic
changes that go through the controller in a cluster). server.py's Broker provides
them; handlers see only this."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from odradek.broker.cluster.controller import Controller
from odradek.broker.cluster.member import ClusterMember
from odradek.broker.coordinators.producer_ids import ClusterProducerIds, ProducerIdAllocator
from odradek.broker.coordinators.share import ShareCoordinator
from odradek.broker.coordinators.transactions import TransactionCoordinator
from odradek.broker.dataplane.fetch_sessions import FetchSessionCache
from odradek.broker.dataplane.quotas import ClientQuotas
from odradek.broker.dataplane.replica_moves import ReplicaMoves
from odradek.broker.dataplane.topics import Partition, Topic, TopicRegistry
from odradek.broker.observability.client_telemetry import ClientTelemetry
from odradek.broker.security.authorizer import Authorizer
from odradek.broker.security.credentials import CredentialStore
from odradek.broker.security.delegation_tokens import TokenStore
from odradek.broker.security.sasl_listener import SaslListener
from odradek.broker.settings.client_metrics import ClientMetricsStore
from odradek.broker.settings.client_quotas import ClientQuotaStore
from odradek.broker.settings.config import BrokerConfig
from odradek.broker.settings.feature_store import FeatureStore
from odradek.broker.settings.group_configs import GroupConfigStore, GroupSettings
from odradek.broker.settings.listeners import Listener
from odradek.coordinator.runtime import CoordinatorRuntime
from odradek.protocol.batch import BatchHeader
from odradek.storage import AppendInfo

if TYPE_CHECKING:
    from odradek.broker.cluster.replication import ReplicaManager
    from odradek.broker.handlers.base import Api


class Services(Protocol):
    @property
    def config(self) -> BrokerConfig: ...
    @property
    def listeners(self) -> list[Listener]: ...
    @property
    def sasl_listeners(self) -> dict[str, SaslListener]: ...
    @property
    def authorizer(self) -> Authorizer: ...
    @property
    def scram_credentials(self) -> CredentialStore: ...
    @property
    def delegation_tokens(self) -> TokenStore: ...
    @property
    def features(self) -> FeatureStore:
        """The finalized feature levels (in a cluster, as this broker follows them)."""

    @property
    def client_quotas(self) -> ClientQuotaStore: ...
    @property
    def quotas(self) -> ClientQuotas:
        """The client quotas' rates and throttling."""

    # the data plane
    @property
    def topics(self) -> TopicRegistry: ...
    @property
    def replica_moves(self) -> ReplicaMoves: ...
    @property
    def fetch_sessions(self) -> FetchSessionCache: ...

    def append(
        self,
        partition: Partition,
        data: bytearray | memoryview,
        headers: Sequence[BatchHeader],
        now_ms: int,
    ) -> AppendInfo:
        """Check producer state, append, remember the batches and wake parked fetches."""

    async def flush_if_due(self, partitions: Iterable[Partition], now_ms: int) -> None: ...

    def last_stable_offset(self, partition: Partition) -> int:
        """Below it every transaction is decided; the high watermark while none is open."""

    def aborted_transactions(
        self, partition: Partition, start_offset: int, end_offset: int
    ) -> list[dict[str, int]]:
        """(producer id, first offset) of aborted transactions overlapping the range."""

    def now_ms(self) -> int: ...

    # topic changes (through the controller in a cluster)
    async def create_topic(
        self,
        name: str,
        partitions: int,
        configs: Mapping[str, str],
        replication_factor: int = -1,
        assignments: Sequence[Sequence[int]] | None = None,
    ) -> Topic: ...

    async def set_topic_configs(self, name: str, configs: dict[str, str]) -> None: ...

    async def set_named_configs(
        self, resource_type: int, name: str, configs: dict[str, str]
    ) -> None: ...

    async def add_partitions(
        self, name: str, count: int, assignments: Sequence[Sequence[int]] | None = None
    ) -> None: ...

    async def delete_topic(self, name: str) -> None: ...

    # the coordinators and their settings
    @property
    def groups(self) -> CoordinatorRuntime: ...
    @property
    def group_configs(self) -> GroupConfigStore: ...

    def group_settings(self, group_id: str) -> GroupSettings: ...

    @property
    def client_metrics(self) -> ClientMetricsStore: ...
    @property
    def telemetry(self) -> ClientTelemetry: ...

    @property
    def transactions(self) -> TransactionCoordinator: ...

    async def ensure_transaction_coordinator(self) -> int: ...

    @property
    def share(self) -> ShareCoordinator: ...
    @property
    def producer_ids(self) -> ProducerIdAllocator | ClusterProducerIds: ...

    # the cluster roles (None on one node of its own)
    @property
    def controller(self) -> Controller | None: ...
    @property
    def member(self) -> ClusterMember | None: ...
    @property
    def replicas(self) -> ReplicaManager | None: ...

    def apis_for(self, listener: Listener) -> dict[int, Api]:
        """What a listener serves: a controller listener, only the controller's APIs."""
