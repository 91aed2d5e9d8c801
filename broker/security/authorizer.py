"""Whether a session may do an operation on a resource. Without an authorizer
configured (`authorizer.class.name` empty, Kafka's default) everything is allowed."""

from __future__ import annotations

from typing import Protocol

from broker.security.resources import Operation, ResourceType
from broker.security.session import Session


class Authorizer(Protocol):
    def authorize(
        self, session: Session, operation: Operation, resource_type: ResourceType, name: str
    ) -> bool: ...


class AllowEverything:
    def authorize(
        self, session: Session, operation: Operation, resource_type: ResourceType, name: str
    ) -> bool:
        return True
