"""The faults in force on one broker, and what they do to the requests that meet
them. There is one only when the broker was started with faults enabled
(`--enable-faults`); otherwise nothing here runs and the control endpoint refuses.

Each fault is logged when it is set, acts (odradek_faults_applied_total, per kind and
API), and ends by its count or its time (logged too)."""

from __future__ import annotations

import asyncio
import itertools
import json
import uuid
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any

import structlog
from prometheus_client import Counter, Gauge

from odradek.broker.dataplane.topics import TopicRegistry
from odradek.broker.faults.error_replies import (
    error_reply,
    named_groups,
    named_partitions,
    named_transactional_ids,
)
from odradek.broker.faults.rules import (
    COORDINATOR,
    DELAY,
    ERROR,
    LEADERLESS,
    PAUSE_FETCHING,
    Fault,
    FaultError,
    parse_fault,
)
from odradek.broker.handlers.base import Api, Reply, RequestContext
from odradek.broker.network.connections import ConnectionTable
from odradek.broker.network.http_exchange import Answer, HttpRequest, Route
from odradek.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from odradek.broker.cluster.controller import Controller

log = structlog.get_logger("faults")
applied = Counter("odradek_faults_applied", "Times a fault acted", ["kind", "api"])
active = Gauge("odradek_faults_active", "Faults in force")

# the requests a group's or a transaction's coordinator answers, by API key
COORDINATOR_APIS = frozenset(
    {8, 9, 10, 11, 12, 13, 14, 15, 22, 24, 25, 26, 28, 42, 47, 68, 69, 76, 77, 78, 88, 89}
)
# the requests only a partition's leader answers
LEADER_APIS = frozenset({0, 1, 2, 23})  # Produce, Fetch, ListOffsets, OffsetForLeaderEpoch
METADATA_APIS = frozenset({3, 75})  # Metadata, DescribeTopicPartitions


