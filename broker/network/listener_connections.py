"""The broker's side of one listener's connections: making them (with the frame
limit of a SASL listener until the client logs in), admitting them, principals from
TLS certificates, requests handed to the broker with the connection's session, the
close after a refused SASL authentication, and the count of open connections.

One object per listener serves all its connections, so that a connection holds no
closures of its own (idle connections are many; see broker/network/connection.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterator
from typing import Any, Protocol

import structlog

from odradek.broker.dataplane.quotas import ClientQuotas
from odradek.broker.network.connection import Chunks, Connection
from odradek.broker.network.connections import ConnectionTable
from odradek.broker.network.http_exchange import (
    Answer,
    HttpExchange,
    HttpRequest,
    looks_like_http,
)
from odradek.broker.observability import metrics
from odradek.broker.security import tls
from odradek.broker.security.sasl import must_close
from odradek.broker.security.sasl_listener import SaslListener
from odradek.broker.security.session import Session
from odradek.broker.settings.config import BrokerConfig
from odradek.broker.settings.listeners import Listener

log = structlog.get_logger("broker")


class Server(Protocol):
    """What a listener's connections need of the broker (server.py's Broker)."""

    config: BrokerConfig
    sasl_listeners: dict[str, SaslListener]
    connections: ConnectionTable
    connection_ids: Iterator[int]
    quotas: ClientQuotas

    def dispatch(
        self,
        request: bytearray,
        connection_id: str,
        bound: Any,
        listener: Listener,
        session: Session,
    ) -> Awaitable[Chunks | None]: ...

    def connection_closed(self, connection_id: str) -> None: ...

    def control(self, request: HttpRequest) -> Answer | Awaitable[Answer]: ...

    def now_ms(self) -> int: ...


class ListenerConnections:
    def __init__(self, broker: Server, listener: Listener) -> None:
        self.broker = broker
        self.listener = listener
        self.sasl = broker.sasl_listeners.get(listener.name)
        self.full_frame = broker.config.socket_request_max_bytes

    def new_connection(self) -> Connection:
        connection = Connection(self, self.full_frame, f"conn-{next(self.broker.connection_ids)}")
        connection.session = Session.for_listener(self.listener.security_protocol)
        if self.sasl is not None and self.sasl.max_receive_size < self.full_frame:
            connection.max_frame = (self.sasl.max_receive_size, "sasl.server.max.receive.size")
        return connection

    async def dispatch(self, connection: Connection, frame: bytearray) -> Chunks | None:
        session = connection.session
        reply = await self.broker.dispatch(
            frame, connection.connection_id, connection.log, self.listener, session
        )
        if self.sasl is not None and must_close(session.exchange):
            # a refused SASL authentication: closed once its answer is out, after
            # connection.failed.authentication.delay.ms as on Kafka
            delay = self.sasl.failure_close_delay_ms / 1000
            asyncio.get_running_loop().call_later(delay, connection.close)
        elif session.authenticated and connection.max_frame[0] != self.full_frame:
            connection.max_frame = (self.full_frame, "socket.request.max.bytes")
        return reply

    def opened(self, connection: Connection) -> None:
        peer = connection.transport.get_extra_info("peername")
        listener = self.listener
        ip = peer[0] if peer else ""
        wait_ms = 0
        if not listener.controller:
            wait_ms = self.broker.quotas.connection_throttle_ms(ip, self.broker.now_ms())
        if wait_ms:
            # over its ip's connection_creation_rate: held unread, then closed (Kafka's way)
            connection.hold_then_close(wait_ms / 1000)
            return
        if not self.broker.connections.admit(connection, listener.name, ip):
            connection.close()
            return
        metrics.connections.inc()
        if peer:
            connection.connection_id = f"{peer[0]}:{peer[1]}"
            connection.session.client_host = peer[0]
        if listener.security_protocol == "SSL":  # on SASL_SSL, SASL names the principal
            rules = self.broker.config.listener_setting(
                listener.name, "ssl.principal.mapping.rules"
            )
            try:
                connection.session.principal = tls.ssl_principal(
                    connection.transport.get_extra_info("ssl_object"), rules
                )
            except tls.PrincipalError as exc:
                connection.log.warning("closing connection", reason=str(exc))
                connection.close()
                return
        log.debug(
            "connection opened",
            connection=connection.connection_id,
            principal=connection.session.principal,
        )

    def take_over(self, connection: Connection, first: bytes) -> bool:
        """An HTTP request as a connection's first bytes: the faults' control endpoint
        answers it (refusing, unless the broker was started with faults enabled)."""
        if not looks_like_http(first):
            return False
        exchange = HttpExchange(self.broker.control, lambda: self.closed(connection))
        exchange.start(connection.transport, first)
        return True

    def closed(self, connection: Connection) -> None:
        if connection not in self.broker.connections.open:
            return  # refused at once
        self.broker.connections.remove(connection)
        self.broker.connection_closed(connection.connection_id)
        metrics.connections.dec()
        log.debug("connection closed", connection=connection.connection_id)
