"""ACL bindings, the filters of the ACL admin APIs, and their store in the data directory.

A binding says: on a resource pattern (type, name, LITERAL or PREFIXED), a principal
("User:alice", or "User:*" for everyone) from a host (an address, or "*") is allowed or
denied an operation. `AclIndex` finds the bindings that apply to one resource: the
literal ones on its name, the literal wildcard "*" of its type, and the prefixed ones
whose name starts its name. `AclBinding.decides` is Kafka's rule for one binding:
ALL covers every operation; an ALLOW of READ, WRITE, DELETE or ALTER also allows
DESCRIBE, and one of ALTER_CONFIGS also DESCRIBE_CONFIGS; a DENY denies only its own
operation (or every one, for ALL).

`acls.json` holds every binding. A change rewrites it whole: written to a temporary
file, fsynced, renamed over the old one and the directory fsynced, so a crash leaves
either the old file or the new one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from odradek.broker.security.resources import (
    CLUSTER_NAME,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from odradek.storage.document_file import DocumentFile

FILE_NAME = "acls.json"
FORMAT_VERSION = 1
WILDCARD = "*"  # a literal resource name or a host that matches any
WILDCARD_PRINCIPAL = "User:*"

_IMPLY_DESCRIBE = frozenset(
    {Operation.DESCRIBE, Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER}
)
_IMPLY_DESCRIBE_CONFIGS = frozenset({Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS})

# What each resource type has to authorize: the bits of the `authorized_operations`
# fields (Kafka's AclEntry.supportedOperations).
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[Operation, ...]] = {
    ResourceType.TOPIC: (
        Operation.READ,
        Operation.WRITE,
        Operation.CREATE,
        Operation.DESCRIBE,
        Operation.DELETE,
        Operation.ALTER,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (
        Operation.READ,
        Operation.DESCRIBE,
        Operation.DELETE,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
    ),
    ResourceType.CLUSTER: (
        Operation.CREATE,
        Operation.CLUSTER_ACTION,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
        Operation.IDEMPOTENT_WRITE,
        Operation.ALTER,
        Operation.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (Operation.DESCRIBE, Operation.WRITE),
    ResourceType.DELEGATION_TOKEN: (Operation.DESCRIBE,),
    ResourceType.USER: (Operation.CREATE_TOKENS, Operation.DESCRIBE_TOKENS),
}


class AclFileError(RuntimeError):
    """The ACL file exists but cannot be read; the message names it."""


def _code(enum: type[Any], value: int) -> Any:
    """A wire code as the enum; codes Kafka does not know become UNKNOWN."""
    try:
        return enum(value)
    except ValueError:
        return enum.UNKNOWN


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission: Permission

    @classmethod
    def from_wire(
        cls,
        resource_type: int,
        name: str,
        pattern_type: int,
        principal: str,
        host: str,
        operation: int,
        permission: int,
    ) -> AclBinding:
        return cls(
            _code(ResourceType, resource_type),
            name,
            _code(PatternType, pattern_type),
            principal,
            host,
            _code(Operation, operation),
            _code(Permission, permission),
        )

    def decides(self, principal: str, host: str, operation: Operation) -> Permission | None:
        """ALLOW or DENY when this binding applies to the principal, host and operation
        (its resource is assumed to match), else None."""
        if self.principal != principal and self.principal != WILDCARD_PRINCIPAL:
            return None
        if self.host != WILDCARD and self.host != host:
            return None
        if self.operation != Operation.ALL and self.operation != operation:
            if self.permission != Permission.ALLOW:
                return None
            if operation == Operation.DESCRIBE:
                implied = self.operation in _IMPLY_DESCRIBE
            elif operation == Operation.DESCRIBE_CONFIGS:
                implied = self.operation in _IMPLY_DESCRIBE_CONFIGS
            else:
                implied = False
            if not implied:
                return None
        return self.permission


@dataclass(frozen=True, slots=True)
class AclFilter:
    """What DescribeAcls and DeleteAcls select: ANY matches every value of a field, a
    null name / principal / host any; pattern type MATCH selects the bindings that
    would apply to the named resource (literal, wildcard and prefixed ones)."""

    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: Operation
    permission: Permission

    @classmethod
    def from_wire(
        cls,
        resource_type: int,
        name: str | None,
        pattern_type: int,
        principal: str | None,
        host: str | None,
        operation: int,
        permission: int,
    ) -> AclFilter:
        return cls(
            _code(ResourceType, resource_type),
            name,
            _code(PatternType, pattern_type),
            principal,
            host,
            _code(Operation, operation),
            _code(Permission, permission),
        )

    def problem(self) -> str | None:
        """Why DeleteAcls cannot use this filter (INVALID_REQUEST), or None, in Kafka's
        words. (DescribeAcls uses it anyway: a field of a code Kafka does not know
        matches no binding.)"""
        if self.resource_type == ResourceType.UNKNOWN or self.pattern_type == PatternType.UNKNOWN:
            return "Unknown patternFilter."
        if self.operation == Operation.UNKNOWN or self.permission == Permission.UNKNOWN:
            return "Unknown entryFilter."
        return None

    def matches(self, binding: AclBinding) -> bool:
        if self.resource_type not in (ResourceType.ANY, binding.resource_type):
            return False
        exact_pattern = self.pattern_type not in (PatternType.ANY, PatternType.MATCH)
        if exact_pattern and self.pattern_type != binding.pattern_type:
            return False
        if self.name is not None and not self._name_matches(binding):
            return False
        if self.principal is not None and self.principal != binding.principal:
            return False
        if self.host is not None and self.host != binding.host:
            return False
        if self.operation not in (Operation.ANY, binding.operation):
            return False
        return self.permission in (Permission.ANY, binding.permission)

    def _name_matches(self, binding: AclBinding) -> bool:
        assert self.name is not None
        if self.pattern_type != PatternType.MATCH:
            return self.name == binding.name
        if binding.pattern_type == PatternType.LITERAL:
            return binding.name in (self.name, WILDCARD)
        return self.name.startswith(binding.name)  # PREFIXED


def creation_problem(binding: AclBinding) -> str | None:
    """Why this binding cannot be created (INVALID_REQUEST), or None, in Kafka's words
    and order: its AclApis checks the name, then its controller the rest."""
    if binding.resource_type == ResourceType.CLUSTER and binding.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not binding.name:
        return "Invalid empty resource name"
    if binding.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resourceType {binding.resource_type.name}"
    if binding.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {binding.pattern_type.name}"
    if binding.operation in (Operation.UNKNOWN, Operation.ANY):
        return f"Invalid operation {binding.operation.name}"
    if binding.permission not in (Permission.ALLOW, Permission.DENY):
        return f"Invalid permissionType {binding.permission.name}"
    if ":" not in binding.principal:
        return (
            f"Could not parse principal from `{binding.principal}` (no colon is present "
            "separating the principal type from the principal name)"
        )
    if not binding.host:
        return "Host pattern cannot be null or empty"
    return None


class AclIndex:
    """Bindings arranged for looking up the ones on one resource."""

    def __init__(self, bindings: Iterable[AclBinding]) -> None:
        self.literal: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        self.prefixed: dict[ResourceType, list[AclBinding]] = {}
        self.by_type: dict[ResourceType, list[AclBinding]] = {}
        for binding in bindings:
            self.by_type.setdefault(binding.resource_type, []).append(binding)
            if binding.pattern_type == PatternType.PREFIXED:
                self.prefixed.setdefault(binding.resource_type, []).append(binding)
            else:
                key = (binding.resource_type, binding.name)
                self.literal.setdefault(key, []).append(binding)

    def on_resource(self, resource_type: ResourceType, name: str) -> list[AclBinding]:
        found = list(self.literal.get((resource_type, name), ()))
        if name != WILDCARD:
            found.extend(self.literal.get((resource_type, WILDCARD), ()))
        found.extend(b for b in self.prefixed.get(resource_type, ()) if name.startswith(b.name))
        return found

    def of_type(self, resource_type: ResourceType) -> Sequence[AclBinding]:
        return self.by_type.get(resource_type, ())


class AclStore:
    """Every binding, kept in `acls.json` of the data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME
        self.bindings: frozenset[AclBinding] = frozenset()
        self.index = AclIndex(())
        self._file = DocumentFile(self.path, "ACLs", encode_document, _read, AclFileError)

    def load(self) -> None:
        bindings = self._file.read()
        if bindings is not None:
            self._use(bindings)

    def matching(self, acl_filter: AclFilter) -> list[AclBinding]:
        return matching(self.bindings, acl_filter)

    async def create(self, new: Iterable[AclBinding]) -> None:
        """Add bindings (those already there stay once); returns once the file is
        durable. Raises OSError (nothing changed) if it cannot be written."""
        async with self._file.lock:
            await self._save(self.bindings | frozenset(new))

    async def delete(self, filters: Sequence[AclFilter]) -> list[list[AclBinding]]:
        """Remove every binding some filter matches; returns each filter's matches."""
        async with self._file.lock:
            matched = [self.matching(f) for f in filters]
            gone = {binding for bindings in matched for binding in bindings}
            if gone:
                await self._save(self.bindings - gone)
            return matched

    async def _save(self, bindings: frozenset[AclBinding]) -> None:
        if bindings == self.bindings:
            return
        await self._file.write(bindings)
        self._use(bindings)

    def adopt(self, document: bytes) -> None:
        """Every binding as a cluster's metadata has them (its brokers follow the
        controller), kept in the file too for the next start."""
        bindings = self._file.adopted(document, self.bindings)
        if bindings is not None:
            self._use(bindings)

    def _use(self, bindings: frozenset[AclBinding]) -> None:
        self.bindings = bindings
        self.index = AclIndex(bindings)