class Faults:
    def __init__(
        self,
        apis: Mapping[int, Api],
        topics: TopicRegistry,
        connections: ConnectionTable,
        controller: Controller | None,
    ) -> None:
        # Kafka's names (ListOffsets), and the handlers' (list_offsets)
        self._api_names = {key: api.name.title().replace("_", "") for key, api in apis.items()}
        self._api_keys = {_plain(name): key for key, name in self._api_names.items()}
        self._topics = topics
        self._connections = connections
        self._controller = controller  # a cluster's controller moves leaders
        self._faults: dict[int, Fault] = {}
        self._ids = itertools.count(1)
        self._client_ids: dict[str, str] = {}  # connection id -> the client id it sent

    # -- the control surface -----------------------------------------------------

    def add(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        """Set a fault (raises FaultError with the reason it cannot be)."""
        fault = parse_fault(next(self._ids), spec, self._api_keys, COORDINATOR_APIS)
        self._faults[fault.id] = fault
        active.set(len(self._faults))
        described = fault.described(self._api_names)
        log.warning("fault set", **described)
        return described

    def described(self) -> list[dict[str, Any]]:
        return [fault.described(self._api_names) for fault in self._live()]

    def remove(self, fault_id: int) -> bool:
        fault = self._faults.pop(fault_id, None)
        if fault is not None:
            self._ended(fault, "removed")
        return fault is not None

    def clear(self) -> int:
        faults = list(self._faults.values())
        for fault in faults:
            self.remove(fault.id)
        return len(faults)

    def close_connections(self, client_id: str | None) -> int:
        """Close the connections of a client id (every client connection: None)."""
        chosen = {
            connection
            for connection, seen in self._client_ids.items()
            if client_id is None or seen == client_id
        }
        closed = 0
        for connection in list(self._connections.open):
            if connection.connection_id in chosen:
                connection.close()
                closed += 1
        applied.labels("close-connections", "").inc(closed)
        log.warning("fault: connections closed", client_id=client_id, closed=closed)
        return closed

    async def move_leader(self, spec: Any) -> tuple[int, Any]:
        """In a cluster, on its controller: another in-sync replica leads the partition
        ({"topic", "partition", "to": optional node id})."""
        if self._controller is None:
            return 400, {"error": "move-leader goes to the cluster's controller"}
        if not isinstance(spec, dict):
            return 400, {"error": 'give {"topic": ..., "partition": ...}'}
        topic, index, to = spec.get("topic"), spec.get("partition"), spec.get("to")
        if not isinstance(topic, str) or not isinstance(index, int):
            return 400, {"error": "move-leader names its topic and partition"}
        if to is not None and not isinstance(to, int):
            return 400, {"error": "to is a node id"}
        answer = await self._controller.run(lambda shard: shard.move_leader(topic, index, to))
        if answer["error_code"] != ErrorCode.none:
            return 409, {
                "error": answer.get("error_message") or ErrorCode(answer["error_code"]).name
            }
        applied.labels("move-leader", "").inc()
        log.warning("fault: leader moved", topic=topic, partition=index, leader=answer["leader"])
        return 200, {"leader": answer["leader"]}

    def connection_closed(self, connection_id: str) -> None:
        self._client_ids.pop(connection_id, None)

    # -- requests ----------------------------------------------------------------

    async def handle(self, api: Api, ctx: RequestContext, request: Any) -> Reply:
        """The request as the faults in force let it be answered."""
        if ctx.header.client_id is not None:
            self._client_ids[ctx.connection_id] = ctx.header.client_id
        if not self._faults:
            return await api.handle(ctx, request)
        refusal = self._refusal(api.key, ctx, request)
        if refusal is not None:
            fault, refused = refusal
            self._took(fault, api.key)
            if api.key == 0 and getattr(request, "acks", -1) == 0:
                return None  # acks=0: no answer, and nothing written
            return refused
        delay = self._delay(api.key, ctx, request)
        reply = await api.handle(ctx, request)
        if api.key in METADATA_APIS and isinstance(reply, dict):
            self._without_leaders(reply)
        if delay:
            await asyncio.sleep(delay / 1000)
        return reply

    def fetching_paused(self, topic: str, partition: int) -> bool:
        """Does a fault stop this node's replica from fetching the partition?"""
        for fault in self._live():
            if fault.kind != PAUSE_FETCHING:
                continue
            if (fault.scope.topic, fault.scope.partition) == (topic, partition):
                if not fault.fired:
                    log.info("fault applied", id=fault.id, kind=fault.kind)
                fault.take()  # (once a fetch round: counted, logged the first time)
                applied.labels(fault.kind, "").inc()
                return True
        return False

    def _refusal(
        self, api_key: int, ctx: RequestContext, request: Any
    ) -> tuple[Fault, dict[str, Any]] | None:
        for fault in self._live():
            if fault.kind in (ERROR, COORDINATOR):
                bound = api_key in fault.apis
            else:
                bound = fault.kind == LEADERLESS and api_key in LEADER_APIS
            matched = bound and self._matches(fault, api_key, ctx, request)
            if matched:
                return fault, error_reply(api_key, request, fault.error, fault.message)
        return None

    def _delay(self, api_key: int, ctx: RequestContext, request: Any) -> int:
        for fault in self._live():
            if (
                fault.kind == DELAY
                and api_key in fault.apis
                and self._matches(fault, api_key, ctx, request)
            ):
                self._took(fault, api_key)
                return fault.delay_ms
        return 0

    def _matches(self, fault: Fault, api_key: int, ctx: RequestContext, request: Any) -> bool:
        scope = fault.scope
        if scope.client_id is not None and ctx.header.client_id != scope.client_id:
            return False
        if scope.group is not None and scope.group not in named_groups(api_key, request):
            return False
        if scope.transactional_id is not None and scope.transactional_id not in (
            named_transactional_ids(api_key, request)
        ):
            return False
        if scope.topic is not None:
            named = set(named_partitions(api_key, request, self._topic_name))
            if scope.partition is None:
                return any(topic == scope.topic for topic, _ in named)
            return (scope.topic, scope.partition) in named or (scope.topic, None) in named
        return True

    def _without_leaders(self, reply: dict[str, Any]) -> None:
        """No leader in a Metadata answer for the partitions a fault leaves without."""
        leaderless = {
            (f.scope.topic, f.scope.partition) for f in self._live() if f.kind == LEADERLESS
        }
        for topic in reply.get("topics") or ():
            for partition in topic.get("partitions") or ():
                if (topic.get("name"), partition.get("partition_index")) in leaderless:
                    partition["leader_id"] = -1
                    partition["error_code"] = ErrorCode.leader_not_available

    # -- bookkeeping -------------------------------------------------------------

    def _topic_name(self, topic_id: uuid.UUID) -> str | None:
        topic = self._topics.by_id(topic_id)
        return None if topic is None else topic.name

    def _live(self) -> list[Fault]:
        for fault in [f for f in self._faults.values() if f.ended]:
            del self._faults[fault.id]
            self._ended(fault, "over")
        return list(self._faults.values())

    def _took(self, fault: Fault, api_key: int) -> None:
        fault.take()
        applied.labels(fault.kind, self._api_names.get(api_key, "")).inc()
        log.info("fault applied", id=fault.id, kind=fault.kind, api=self._api_names.get(api_key))

    def _ended(self, fault: Fault, why: str) -> None:
        active.set(len(self._faults))
        log.warning("fault ended", id=fault.id, kind=fault.kind, why=why, fired=fault.fired)


def control_route(faults: Faults | None) -> Route:
    """The control endpoint's answers (status, JSON document):

    GET    /faults            the faults in force
    POST   /faults            set one (a JSON object, see rules.parse_fault): 201
    DELETE /faults            end them all
    DELETE /faults/<id>       end one
    POST   /faults/close-connections   {"client_id": "..."} (or {}: every client's)
    POST   /faults/move-leader         {"topic", "partition", "to"?} (on the controller)
    """

    def route(request: HttpRequest) -> Answer | Awaitable[Answer]:
        if faults is None:
            return 403, {
                "error": "fault injection is off on this broker: start it with "
                "--enable-faults (or ODRADEK_ENABLE_FAULTS=true)"
            }
        method, path = request.method, request.path
        if path == "/faults" and method == "GET":
            return 200, {"faults": faults.described()}
        if path == "/faults" and method == "POST":
            try:
                return 201, faults.add(_json(request.body))
            except FaultError as exc:
                return 400, {"error": str(exc)}
        if path == "/faults" and method == "DELETE":
            return 200, {"removed": faults.clear()}
        if path.startswith("/faults/") and method == "DELETE":
            fault_id = path.removeprefix("/faults/")
            if fault_id.isdigit() and faults.remove(int(fault_id)):
                return 200, {"removed": 1}
            return 404, {"error": f"no fault {fault_id}"}
        if path == "/faults/move-leader" and method == "POST":
            try:
                return faults.move_leader(_json(request.body))
            except FaultError as exc:
                return 400, {"error": str(exc)}
        if path == "/faults/close-connections" and method == "POST":
            try:
                body = _json(request.body) if request.body else {}
            except FaultError as exc:
                return 400, {"error": str(exc)}
            client_id = body.get("client_id") if isinstance(body, dict) else None
            return 200, {"closed": faults.close_connections(client_id)}
        return 404, {"error": f"no {method} {path} (see GET /faults)"}

    return route


def _plain(api_name: str) -> str:
    return api_name.replace("_", "").lower()


def _json(body: bytes) -> Any:
    try:
        return json.loads(body or b"null")
    except ValueError as exc:
        raise FaultError(f"the body is not JSON: {exc}") from None
