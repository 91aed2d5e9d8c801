"""ACLs for tests: grant, revoke and list them through librdkafka's AdminClient, and
start a broker with the ACL authorizer on and some ACLs already in place.

With the authorizer on, nobody without ACLs may create ACLs, except a super user. So
``start_with_acls`` starts the broker with the admin principal as a super user, grants
the ACLs, and restarts it without that (the ACLs persist in the data directory). On a
PLAINTEXT listener every client is ``User:ANONYMOUS``; a SASL test passes the admin's
login in ``client_config`` and its principal as ``admin``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from helpers.broker import Broker

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ANONYMOUS = "User:ANONYMOUS"
CLUSTER = "kafka-cluster"
TIMEOUT = 15.0


@dataclass(frozen=True)
class Acl:
    """One ACL, in Kafka's words: resource type TOPIC, GROUP, CLUSTER or
    TRANSACTIONAL_ID; operation READ, WRITE, ..., ALL; permission ALLOW or DENY;
    pattern LITERAL or PREFIXED."""

    resource_type: str
    name: str
    operation: str = "ALL"
    permission: str = "ALLOW"
    principal: str = ANONYMOUS
    pattern: str = "LITERAL"
    host: str = "*"

    def binding(self) -> AclBinding:
        return AclBinding(
            _resource_type(self.resource_type),
            self.name,
            ResourcePatternType[self.pattern],
            self.principal,
            self.host,
            AclOperation[self.operation],
            AclPermissionType[self.permission],
        )

    def filter(self) -> AclBindingFilter:
        return AclBindingFilter(
            _resource_type(self.resource_type),
            self.name,
            ResourcePatternType[self.pattern],
            self.principal,
            self.host,
            AclOperation[self.operation],
            AclPermissionType[self.permission],
        )


def _resource_type(name: str) -> ResourceType:
    return ResourceType.BROKER if name == "CLUSTER" else ResourceType[name]


def _enum_name(value: object) -> str:
    return value.name if isinstance(value, Enum) else str(value)


def _from_binding(binding: AclBinding) -> Acl:
    resource_type = _enum_name(binding.restype)
    return Acl(
        "CLUSTER" if resource_type == "BROKER" else resource_type,
        binding.name,
        _enum_name(binding.operation),
        _enum_name(binding.permission_type),
        binding.principal,
        _enum_name(binding.resource_pattern_type),
        binding.host,
    )


def admin_client(bootstrap: str, client_config: Mapping[str, Any] | None = None) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, **(client_config or {})})


def grant(
    bootstrap: str, acls: Iterable[Acl], client_config: Mapping[str, Any] | None = None
) -> None:
    """Create the ACLs; raises (confluent_kafka.KafkaException) if any is refused."""
    bindings = [acl.binding() for acl in acls]
    if not bindings:
        return
    client = admin_client(bootstrap, client_config)  # alive until the answers are in
    futures = client.create_acls(bindings, request_timeout=TIMEOUT)
    for future in futures.values():
        future.result(timeout=TIMEOUT)


def revoke(
    bootstrap: str, acls: Iterable[Acl], client_config: Mapping[str, Any] | None = None
) -> list[Acl]:
    """Delete exactly these ACLs; returns those the broker removed."""
    filters = [acl.filter() for acl in acls]
    if not filters:
        return []
    client = admin_client(bootstrap, client_config)
    futures = client.delete_acls(filters, request_timeout=TIMEOUT)
    return [_from_binding(b) for f in futures.values() for b in f.result(timeout=TIMEOUT)]


def listed(bootstrap: str, client_config: Mapping[str, Any] | None = None) -> set[Acl]:
    """Every ACL the broker holds. librdkafka drops DescribeAcls' error code: a refusal
    (or a broker without an authorizer) reads as no ACLs; the Java tool reports it."""
    # None is librdkafka's "any" for the name, principal and host
    everything = AclBindingFilter(
        ResourceType.ANY,
        None,  # type: ignore[arg-type]
        ResourcePatternType.ANY,
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    client = admin_client(bootstrap, client_config)
    future = client.describe_acls(everything, request_timeout=TIMEOUT)
    return {_from_binding(b) for b in future.result(timeout=TIMEOUT)}


def start_with_acls(
    broker: Broker,
    acls: Iterable[Acl],
    *,
    admin: str = ANONYMOUS,
    client_config: Mapping[str, Any] | None = None,
    settings: Mapping[str, str] | None = None,
) -> Broker:
    """Start ``broker`` (not yet started) with the ACL authorizer on, ``settings`` and
    ``acls`` in place; ``admin`` is a super user only while they are granted."""
    broker.overrides.update({"authorizer.class.name": AUTHORIZER, **(settings or {})})
    super_users = broker.overrides.get("super.users")
    broker.overrides["super.users"] = ";".join(p for p in (super_users, admin) if p)
    broker.start()
    grant(broker.bootstrap, acls, client_config)
    broker.stop()
    if super_users is None:
        del broker.overrides["super.users"]
    else:
        broker.overrides["super.users"] = super_users
    return broker.start()
