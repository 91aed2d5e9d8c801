"""Whether a session may do an operation on a resource.

Without an authorizer configured (`authorizer.class.name` empty, Kafka's default)
everything is allowed (`AllowEverything`). Naming Kafka's StandardAuthorizer or
AclAuthorizer switches on ACLs (`AclAuthorizer`), as on Kafka:

- principals listed in `super.users` (semicolon-separated, "User:admin;User:ops") may
  do anything;
- otherwise the bindings on the resource decide: any DENY that applies wins, else any
  ALLOW that applies allows;
- a resource without any binding at all (for whomever) is denied, unless
  `allow.everyone.if.no.acl.found` is true; a resource with bindings only for others
  is denied either way.
"""

from __future__ import annotations

from typing import Protocol

from odradek.broker.security.acls import WILDCARD, WILDCARD_PRINCIPAL, AclFileError, AclStore
from odradek.broker.security.resources import Operation, PatternType, Permission, ResourceType
from odradek.broker.security.session import Session
from odradek.broker.settings.config import BrokerConfig
from odradek.broker.settings.listeners import ListenError

AUTHORIZER_CLASSES = (
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "kafka.security.authorizer.AclAuthorizer",
)
# Kafka's authorizeByResourceType first asks about a name no binding is meant for, so
# that super users, wildcard bindings and the no-ACL default answer as they would
PROBE_NAME = "hardcode"


class AuthorizerConfigError(ListenError):
    """Authorizer settings that cannot be served, or an unreadable ACL file: the broker
    stops at start-up with this message, as for a listener that cannot open."""


class Authorizer(Protocol):
    def authorize(
        self, session: Session, operation: Operation, resource_type: ResourceType, name: str
    ) -> bool: ...

    def authorize_any(
        self, session: Session, operation: Operation, resource_type: ResourceType
    ) -> bool:
        """May the session do the operation on at least one resource of the type?"""
        ...


class AllowEverything:
    def authorize(
        self, session: Session, operation: Operation, resource_type: ResourceType, name: str
    ) -> bool:
        return True

    def authorize_any(
        self, session: Session, operation: Operation, resource_type: ResourceType
    ) -> bool:
        return True


class AclAuthorizer:
    def __init__(self, store: AclStore, super_users: frozenset[str], allow_if_no_acl: bool) -> None:
        self.store = store
        self.super_users = super_users
        self.allow_if_no_acl = allow_if_no_acl

    def authorize(
        self, session: Session, operation: Operation, resource_type: ResourceType, name: str
    ) -> bool:
        if session.principal in self.super_users:
            return True
        bindings = self.store.index.on_resource(resource_type, name)
        if not bindings:
            return self.allow_if_no_acl
        allowed = False
        for binding in bindings:
            decision = binding.decides(session.principal, session.client_host, operation)
            if decision == Permission.DENY:
                return False
            allowed = allowed or decision == Permission.ALLOW
        return allowed

    def authorize_any(
        self, session: Session, operation: Operation, resource_type: ResourceType
    ) -> bool:
        """Kafka's authorizeByResourceType: some ALLOW for the operation (exactly, or ALL)
        on a pattern of the type that no DENY covers whole."""
        if self.authorize(session, operation, resource_type, PROBE_NAME):
            return True
        denied_literal: set[str] = set()
        denied_prefixes: set[str] = set()
        allowed: list[tuple[PatternType, str]] = []
        for binding in self.store.index.of_type(resource_type):
            if binding.host not in (WILDCARD, session.client_host):
                continue
            if binding.principal not in (WILDCARD_PRINCIPAL, session.principal):
                continue
            if binding.operation not in (operation, Operation.ALL):
                continue
            literal = binding.pattern_type == PatternType.LITERAL
            if binding.permission == Permission.DENY:
                if literal and binding.name == WILDCARD:
                    return False
                (denied_literal if literal else denied_prefixes).add(binding.name)
            elif literal and binding.name == WILDCARD:
                return True
            else:
                allowed.append((binding.pattern_type, binding.name))
        for pattern_type, name in allowed:
            if pattern_type == PatternType.LITERAL and name in denied_literal:
                continue
            if not any(name.startswith(prefix) for prefix in denied_prefixes):
                return True
        return False


def build_authorizer(config: BrokerConfig) -> Authorizer:
    """The authorizer the settings ask for; raises AuthorizerConfigError."""
    class_name = config.raw.get("authorizer.class.name", "").strip()
    if not class_name:
        return AllowEverything()
    if class_name not in AUTHORIZER_CLASSES:
        raise AuthorizerConfigError(
            f"authorizer.class.name={class_name!r}: not supported; use one of "
            f"{', '.join(AUTHORIZER_CLASSES)} (ACLs), or leave it empty (no authorization)"
        )
    super_users = set()
    for entry in config.raw.get("super.users", "").split(";"):
        principal = entry.strip()
        if not principal:
            continue
        kind, colon, _ = principal.partition(":")
        if not colon or not kind:
            raise AuthorizerConfigError(
                f"super.users: {principal!r} is not a principal (write it as User:name)"
            )
        super_users.add(principal)
    allow_text = config.raw.get("allow.everyone.if.no.acl.found", "false").strip().lower()
    if allow_text not in ("true", "false"):
        raise AuthorizerConfigError(
            f"allow.everyone.if.no.acl.found={allow_text!r}: expected true or false"
        )
    store = AclStore(config.data_dir)
    try:
        store.load()
    except AclFileError as exc:
        raise AuthorizerConfigError(str(exc)) from None
    return AclAuthorizer(store, frozenset(super_users), allow_text == "true")
