"""Client quotas (AlterClientQuotas / DescribeClientQuotas), kept in the data directory.

An entity is a set of (type, name) pairs: user, client-id (together or alone) or ip,
a null name being that type's default. Each entity has some of the quota keys set.
`client-quotas.json` holds them all and is rewritten whole on every change (written
aside, fsynced, renamed over the old one). In a cluster they live in the metadata log
instead (broker/cluster/controller_documents.py) and every broker follows them
(adopt), keeping this file as its copy.

The rules of an alteration and of a describe filter are Kafka's, with its messages.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from odradek.protocol.errors import ErrorCode
from odradek.storage.document_file import DocumentFile

FILE_NAME = "client-quotas.json"
FORMAT_VERSION = 1

USER, CLIENT_ID, IP = "user", "client-id", "ip"
PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"

# key -> its type as Kafka defines it (integral types refuse fractions)
USER_AND_CLIENT_KEYS = {
    PRODUCER_BYTE_RATE: "LONG",
    CONSUMER_BYTE_RATE: "LONG",
    REQUEST_PERCENTAGE: "DOUBLE",
    CONTROLLER_MUTATION_RATE: "DOUBLE",
}
IP_KEYS = {CONNECTION_CREATION_RATE: "INT"}
LARGEST = {"INT": (2**31 - 1, "an INT"), "LONG": (float(2**63 - 1), "a LONG")}

# the order Kafka's entity maps list their types in (a Java HashMap of them)
TYPE_ORDER = {CLIENT_ID: 0, USER: 1, IP: 2}

Entity = tuple[tuple[str, str | None], ...]  # (type, name) pairs in TYPE_ORDER
Quotas = dict[Entity, dict[str, float]]
Problem = tuple[ErrorCode, str]
Alteration = tuple[Entity, list[tuple[str, float | None]]]  # a None value removes the key

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


class QuotaRequestError(ValueError):
    """A describe filter Kafka refuses as a whole: its error code and message."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


class ClientQuotasFileError(RuntimeError):
    """The quotas file exists but cannot be read; the message names it."""


def entity_of(pairs: Iterable[tuple[str, str | None]]) -> Entity:
    """An entity from a request's (type, name) list; a type named twice keeps its last
    name, as Kafka's map of them does."""
    by_type = dict(pairs)
    return tuple(sorted(by_type.items(), key=lambda pair: TYPE_ORDER.get(pair[0], 3)))


def entity_text(entity: Entity) -> str:
    """The entity as Kafka's messages show it."""
    entries = ", ".join(f"{kind}={'null' if name is None else name}" for kind, name in entity)
    return f"ClientQuotaEntity(entries={{{entries}}})"


async def unresolvable_hosts(alterations: Sequence[Alteration]) -> frozenset[str]:
    """The ip entity names that are neither an address nor a host name that resolves
    (Kafka's controller resolves them too)."""
    loop = asyncio.get_running_loop()
    found = set()
    for entity, _ops in alterations:
        name = dict(entity).get(IP)
        if not name:
            continue
        try:
            ipaddress.ip_address(name)
            continue
        except ValueError:
            pass
        try:
            await loop.getaddrinfo(name, None)
        except (OSError, UnicodeError):
            found.add(name)
    return frozenset(found)


def entity_problem(
    entity: Entity, unresolvable: frozenset[str] = frozenset()
) -> tuple[Problem | None, dict[str, str]]:
    """Whether Kafka's controller takes the entity; the keys it may set and their types."""
    if not entity:
        return (ErrorCode.invalid_request, "Invalid empty client quota entity"), {}
    for kind, name in entity:
        if kind not in TYPE_ORDER:
            return (ErrorCode.invalid_request, f"Unhandled client quota entity type: {kind}"), {}
        if name == "":
            return (ErrorCode.invalid_request, f"Empty {kind} not supported"), {}
    kinds = dict(entity)
    if IP in kinds:
        if len(kinds) > 1:
            message = (
                "Invalid quota entity combination, IP entity should"
                "not be combined with User or ClientId"
            )
            return (ErrorCode.invalid_request, message), {}
        ip = kinds[IP]
        if ip is not None and ip in unresolvable:
            return (ErrorCode.invalid_request, f"{ip} is not a valid IP or resolvable host."), {}
        return None, IP_KEYS
    return None, USER_AND_CLIENT_KEYS


def value_problem(keys: Mapping[str, str], key: str, value: float) -> Problem | None:
    kind = keys.get(key)
    if kind is None:
        return ErrorCode.invalid_request, f"Invalid configuration key {key}"
    if not value > 0.0:
        return ErrorCode.invalid_request, f"Quota {key} must be greater than 0"
    if kind == "DOUBLE":
        return None
    largest, named = LARGEST[kind]
    if value > largest:
        return ErrorCode.invalid_request, f"Proposed value for {key} is too large for {named}."
    if abs(math.fmod(value, 1.0)) > 1e-6:
        return ErrorCode.invalid_request, f"{key} cannot be a fractional value."
    return None


