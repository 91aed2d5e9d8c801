"""What every API handler module provides, and the context it is called with."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from odradek.broker.security.resources import Operation, ResourceType
from odradek.broker.security.session import Session
from odradek.protocol.header import RequestHeader

if TYPE_CHECKING:
    from odradek.broker.handlers.services import Services
    from odradek.broker.settings.listeners import Listener


@dataclass(slots=True)  # not frozen: a frozen dataclass costs a setattr call per field
class RequestContext:
    services: Services  # what the handler may use of the broker
    header: RequestHeader
    connection_id: str
    listener: Listener  # the one the request came through; its address is what clients see
    session: Session  # who sent it
    size: int = 0  # of the request, in bytes (what a produce quota counts)
    started: float = 0.0  # time.perf_counter() when its handling began

    @property
    def version(self) -> int:
        return self.header.api_version

    def allowed(self, operation: Operation, resource_type: ResourceType, name: str) -> bool:
        """May this request's principal do ``operation`` on the resource? (ACLs)"""
        return self.services.authorizer.authorize(self.session, operation, resource_type, name)


# A handler answers with a dict for the negotiated version's response class,
# with encoded response body bytes, or with None (acks=0 Produce: no response).
Reply = Mapping[str, Any] | bytes | None
Handler = Callable[[RequestContext, Any], Awaitable[Reply]]


@dataclass(frozen=True, slots=True)
class Api:
    key: int
    name: str
    min_version: int
    max_version: int
    handle: Handler
    # the lowest version ApiVersions lists, when it is below the lowest one served
    listed_min_version: int
