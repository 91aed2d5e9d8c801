"""The broker process: topics, the TCP server and the per-connection request loop."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import itertools
import logging
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import structlog

from odradek.broker import housekeeping, log_dir_failures
from odradek.broker.cluster import admin as cluster_admin
from odradek.broker.cluster import throttles
from odradek.broker.cluster.controller import METADATA_TOPIC, Controller
from odradek.broker.cluster.controller_documents import (
    ACLS,
    CLIENT_METRICS,
    FEATURES,
    GROUP_CONFIGS,
    QUOTAS,
    SCRAM,
    TOKENS,
)
from odradek.broker.cluster.member import ClusterMember
from odradek.broker.coordinators.producer_ids import ClusterProducerIds, ProducerIdAllocator
from odradek.broker.coordinators.share import SHARE_STATE_TOPIC, ShareCoordinator
from odradek.broker.coordinators.transactions import TRANSACTION_TOPIC, TransactionCoordinator
from odradek.broker.dataplane.fetch_sessions import FetchSessionCache
from odradek.broker.dataplane.flusher import Flusher
from odradek.broker.dataplane.log_dirs import LogDirs
from odradek.broker.dataplane.quotas import ClientQuotas
from odradek.broker.dataplane.replica_moves import ReplicaMoves
from odradek.broker.dataplane.topics import Partition, Topic, TopicRegistry
from odradek.broker.faults.injector import Faults, control_route
from odradek.broker.handlers import API_TABLE, CONTROLLER_API_TABLE, sasl_authenticate
from odradek.broker.handlers.api_versions import api_keys
from odradek.broker.handlers.base import Api, RequestContext
from odradek.broker.handlers.quota_common import as_ms, mute, request_time_throttle
from odradek.broker.network.connection import Chunks
from odradek.broker.network.connections import ConnectionTable, Limits
from odradek.broker.network.listener_connections import ListenerConnections
from odradek.broker.observability import broker_metrics, client_telemetry, metrics
from odradek.broker.observability.client_telemetry import ClientTelemetry
from odradek.broker.security import tls
from odradek.broker.security.authorizer import AclAuthorizer, Authorizer, build_authorizer
from odradek.broker.security.credentials import CredentialStore
from odradek.broker.security.delegation_tokens import TokenStore, TokenStoreLike
from odradek.broker.security.sasl_listener import SaslListener, sasl_listener
from odradek.broker.security.session import Session
from odradek.broker.settings.client_metrics import ClientMetricsStore
from odradek.broker.settings.client_quotas import ClientQuotaStore
from odradek.broker.settings.config import BrokerConfig
from odradek.broker.settings.feature_store import FeatureStore
from odradek.broker.settings.group_configs import GroupConfigStore, GroupSettings, shard_config
from odradek.broker.settings.listeners import Listener, ListenError
from odradek.coordinator.group.shard import GroupShard
from odradek.coordinator.runtime import CoordinatorRuntime
from odradek.protocol import messages
from odradek.protocol.batch import BatchHeader, control_batch, iter_batches
from odradek.protocol.errors import ErrorCode
from odradek.protocol.header import (
    SIZE_PREFIX,
    FrameError,
    frame,
    parse_request_header,
    peek_fixed,
    response_header,
)
from odradek.storage import AppendInfo

if TYPE_CHECKING:
    from odradek.broker.cluster.replication import ReplicaManager

log = structlog.get_logger("broker")

API_VERSIONS_KEY = 18
# DescribeQuorum, UnregisterBroker, AddRaftVoter, RemoveRaftVoter, UnregisterController
QUORUM_APIS = (55, 64, 80, 81, 94)
GROUP_RESOURCE = 32
OFFSETS_TOPIC = "__consumer_offsets"
INTERNAL_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": "104857600"}


WRITE_BUFFER_HIGH = 4 * 1024 * 1024
# what a SASL listener answers before authentication: ApiVersions, SaslHandshake,
# SaslAuthenticate (anything else closes the connection, as on Kafka)
BEFORE_AUTHENTICATION = frozenset({18, 17, 36})
SELF_THROTTLED = frozenset({0, 1})  # Produce and Fetch count their own quotas


class Broker:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        # each request's debug line costs its arguments even when filtered out
        self._log_requests = bool(log.is_enabled_for(logging.DEBUG))
        log_dirs = LogDirs(config.directories(), config.cluster_id, config.node_id)
        self.topics = TopicRegistry(log_dirs, config.log_config())
        self.topics.dir_failed.append(partial(log_dir_failures.dir_failed, self))
        self.replica_moves = ReplicaMoves(self.topics)
        self.failed = False  # stopped because its log directories failed
        self.apis: dict[int, Api] = dict(API_TABLE)
        self.controller_apis: dict[int, Api] = dict(CONTROLLER_API_TABLE)
        # One node of its own (the default) has neither: it is its own controller.
        cluster = config.cluster()
        self.controller = (
            Controller(self, cluster) if cluster.is_controller and not cluster.standalone else None
        )
        self.member = (
            ClusterMember(self, cluster) if cluster.is_broker and not cluster.standalone else None
        )
        if self.member is None:
            # a node of its own has no quorum to describe or change, nor brokers or
            # controllers to unregister
            for key in QUORUM_APIS:
                self.apis.pop(key, None)
        self.replicas: ReplicaManager | None = None
        if self.member is not None:
            # cluster-only modules load only in a cluster: one node starts as fast as ever
            from odradek.broker.cluster.replication import ReplicaManager

            self.replicas = ReplicaManager(self, cluster.node_id)
        self.authorizer: Authorizer = build_authorizer(config)  # ACLs when configured
        self.scram_credentials = CredentialStore(config.data_dir)
        self.delegation_tokens = TokenStore(config.data_dir, config.delegation_token_secret_key)
        self.features = FeatureStore(config.data_dir)
        self.client_quotas = ClientQuotaStore(config.data_dir)
        self.quotas = ClientQuotas.of(config)
        self.flusher = Flusher(lambda plog, exc: self.topics.fail_log(plog, exc, "flush"))
        self.appended_bytes = 0  # the housekeeping task watches it to tell when Produce stops
        self.producer_ids: ProducerIdAllocator | ClusterProducerIds = (
            ProducerIdAllocator(config.data_dir)
            if self.member is None
            else ClusterProducerIds(self.member.producer_id_block)
        )
        self.fetch_sessions = FetchSessionCache()
        self.group_configs = GroupConfigStore(config.data_dir, config)
        self.client_metrics = ClientMetricsStore(config.data_dir)
        self.telemetry = ClientTelemetry(self.client_metrics, config.telemetry_max_bytes)
        client_telemetry.serve_on_metrics(self.telemetry)
        group_shard_config = shard_config(config, self.group_configs.settings)
        self.groups = CoordinatorRuntime(
            OFFSETS_TOPIC,
            config.offsets_topic_num_partitions,
            lambda runtime: GroupShard(runtime, group_shard_config, self._topics_view),
            self._internal_topic,
            self.flush_partition,
        )
        self.transactions = TransactionCoordinator(self, self._internal_topic, self.flush_partition)
        self.share = ShareCoordinator(self, self.flush_partition)
        # as configured until start(); then with the ports actually bound
        self.listeners = config.resolved_listeners()
        # what each SASL_PLAINTEXT / SASL_SSL listener accepts (raises SaslConfigError)
        self.sasl_listeners: dict[str, SaslListener] = {
            listener.name: sasl_listener(config, listener.name)
            for listener in self.listeners
            if listener.security_protocol.startswith("SASL")
        }
        self._servers: list[asyncio.Server] = []
        self._tasks: list[asyncio.Task[None]] = []
        self.connections = ConnectionTable(
            Limits.from_config(config, [listener.name for listener in self.listeners])
        )
        self.connection_ids: Iterator[int] = itertools.count(1)
        self.faults = (
            Faults(self.apis, self.topics, self.connections, self.controller)
            if config.enable_faults
            else None
        )
        self.control = control_route(self.faults)  # what an HTTP request on a listener gets
        if self.faults is not None:  # (a replica's move to another directory is a fetch)
            self.replica_moves.paused = self.faults.fetching_paused
            if self.replicas is not None:
                self.replicas.fetching_paused = self.faults.fetching_paused
        self._stopped = asyncio.Event()

    # -- lifecycle -------------------------------------------------------------

    async def start(self) -> None:
        started = time.monotonic()
        self.topics.load()
        self.scram_credentials.load()
        self.delegation_tokens.load()
        self.features.load()
        self.client_quotas.load()
        self.client_quotas.watch(self.quotas.update)
        self.group_configs.load()
        self.client_metrics.load()
        self.topics.remove_orphans()
        self.replica_moves.resume_found()
        # A broker of a cluster binds its listeners (their ports go into its registration)
        # but serves clients only once the controller has admitted it, as Kafka does.
        held = self.member is not None
        self.listeners = [
            await self._listen(listener, serve=not held or listener.controller)
            for listener in self.listeners
        ]
        if self.controller is not None:
            await self.controller.start()
        if self.member is not None and self.replicas is not None:
            self.replicas.start()
            await self.member.start()  # raises ClusterJoinError, with the reason
            for server in self._servers:
                if not server.is_serving():
                    await server.start_serving()
        self._tasks.append(asyncio.create_task(housekeeping.keep_house(self)))
        self._tasks.append(asyncio.create_task(housekeeping.clean_logs(self)))
        self._tasks.append(asyncio.create_task(housekeeping.sweep_connections(self)))
        tokens: TokenStoreLike | None = self.delegation_tokens if self.member is None else None
        if self.controller is not None:
            tokens = self.controller.tokens
        if tokens is not None and tokens.enabled:
            interval = self.config.delegation_token_expiry_check_interval_ms
            self._tasks.append(
                asyncio.create_task(housekeeping.remove_expired_tokens(tokens, interval))
            )
        if self.topics.get(OFFSETS_TOPIC) is not None:
            self._tasks.append(asyncio.create_task(self.groups.ensure_started()))
        if self.topics.get(TRANSACTION_TOPIC) is not None:
            self._tasks.append(asyncio.create_task(self.transactions.ensure_started()))
        if self.topics.get(SHARE_STATE_TOPIC) is not None:
            self._tasks.append(asyncio.create_task(self.share.ensure_started()))
        broker_metrics.watch(self.topics, self.groups, self.share)
        # What start-up made lives as long as the process: frozen, a full collection
        # (see ConnectionTable.sweep) walks only what came after.
        gc.freeze()
        log.info(
            "started",
            listeners=[
                f"{x.name}://{x.host}:{x.port} (advertised {x.advertised_host}:{x.advertised_port})"
                for x in self.listeners
            ],
            log_dirs=[d.name for d in self.topics.log_dirs],
            topics=len(self.topics),
            recovered_partitions=sum(
                p.log.recovered_by_scan for p in self.topics.hosted_partitions()
            ),
            startup_ms=round((time.monotonic() - started) * 1000, 1),
        )

    async def serve_until_stopped(self) -> None:
        await self._stopped.wait()

    def request_stop(self) -> None:
        self._stopped.set()

    async def stop(self) -> None:
        """Clean shutdown: stop accepting, drop connections, flush and checkpoint."""
        if self.member is not None:
            await self.member.stop()
        if self.replicas is not None:
            await self.replicas.stop()
        for server in self._servers:
            server.close()
        workers = [c.abort_requests() for c in list(self.connections.open)]
        await asyncio.gather(*(w for w in workers if w is not None), return_exceptions=True)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.transactions.stop()
        await self.share.stop()
        await self.groups.stop()
        if self.controller is not None:
            await self.controller.stop()
        for server in self._servers:
            await server.wait_closed()
        await self.replica_moves.close()
        self.topics.close()
        log.info("stopped")

    def _topics_view(self) -> dict[str, tuple[uuid.UUID, int]]:
        """What the consumer group protocol assigns: name -> (id, partition count)."""
        return {t.name: (t.topic_id, len(t.partitions)) for t in self.topics if not t.is_internal}

    def group_settings(self, group_id: str) -> GroupSettings:
        """The settings a group runs with: its group configs over the broker's."""
        return self.group_configs.settings(group_id)

    # -- data plane --------------------------------------------------------------

    @staticmethod
    def now_ms() -> int:
        return int(time.time() * 1000)

    async def create_topic(
        self,
        name: str,
        partitions: int,
        configs: Mapping[str, str],
        replication_factor: int = -1,
        assignments: Sequence[Sequence[int]] | None = None,
    ) -> Topic:
        """A new topic (TopicError if not); in a cluster the controller places it."""
        if self.member is not None:
            return await cluster_admin.create_topic(
                self, name, partitions, configs, replication_factor, assignments
            )
        topic = await self.topics.create_in_slices(name, partitions, configs)
        log.info("topic created", topic=name, partitions=partitions, configs=dict(configs))
        return topic

    async def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        """A topic's whole set of configs; in a cluster through the controller."""
        if self.member is not None:
            await cluster_admin.set_topic_configs(self, name, configs)
        else:
            self.topics.set_configs(name, configs)

    async def set_named_configs(
        self, resource_type: int, name: str, configs: dict[str, str]
    ) -> None:
        """A group's (32) or client-metrics subscription's (16) whole set of configs; in
        a cluster through the controller (every broker adopts the cluster's document)."""
        store = self.group_configs if resource_type == GROUP_RESOURCE else self.client_metrics
        if self.member is not None:
            await cluster_admin.set_configs(self, resource_type, name, configs, store.of(name))
        else:
            store.replace(name, configs)

    async def add_partitions(
        self, name: str, count: int, assignments: Sequence[Sequence[int]] | None = None
    ) -> None:
        if self.member is not None:
            await cluster_admin.create_partitions(self, name, count, assignments)
        else:
            self.topics.add_partitions(name, count)

    async def delete_topic(self, name: str) -> None:
        if self.member is not None:
            await cluster_admin.delete_topic(self, name)
        else:
            self.remove_topic(name)

    def remove_topic(self, name: str) -> None:
        """Delete the topic's local replicas and the offsets committed for it."""
        topic = self.topics.delete(name)
        if self.replicas is not None and self.replicas.fetchers is not None:
            for partition in topic.partitions:
                self.replicas.fetchers.remove(partition)
        log.info("topic deleted", topic=name)
        if self.groups.shards:
            for runtime in self.groups.shards.values():
                if runtime.loaded:
                    runtime.submit(lambda shard: shard.delete_topic_offsets({name}))

    def adopt_document(self, name: str, document: bytes) -> None:
        """A document of the cluster's metadata changed: this broker's copy follows."""
        stores: dict[str, Any] = {
            SCRAM: self.scram_credentials,
            TOKENS: self.delegation_tokens,
            QUOTAS: self.client_quotas,
            FEATURES: self.features,
            GROUP_CONFIGS: self.group_configs,
            CLIENT_METRICS: self.client_metrics,
        }
        if isinstance(self.authorizer, AclAuthorizer):
            stores[ACLS] = self.authorizer.store
        if self.replicas is not None:
            stores[throttles.DOCUMENT] = self.replicas.throttles
        if name in stores:
            stores[name].adopt(document)
        log.info("cluster metadata document changed", document=name)

    def coordinator_moved(self, partition: Partition, leads: bool) -> None:
        """A partition of an internal topic got a new leader: its shard follows."""
        name = partition.topic.name
        runtimes = {
            OFFSETS_TOPIC: self.groups,
            TRANSACTION_TOPIC: self.transactions.runtime,
            SHARE_STATE_TOPIC: self.share.runtime,
        }
        runtime = runtimes.get(name)
        if runtime is None:
            return
        if not leads:
            runtime.resign(partition.index)
            return
        if name == TRANSACTION_TOPIC:
            self.transactions.lead(partition.index, partition)
        else:
            runtime.lead(partition.index, partition)

    async def ensure_transaction_coordinator(self) -> int:
        await self.transactions.ensure_started()
        return ErrorCode.none

    def write_marker(
        self, partition: Partition, producer_id: int, epoch: int, commit: bool
    ) -> None:
        """Append a transaction marker to a data partition and update its producer state."""
        now_ms = int(time.time() * 1000)
        data = bytearray(control_batch(producer_id, epoch, commit, now_ms))
        headers = list(iter_batches(data, check_crc=False))
        info = partition.log.append(
            data, headers, leader_epoch=partition.leader_epoch, now_ms=now_ms
        )
        marker = headers[0]._replace(base_offset=info.first_offset)
        partition.producers.record(marker, control_commit=commit)
        partition.appended()

    async def _internal_topic(self, name: str, partitions: int) -> list[Partition]:
        return await self.internal_topic(name, partitions, INTERNAL_TOPIC_CONFIGS)

    async def internal_topic(
        self, name: str, partitions: int, configs: dict[str, str]
    ) -> list[Partition]:
        """The partitions of an internal topic, created with `configs` if it is new."""
        topic = self.topics.get(name)
        if topic is None and self.member is not None and name != METADATA_TOPIC:
            config = self.config
            factor, min_isr = config.offsets_topic_replication_factor, 1
            if name == TRANSACTION_TOPIC:
                factor = config.transaction_state_log_replication_factor
                min_isr = config.transaction_state_log_min_isr
            configs = {**configs, "min.insync.replicas": str(min_isr)}
            topic = await self.create_topic(name, partitions, configs, factor)
        elif topic is None:
            topic = self.topics.create(name, partitions, configs)
            log.info("topic created", topic=name, partitions=partitions, configs=dict(configs))
        return list(topic.partitions)

    async def flush_partition(self, partition: Partition) -> None:
        await self.flush_if_due([partition], int(time.time() * 1000))

    def apis_for(self, listener: Listener) -> dict[int, Api]:
        """What a listener serves: a controller listener, only the controller's APIs."""
        return self.controller_apis if listener.controller else self.apis

    def last_stable_offset(self, partition: Partition) -> int:
        """Below it every transaction is decided; the high watermark while none is open."""
        return partition.producers.last_stable_offset(partition.high_watermark)

    def aborted_transactions(
        self, partition: Partition, start_offset: int, end_offset: int
    ) -> list[dict[str, int]]:
        """(producer id, first offset) of aborted transactions overlapping the range."""
        return [
            {"producer_id": a.producer_id, "first_offset": a.first_offset}
            for a in partition.producers.aborted_between(start_offset, end_offset)
        ]

    def append(
        self,
        partition: Partition,
        data: bytearray | memoryview,
        headers: Sequence[BatchHeader],
        now_ms: int,
    ) -> AppendInfo:
        """Check producer state, append, remember the batches and wake parked fetches."""
        producers = partition.producers
        for header in headers:
            producers.check(header)
        info = partition.log.append(
            data, headers, leader_epoch=partition.leader_epoch, now_ms=now_ms
        )
        offset = info.first_offset
        for header in headers:
            if header.producer_id >= 0:
                producers.record(header._replace(base_offset=offset))
            offset += header.last_offset_delta + 1
        metrics.requests.bytes_in += len(data)
        self.appended_bytes += len(data)
        partition.appended()
        return info

    async def flush_if_due(self, partitions: Iterable[Partition], now_ms: int) -> None:
        # Only the flush policy holds an answer back; rolled segments are fsynced by
        # the housekeeping task (holding Produce for a whole segment's fsync stalls it).
        due = [p.log for p in partitions if p.log.flush_policy_due(now_ms)]
        if due:
            await self.flusher.flush(due)

    # -- connections -------------------------------------------------------------

    async def _listen(self, listener: Listener, serve: bool = True) -> Listener:
        """Open the listener's socket; the listener with the port bound if it asked for any."""
        host = listener.host or None  # every interface
        try:
            context = tls.server_context(self.config, listener)  # None unless SSL / SASL_SSL
        except tls.TlsConfigError as exc:
            raise ListenError(str(exc)) from None
        try:
            server = await asyncio.get_running_loop().create_server(
                ListenerConnections(self, listener).new_connection,
                host,
                listener.port,
                ssl=context,
                backlog=self.config.socket_listen_backlog_size,
                start_serving=serve,
            )
        except OSError as exc:
            where = f"{listener.host or '*'}:{listener.port}"
            raise ListenError(
                f"cannot listen on {where} (listener {listener.name}): {exc.strerror or exc}"
            ) from None
        self._servers.append(server)
        port = server.sockets[0].getsockname()[1]
        if listener.port == 0 and listener.advertised_port == 0:
            return dataclasses.replace(listener, port=port, advertised_port=port)
        return dataclasses.replace(listener, port=port)

    def connection_closed(self, connection_id: str) -> None:
        """The share sessions the connection opened end (what they hold goes back)."""
        self.share.connection_closed(connection_id)
        if self.faults is not None:
            self.faults.connection_closed(connection_id)

    async def dispatch(
        self,
        request: bytearray,
        connection_id: str,
        bound: Any,
        listener: Listener,
        session: Session,
    ) -> Chunks | None:
        # (frames over sasl.server.max.receive.size before authentication never get
        # here: the connection's max_frame refuses them by their size prefix)
        if not session.authenticated and session.raw_tokens:
            # after SaslHandshake v0: a bare token, no header
            return sasl_authenticate.raw_token(session, request)
        api_key, version, correlation_id = peek_fixed(request)
        apis = self.apis_for(listener)
        api = apis.get(api_key)
        if api is None:
            raise FrameError(f"unknown API key {api_key}")
        if not session.authenticated and api_key not in BEFORE_AUTHENTICATION:
            raise FrameError(f"{api.name} request before SASL authentication")
        if not api.min_version <= version <= api.max_version:
            if api_key == API_VERSIONS_KEY and version > api.max_version:
                return self._unsupported_api_versions(correlation_id, apis)
            raise FrameError(f"{api.name} v{version} is not supported")
        flexible = messages.is_flexible(api_key, version)
        header = parse_request_header(request, flexible)
        try:
            body = messages.decode_request(api_key, version, request, header.body_offset)
        except messages.MalformedRequest as exc:
            raise FrameError(f"malformed {api.name} v{version} request: {exc}") from exc
        started = time.perf_counter()
        ctx = RequestContext(self, header, connection_id, listener, session, len(request), started)
        if self.faults is None:
            reply = await api.handle(ctx, body)
        else:
            reply = await self.faults.handle(api, ctx, body)
        if self.quotas.enabled and api_key not in SELF_THROTTLED and isinstance(reply, dict):
            reply = self._request_throttled(ctx, reply)
        elapsed = time.perf_counter() - started
        metrics.requests.observe(api.name, elapsed)
        if self._log_requests:
            bound.debug(
                "request",
                api=api.name,
                version=version,
                client_id=header.client_id,
                correlation_id=correlation_id,
                latency_ms=round(elapsed * 1000, 3),
            )
        if reply is None:
            return None
        if isinstance(reply, bytes):
            chunks: Chunks = [reply]
            size = len(reply)
        else:
            chunks, size = messages.encode_response(api_key, version, reply)
        # ApiVersions answers with header v0 whatever its version.
        head = response_header(correlation_id, flexible and api_key != API_VERSIONS_KEY)
        prefix = SIZE_PREFIX.pack(len(head) + size) + head
        metrics.requests.bytes_out += len(prefix) + size
        return [prefix, *chunks]

    def _request_throttled(self, ctx: RequestContext, reply: dict[str, Any]) -> dict[str, Any]:
        """The answer with the throttle time the request's handling time calls for
        (request_percentage), the connection muted that long."""
        if "throttle_time" not in reply:
            return reply
        throttle = request_time_throttle(ctx, self.now_ms())
        if throttle <= as_ms(reply["throttle_time"]):  # (a mutation quota's may be longer)
            return reply
        mute(ctx, throttle)
        return {**reply, "throttle_time": throttle}

    def _unsupported_api_versions(self, correlation_id: int, apis: dict[int, Api]) -> Chunks:
        # Kafka lists only ApiVersions' own versions there (KIP-511)
        reply = {
            "error_code": ErrorCode.unsupported_version,
            "api_keys": api_keys([apis[API_VERSIONS_KEY]]),
        }
        chunks, _size = messages.encode_response(API_VERSIONS_KEY, 0, reply)
        return [frame(response_header(correlation_id, False), b"".join(chunks))]