def plan_alterations(
    current: Quotas, alterations: Sequence[Alteration], unresolvable: frozenset[str] = frozenset()
) -> tuple[list[tuple[Entity, Problem | None]], Quotas]:
    """Kafka's controller's checks of an AlterClientQuotas: each entity's outcome (in
    the order first named) and the quotas once the accepted changes apply. A key named
    twice for an entity, or an entity named twice, answers "Ignoring duplicate
    entity" for it (what an earlier mention of that entity changed still applies)."""
    outcome: dict[Entity, Problem | None] = {}
    after = {entity: dict(values) for entity, values in current.items()}
    for entity, ops in alterations:
        changes: dict[str, float | None] = {}
        duplicate_key = False
        for key, value in ops:
            if key in changes:
                duplicate_key = True
            else:
                changes[key] = value
        if duplicate_key or entity in outcome:
            outcome[entity] = (
                ErrorCode.invalid_request,
                f"Ignoring duplicate entity {entity_text(entity)}",
            )
            continue
        problem, keys = entity_problem(entity, unresolvable)
        if problem is None:
            for key, value in changes.items():
                if value is not None:
                    problem = value_problem(keys, key, value)
                    if problem is not None:
                        break
        outcome[entity] = problem
        if problem is not None:
            continue
        values = after.setdefault(entity, {})
        for key, value in changes.items():
            if value is None:
                values.pop(key, None)
            else:
                values[key] = float(value)
        if not values:
            del after[entity]
    return list(outcome.items()), after


def describe(quotas: Quotas, components: Sequence[Any], strict: bool) -> list[Entity]:
    """The entities a DescribeClientQuotas filter matches (components with entity_type,
    match_type, match). Raises QuotaRequestError for a filter Kafka refuses."""
    exact: dict[str, str | None] = {}
    specified: set[str] = set()
    for component in components:
        kind = component.entity_type
        if not kind:
            raise QuotaRequestError(ErrorCode.invalid_request, "Invalid empty entity type.")
        if kind in exact or kind in specified:
            raise QuotaRequestError(
                ErrorCode.invalid_request,
                f"Entity type {kind} cannot appear more than once in the filter.",
            )
        if kind not in TYPE_ORDER:
            raise QuotaRequestError(
                ErrorCode.unsupported_version, f"Unsupported entity type {kind}"
            )
        match_type, match = component.match_type, component.match
        if match_type == MATCH_EXACT:
            if match is None:
                raise QuotaRequestError(
                    ErrorCode.invalid_request,
                    "Request specified MATCH_TYPE_EXACT, but set match string to null.",
                )
            exact[kind] = match
        elif match_type == MATCH_DEFAULT:
            if match is not None:
                raise QuotaRequestError(
                    ErrorCode.invalid_request,
                    "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
                )
            exact[kind] = None
        elif match_type == MATCH_SPECIFIED:
            if match is not None:
                raise QuotaRequestError(
                    ErrorCode.invalid_request,
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
                )
            specified.add(kind)
        else:
            raise QuotaRequestError(ErrorCode.invalid_request, f"Unknown match type {match_type}")
    named = set(exact) | specified
    if IP in named and (USER in named or CLIENT_ID in named):
        raise QuotaRequestError(
            ErrorCode.invalid_request,
            "Invalid entity filter component combination. IP filter component should not "
            "be used with user or clientId filter component.",
        )
    found = []
    for entity in quotas:
        kinds = dict(entity)
        if strict and len(kinds) != len(named):
            continue
        if all(kind in kinds and kinds[kind] == name for kind, name in exact.items()) and all(
            kind in kinds for kind in specified
        ):
            found.append(entity)
    return found


class ClientQuotaStore:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME
        self._quotas: Quotas = {}
        self._file = DocumentFile(
            self.path, "client quotas", encode_document, decode_document, ClientQuotasFileError
        )
        self._watchers: list[Callable[[Quotas], None]] = []

    def watch(self, watcher: Callable[[Quotas], None]) -> None:
        """Call `watcher` with the quotas now and after every change."""
        self._watchers.append(watcher)
        watcher(self._quotas)

    def _set(self, quotas: Quotas) -> None:
        self._quotas = quotas
        for watcher in self._watchers:
            watcher(quotas)

    def load(self) -> None:
        quotas = self._file.read()
        if quotas is not None:
            self._set(quotas)

    def quotas(self) -> Quotas:
        return self._quotas

    async def alter(
        self, alterations: Sequence[Alteration], validate_only: bool, unresolvable: frozenset[str]
    ) -> list[tuple[Entity, Problem | None]]:
        """Check and apply; returns once the file is durable. Raises OSError (nothing
        changed) if it cannot be written."""
        async with self._file.lock:
            outcome, after = plan_alterations(self._quotas, alterations, unresolvable)
            if not validate_only and after != self._quotas:
                await self._file.write(after)
                self._set(after)
            return outcome

    def adopt(self, document: bytes) -> None:
        """The quotas as a cluster's metadata has them, kept in the file too."""
        quotas = self._file.adopted(document, self._quotas)
        if quotas is not None:
            self._set(quotas)


def encode_document(quotas: Quotas) -> bytes:
    entries = [
        {"entity": [[kind, name] for kind, name in entity], "values": dict(sorted(values.items()))}
        for entity, values in sorted(quotas.items(), key=lambda item: repr(item[0]))
    ]
    return json.dumps({"version": FORMAT_VERSION, "quotas": entries}, indent=1).encode()


def decode_document(document: bytes | None) -> Quotas:
    if not document:
        return {}
    data = json.loads(document)
    if data.get("version") != FORMAT_VERSION:
        raise ValueError(f"unknown format version {data.get('version')!r}")
    quotas: Quotas = {}
    for entry in data["quotas"]:
        entity = entity_of(
            (str(kind), None if name is None else str(name)) for kind, name in entry["entity"]
        )
        quotas[entity] = {str(key): float(value) for key, value in entry["values"].items()}
    return quotas
