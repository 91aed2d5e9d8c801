"""The broker role in a cluster of several nodes: joining through the controller and
following the cluster's metadata.

At start-up (bounded by `initial.broker.registration.timeout.ms`):
1. reach a controller (the voters, or `controller.quorum.bootstrap.servers`);
2. ask it for its quorum (DescribeQuorum): when `controller.quorum.voters` is set, the
   controller must be one of them, under the same node id and address;
3. register (BrokerRegistration) with a new incarnation id and the advertised
   listeners; a refusal (the node id is another live node's, another cluster's
   controller) stops the node with the reason;
4. follow `__cluster_metadata` (Fetch, as any partition) into a view of its own, and
   heartbeat every `broker.heartbeat.interval.ms` with the offset replayed so far,
   until the controller unfences it.

Afterwards the heartbeats keep its session. While the controller is unreachable the
broker keeps serving what it has and keeps trying; once its session has ended the
controller has fenced it, and its next heartbeat answers STALE_BROKER_EPOCH or
BROKER_ID_NOT_REGISTERED: it registers again, and is unfenced once caught up.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import structlog

from odradek.broker.cluster.controller import METADATA_TOPIC
from odradek.broker.cluster.directory_sync import (
    ASSIGN_REPLICAS_TO_DIRS,
    assignment_request,
    offline_directories,
    unreported,
)
from odradek.broker.cluster.joining import ClusterJoinError, check_quorum, refusal
from odradek.broker.cluster.metadata_view import AdoptedDocuments, new_view
from odradek.broker.cluster.node_client import NodeClient, NodeUnreachable
from odradek.broker.cluster.quorum import snapshots
from odradek.broker.cluster.quorum.requests import describe_quorum, leads
from odradek.broker.cluster.quorum.snapshots import SnapshotId
from odradek.broker.cluster.quorum.voters import (
    KRAFT_VERSION_RECORD,
    found_in,
    parse_kraft_version,
)
from odradek.broker.settings.cluster_config import ClusterConfig
from odradek.broker.settings.listeners import SECURITY_PROTOCOLS
from odradek.broker.slices import Slices
from odradek.coordinator.cluster.shard import ClusterShard
from odradek.protocol.batch import iter_batches, iter_records
from odradek.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from odradek.broker.cluster.node import Node

log = structlog.get_logger("broker")

DESCRIBE_QUORUM, BROKER_REGISTRATION, BROKER_HEARTBEAT, FETCH = 55, 62, 63, 1
ALLOCATE_PRODUCER_IDS, WRITE_TXN_MARKERS, ADD_PARTITIONS_TO_TXN = 67, 27, 24
PEER_TIMEOUT_S = 30.0
SETTLE_WAIT_S = 30.0
RETRY_S = 0.2
FETCH_WAIT_MS = 500


class ClusterMember:
    def __init__(self, broker: Node, cluster: ClusterConfig) -> None:
        self.broker = broker
        self.cluster = cluster
        self.node_id = cluster.node_id
        self.incarnation_id = uuid.uuid4()
        self.broker_epoch = -1
        self.fenced = True
        # this node's view of the cluster: the metadata log replayed
        self.view = self._new_view()
        # heartbeats and the metadata long poll each have connections of their own
        self._clients: list[NodeClient] = []
        self._fetch_clients: list[NodeClient] = []
        self._admin_clients: list[NodeClient] = []  # topic changes, ISR changes
        self._peers: dict[int, NodeClient] = {}  # other brokers, by node id
        self._leader: int | None = None  # which controller leads: an index into the above
        self.inter_broker_listener = ""  # known once the listeners are
        self._tasks: list[asyncio.Task[None]] = []
        self._unfenced = asyncio.Event()
        self._advanced = asyncio.Event()  # the view replayed more of the metadata log
        self._directories_agree_at = -2  # the view's offset when nothing was left to report
        self._applied = asyncio.Event()  # ...and the local topics follow it
        self._applying = False
        self.kraft_version = 0  # the quorum's, from its control records
        self._adopted = AdoptedDocuments(broker)  # the ACLs, credentials, ... followed so far

    # -- start ---------------------------------------------------------------------

    async def start(self) -> None:
        config = self.broker.config
        self.inter_broker_listener = config.inter_broker_listener(self.cluster)
        deadline = time.monotonic() + config.initial_broker_registration_timeout_ms / 1000
        timeout_s = max(config.broker_heartbeat_interval_ms / 1000, 1.0)
        controllers = self.cluster.controllers()
        self._clients = [NodeClient(host, port, timeout_s) for host, port in controllers]
        fetch_timeout_s = timeout_s + FETCH_WAIT_MS / 1000
        self._fetch_clients = [
            NodeClient(host, port, fetch_timeout_s) for host, port in controllers
        ]
        admin_timeout_s = config.controller_socket_timeout_ms / 1000  # passed-on requests
        self._admin_clients = [
            NodeClient(host, port, admin_timeout_s) for host, port in controllers
        ]
        client, quorum = await self._reach_controller(deadline)
        check_quorum(self.cluster, client.address, quorum)
        await self._first_registration(client, deadline)
        self._tasks = [
            asyncio.create_task(self._follow_metadata(), name="metadata-fetch"),
            asyncio.create_task(self._heartbeats(), name="broker-heartbeat"),
        ]
        try:
            await asyncio.wait_for(self._unfenced.wait(), max(deadline - time.monotonic(), 0.1))
        except TimeoutError:
            await self.stop()
            raise ClusterJoinError(
                f"node.id={self.node_id}: registered with the controller but not admitted "
                f"within initial.broker.registration.timeout.ms "
                f"({config.initial_broker_registration_timeout_ms} ms)"
            ) from None
        log.info(
            "joined the cluster",
            node_id=self.node_id,
            broker_epoch=self.broker_epoch,
            controller=client.address,
            metadata_offset=self.view.last_offset,
        )

    async def _reach_controller(self, deadline: float) -> tuple[NodeClient, Any]:
        """The quorum's leader, with its DescribeQuorum answer: the controllers are
        asked in turn until one leads (while they elect one, none does)."""
        last = ""
        while True:
            for index, client in enumerate(self._clients):
                try:
                    answer = await client.call(DESCRIBE_QUORUM, 2, describe_quorum())
                except NodeUnreachable as exc:
                    last = str(exc)
                    continue
                if leads(answer) or answer.error_code != ErrorCode.none:
                    self._leader = index
                    return client, answer
                last = f"{client.address} does not lead the controller quorum"
            if time.monotonic() >= deadline:
                wanted = ", ".join(c.address for c in self._clients)
                raise ClusterJoinError(
                    f"no controller reachable at {wanted} within "
                    f"initial.broker.registration.timeout.ms "
                    f"({self.broker.config.initial_broker_registration_timeout_ms} ms); "
                    f"last error: {last}"
                )
            await asyncio.sleep(RETRY_S)

    # -- registration and heartbeats -----------------------------------------------

    async def _first_registration(self, client: NodeClient, deadline: float) -> None:
        """Register; while the id is held, wait: a crashed predecessor's session runs
        out within broker.session.timeout.ms, a live twin's never does. A controller
        that does not answer is asked again until the registration deadline (the same
        incarnation registering twice is one registration)."""
        config = self.broker.config
        patience = (
            config.broker_session_timeout_ms + 2 * config.broker_heartbeat_interval_ms
        ) / 1000
        refused_since: float | None = None
        while True:
            try:
                code = await self._register(client)
            except NodeUnreachable as exc:
                if time.monotonic() >= deadline:
                    raise ClusterJoinError(
                        f"node.id={self.node_id}: the controller did not answer the "
                        f"registration within initial.broker.registration.timeout.ms: {exc}"
                    ) from exc
                log.warning("registration unanswered: asking again", error=str(exc))
                code = ErrorCode.not_controller  # ask whoever leads now
            if code == ErrorCode.none:
                return
            if code == ErrorCode.not_controller:  # the quorum elected another meanwhile
                self.leader_lost()
                await asyncio.sleep(RETRY_S)
                with contextlib.suppress(NodeUnreachable):  # else the same one again
                    client = await self._any_client()
                continue
            if code != ErrorCode.duplicate_broker_registration:
                raise ClusterJoinError(f"node.id={self.node_id}: {refusal(code)}")
            if refused_since is None:
                refused_since = time.monotonic()
                log.warning(
                    "node id still registered: waiting for the old session to end",
                    node_id=self.node_id,
                    wait_s=patience,
                )
            if time.monotonic() - refused_since > patience:
                raise ClusterJoinError(f"node.id={self.node_id}: {refusal(code)}")
            await asyncio.sleep(RETRY_S)

    async def _register(self, client: NodeClient) -> ErrorCode:
        request = {
            "broker_id": self.node_id,
            "cluster_id": self.broker.config.cluster_id,
            "incarnation_id": self.incarnation_id,
            "listeners": [
                {
                    "name": listener.name,
                    "host": listener.advertised_host,
                    "port": listener.advertised_port,
                    "security_protocol": SECURITY_PROTOCOLS.index(listener.security_protocol),
                }
                for listener in self.broker.listeners
                if not listener.controller
            ],
            "features": [],
            "rack": None,
            "previous_broker_epoch": self.broker_epoch,
            "log_dirs": [d.directory_id for d in self.broker.topics.log_dirs.online()],
        }
        answer = await client.call(BROKER_REGISTRATION, 3, request)
        code: ErrorCode = answer.error_code
        if code == ErrorCode.none:
            self.broker_epoch = answer.broker_epoch
            self.fenced = True
        return code

    async def _heartbeats(self) -> None:
        interval = self.broker.config.broker_heartbeat_interval_ms / 1000
        while True:
            try:
                await self._heartbeat()
                await self._report_directories()
            except NodeUnreachable as exc:
                self.leader_lost()
                log.warning("controller unreachable", error=str(exc))
            except Exception:
                log.exception("heartbeat failed")
            if self.fenced:  # ask again as soon as more metadata is replayed
                self._advanced.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._advanced.wait(), interval)
            else:
                await asyncio.sleep(interval)

    async def _report_directories(self) -> None:
        """Tell the controller where replicas lie that it does not know of yet. With one
        directory nothing moves between directories, and the controller assigns it to
        new replicas itself: the replicas are walked again only once the view changed."""
        log_dirs = self.broker.topics.log_dirs
        if not log_dirs.several and self.view.last_offset == self._directories_agree_at:
            return
        seen_at = self.view.last_offset
        found = unreported(self.view, self.broker.topics, self.node_id)
        if not found:
            self._directories_agree_at = seen_at
        elif not self.fenced:
            request = assignment_request(self.node_id, self.broker_epoch, found)
            await (await self._any_client()).call(ASSIGN_REPLICAS_TO_DIRS, 0, request)

    async def _heartbeat(self, want_shutdown: bool = False) -> Any:
        client = await self._any_client()
        answer = await client.call(
            BROKER_HEARTBEAT,
            1,
            {
                "broker_id": self.node_id,
                "broker_epoch": self.broker_epoch,
                "current_metadata_offset": self.view.last_offset,
                "want_fence": False,
                "want_shut_down": want_shutdown,
                "offline_log_dirs": offline_directories(self.broker.topics),
            },
        )
        if answer.error_code in (ErrorCode.stale_broker_epoch, ErrorCode.broker_id_not_registered):
            log.warning("registering again", node_id=self.node_id, reason=answer.error_code.name)
            code = await self._register(client)
            if code != ErrorCode.none:
                log.warning("registration refused", node_id=self.node_id, reason=refusal(code))
            return answer
        if answer.error_code == ErrorCode.not_controller:
            self.leader_lost()
            return answer
        if answer.error_code != ErrorCode.none:
            log.warning("heartbeat refused", node_id=self.node_id, reason=answer.error_code.name)
            return answer
        was_fenced, self.fenced = self.fenced, answer.is_fenced
        if not self.fenced:
            self._unfenced.set()
        if was_fenced != self.fenced:
            log.info("fenced" if self.fenced else "unfenced", node_id=self.node_id)
        return answer

    async def _any_client(self, clients: list[NodeClient] | None = None) -> NodeClient:
        """The connection (of `clients`, one per controller) to the quorum's leader,
        found by asking each controller in turn when it is not known."""
        clients = self._clients if clients is None else clients
        if self._leader is not None:
            return clients[self._leader]
        for index, client in enumerate(self._clients):
            try:
                answer = await client.call(DESCRIBE_QUORUM, 2, describe_quorum())
            except NodeUnreachable:
                continue
            if leads(answer):
                self._leader = index
                return clients[index]
        raise NodeUnreachable("no controller leads the quorum (an election may be under way)")

    def leader_lost(self) -> None:
        """The controller asked did not answer as the leader: find it again."""
        self._leader = None

    async def ask_controller(
        self, api_key: int, version: int, request: dict[str, Any], client_id: str | None = None
    ) -> Any:
        """One request to the active controller (raises NodeUnreachable); `client_id`,
        when given, names the principal it is made for. A controller that no longer
        leads (or is gone) is left for the new leader, once; one that does not answer
        in time is not (it may have acted on the request: the caller answers
        REQUEST_TIMED_OUT, as Kafka's forwarding does)."""
        for attempt in range(2):
            client = await self._any_client(self._admin_clients)
            try:
                if client_id is None:
                    answer = await client.call(api_key, version, request)
                else:
                    answer = await client.call(api_key, version, request, client_id)
            except NodeUnreachable as exc:
                self.leader_lost()
                if attempt or exc.timed_out:
                    raise
                continue
            if getattr(answer, "error_code", None) != ErrorCode.not_controller or attempt:
                return answer
            self.leader_lost()
        raise AssertionError("unreachable")

    async def settle(self) -> None:
        """Wait until this broker's view has everything the controller wrote so far."""
        answer = await self.ask_controller(DESCRIBE_QUORUM, 2, describe_quorum())
        if not leads(answer):
            self.leader_lost()
            raise NodeUnreachable("the controller asked no longer leads the quorum")
        end = answer.topics[0].partitions[0].high_watermark
        await self.wait_for_view(lambda: self.view.last_offset + 1 >= end, SETTLE_WAIT_S)

    async def producer_id_block(self) -> tuple[int, int]:
        """(first id, count) of a block of producer ids only this broker hands out."""
        request = {"broker_id": self.node_id, "broker_epoch": self.broker_epoch}
        answer = await self.ask_controller(ALLOCATE_PRODUCER_IDS, 0, request)
        if answer.error_code != ErrorCode.none:
            raise NodeUnreachable(f"no producer ids from the controller: {answer.error_code.name}")
        return answer.producer_id_start, answer.producer_id_len

    def peer(self, node_id: int) -> NodeClient | None:
        """A connection to another broker's inter-broker endpoint (None: not known)."""
        endpoint = self.endpoint_of(node_id)
        if endpoint is None:
            return None
        client = self._peers.get(node_id)
        if client is None or (client.host, client.port) != endpoint:
            if client is not None:
                client.close()
            client = self._peers[node_id] = NodeClient(*endpoint, PEER_TIMEOUT_S)
        return client

    async def send_markers(
        self,
        leader: int,
        producer_id: int,
        epoch: int,
        commit: bool,
        partitions: list[tuple[str, int]],
    ) -> dict[tuple[str, int], int]:
        """WriteTxnMarkers to a partition leader: its error code per partition
        (NOT_LEADER_OR_FOLLOWER for all when it cannot be reached)."""
        client = self.peer(leader)
        if client is None:
            return {}
        topics: dict[str, list[int]] = {}
        for topic, index in partitions:
            topics.setdefault(topic, []).append(index)
        request = {
            "markers": [
                {
                    "producer_id": producer_id,
                    "producer_epoch": epoch,
                    "transaction_result": commit,
                    "topics": [{"name": t, "partition_indexes": p} for t, p in topics.items()],
                    "coordinator_epoch": 0,
                }
            ]
        }
        try:
            answer = await client.call(WRITE_TXN_MARKERS, 1, request)
        except NodeUnreachable:
            return {}
        return {
            (topic.name, p.partition_index): p.error_code
            for marker in answer.markers
            for topic in marker.topics
            for p in topic.partitions
        }

    async def add_to_transaction(
        self,
        coordinator: int,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: list[tuple[str, int]],
    ) -> dict[tuple[str, int], int]:
        """AddPartitionsToTxn v5 to the transaction's coordinator, as a partition leader
        adds a transactional Produce's partition (transactions version 2): the error
        code per partition (COORDINATOR_NOT_AVAILABLE for all when unreachable)."""
        unreachable = dict.fromkeys(partitions, int(ErrorCode.coordinator_not_available))
        client = self.peer(coordinator)
        if client is None:
            return unreachable
        topics: dict[str, list[int]] = {}
        for topic, index in partitions:
            topics.setdefault(topic, []).append(index)
        request = {
            "transactions": [
                {
                    "transactional_id": transactional_id,
                    "producer_id": producer_id,
                    "producer_epoch": epoch,
                    "verify_only": False,
                    "topics": [{"name": t, "partitions": p} for t, p in topics.items()],
                }
            ]
        }
        try:
            answer = await client.call(ADD_PARTITIONS_TO_TXN, 5, request)
        except NodeUnreachable:
            return unreachable
        if answer.error_code:
            return dict.fromkeys(partitions, int(answer.error_code))
        return {
            (topic.name, p.partition_index): int(p.partition_error_code)
            for txn in answer.results_by_transaction
            for topic in txn.topic_results
            for p in topic.results_by_partition
        }

    def endpoint_of(self, node_id: int) -> tuple[str, int] | None:
        """Where another broker takes inter-broker requests, as it registered it."""
        registration = self.view.brokers.get(node_id)
        if registration is None:
            return None
        for endpoint in registration.value.endpoints:
            if endpoint.listener == self.inter_broker_listener:
                return endpoint.host, endpoint.port
        return None

    async def wait_for_view(self, done: Callable[[], bool], timeout_s: float) -> bool:
        """Wait until the view (and the local topics following it) satisfy `done`."""
        deadline = time.monotonic() + timeout_s
        while self._applying or not done():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._applied.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._applied.wait(), left)
        return True

    # -- metadata ------------------------------------------------------------------

    async def _follow_metadata(self) -> None:
        while True:
            try:
                client = await self._any_client(self._fetch_clients)
                await self._fetch_once(client)
            except NodeUnreachable:
                self.leader_lost()
                await asyncio.sleep(RETRY_S)
            except Exception:
                log.exception("metadata fetch failed")
                await asyncio.sleep(RETRY_S)

    async def _fetch_once(self, client: NodeClient) -> None:
        offset = self.view.last_offset + 1
        request = {
            "replica_id": self.node_id,
            "max_wait": FETCH_WAIT_MS,
            "min_bytes": 1,
            "max_bytes": 8 * 1024 * 1024,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,  # a full fetch each time, no fetch session
            "topics": [
                {
                    "topic": METADATA_TOPIC,
                    "partitions": [
                        {
                            "partition": 0,
                            "current_leader_epoch": -1,
                            "fetch_offset": offset,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": 8 * 1024 * 1024,
                        }
                    ],
                }
            ],
        }
        answer = await client.call(FETCH, 12, request)
        partition = answer.responses[0].partitions[0]
        if partition.error_code != ErrorCode.none:
            self.leader_lost()
            raise NodeUnreachable(f"metadata fetch: {partition.error_code.name}")
        if partition.snapshot_id.end_offset >= 0:  # the log starts after what we hold
            await self._take_snapshot(client, partition.snapshot_id)
            return
        records = bytes(partition.records or b"")
        before = self.view.last_offset
        self._applying = True  # (the view is ahead of the local topics until applied)
        try:
            slices = Slices()
            for header in iter_batches(records):
                batch = records[header.position : header.position + header.size]
                if header.is_control:  # the quorum's kraft.version, if it says
                    self._note_kraft_version(batch)
                    continue
                for delta, key, value in iter_records(batch):
                    position = header.base_offset + delta
                    if position >= offset:
                        self.view.replay(position, key, value, -1)
                        self._advanced.set()
                await slices.pause_if_due()  # between batches: whole operations
            if self.view.last_offset != before:
                await self._view_changed()
        finally:
            self._applying = False

    def _note_kraft_version(self, batch: bytes) -> None:
        for _, kind, value in found_in(batch):
            if kind == KRAFT_VERSION_RECORD:
                self.kraft_version = parse_kraft_version(value)

    async def _view_changed(self) -> None:
        if self.broker.replicas is None:
            return
        self._applying = True  # (the view is ahead of the local topics until done)
        try:
            await self.broker.replicas.apply(self.view)
        finally:
            self._applying = False
        self._adopted.follow(self.view.documents)
        self._applied.set()

    async def _take_snapshot(self, client: NodeClient, wanted: Any) -> None:
        """A new view from the controller's snapshot, the log to follow after it."""
        snapshot = SnapshotId(wanted.end_offset, wanted.epoch)
        cluster_id = self.broker.config.cluster_id
        data = await snapshots.fetch(client, cluster_id, self.node_id, snapshot)
        view = self._new_view()
        self._note_kraft_version(data)
        slices = Slices()
        for offset, (key, value) in enumerate(snapshots.records_of(data)):
            view.replay(offset, key, value, -1)
            await slices.pause_if_due()  # (the new view is not seen until whole)
        view.last_offset = snapshot.end_offset - 1
        self.view = view
        log.info("metadata view from the controller's snapshot", end_offset=snapshot.end_offset)
        self._advanced.set()
        await self._view_changed()

    def _new_view(self) -> ClusterShard:
        return new_view(self.broker.config.cluster_id)

    # -- stop ----------------------------------------------------------------------

    async def stop(self) -> None:
        """Tell the controller this broker goes (its partitions move at once), then stop."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        if self.broker_epoch >= 0:
            with contextlib.suppress(NodeUnreachable, OSError):
                await self._heartbeat(want_shutdown=True)
        peers = list(self._peers.values())
        for client in [*self._clients, *self._fetch_clients, *self._admin_clients, *peers]:
            client.close()