def matching(bindings: Iterable[AclBinding], acl_filter: AclFilter) -> list[AclBinding]:
    """The bindings a filter selects, in a stable order."""
    return sorted((b for b in bindings if acl_filter.matches(b)), key=sort_key)


def encode_document(bindings: Iterable[AclBinding]) -> bytes:
    """The bindings as `acls.json` holds them (and a cluster's metadata log)."""
    return json.dumps(_encode(bindings), indent=1).encode()


def decode_document(document: bytes | None) -> frozenset[AclBinding]:
    return frozenset() if not document else _decode(json.loads(document))


def _read(document: bytes) -> frozenset[AclBinding]:
    """The bindings of acls.json; unlike decode_document, an empty file is refused
    rather than read as no bindings."""
    return _decode(json.loads(document))


def sort_key(binding: AclBinding) -> tuple[Any, ...]:
    return (
        binding.resource_type,
        binding.name,
        binding.pattern_type,
        binding.principal,
        binding.host,
        binding.operation,
        binding.permission,
    )


def _encode(bindings: Iterable[AclBinding]) -> dict[str, Any]:
    return {
        "version": FORMAT_VERSION,
        "acls": [
            {
                "resource_type": b.resource_type.name,
                "name": b.name,
                "pattern_type": b.pattern_type.name,
                "principal": b.principal,
                "host": b.host,
                "operation": b.operation.name,
                "permission": b.permission.name,
            }
            for b in sorted(bindings, key=sort_key)
        ],
    }


def _decode(document: Any) -> frozenset[AclBinding]:
    if document.get("version") != FORMAT_VERSION:
        raise ValueError(f"unknown format version {document.get('version')!r}")
    bindings = set()
    for entry in document["acls"]:
        binding = AclBinding(
            ResourceType[entry["resource_type"]],
            str(entry["name"]),
            PatternType[entry["pattern_type"]],
            str(entry["principal"]),
            str(entry["host"]),
            Operation[entry["operation"]],
            Permission[entry["permission"]],
        )
        problem = creation_problem(binding)
        if problem is not None:
            raise ValueError(f"invalid ACL {entry}: {problem}")
        bindings.add(binding)
    return frozenset(bindings)
