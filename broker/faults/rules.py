"""What a test asks the broker to get wrong, as plain data: a fault's kind, what it
applies to, and when it ends. Parsed from the JSON a test sends (`parse_fault`), with
a clear message for anything that does not make sense."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from odradek.protocol.errors import ErrorCode

ERROR, DELAY, LEADERLESS, COORDINATOR, PAUSE_FETCHING = (
    "error",
    "delay",
    "leaderless",
    "coordinator",
    "pause-fetching",
)
KINDS = (ERROR, DELAY, LEADERLESS, COORDINATOR, PAUSE_FETCHING)
COORDINATOR_STATES = {
    "unavailable": ErrorCode.coordinator_not_available,
    "loading": ErrorCode.coordinator_load_in_progress,
    "moved": ErrorCode.not_coordinator,
}
# the longest a fault may wait or last: a test that forgets one does not hang forever
MAX_MS = 3_600_000


class FaultError(ValueError):
    """A fault that cannot be set; the message says why."""


@dataclass(frozen=True)
class Scope:
    """What a fault applies to; an empty scope is everything of its API."""

    topic: str | None = None
    partition: int | None = None
    group: str | None = None
    transactional_id: str | None = None
    client_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass
class Fault:
    id: int
    kind: str
    apis: frozenset[int]  # the API keys it applies to (empty: not request-bound)
    scope: Scope
    error: ErrorCode = ErrorCode.none
    message: str | None = None
    delay_ms: int = 0
    count: int | None = None  # requests left to answer with it; None: until its time ends
    until: float | None = None  # time.monotonic() when it ends; None: until its count ends
    fired: int = 0
    created: float = field(default_factory=time.monotonic)

    @property
    def ended(self) -> bool:
        if self.count is not None and self.count <= 0:
            return True
        return self.until is not None and time.monotonic() >= self.until

    def take(self) -> None:
        """The fault acted once."""
        self.fired += 1
        if self.count is not None:
            self.count -= 1

    def described(self, api_names: Mapping[int, str]) -> dict[str, Any]:
        left_ms = (
            None if self.until is None else max(0, int((self.until - time.monotonic()) * 1000))
        )
        out: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "apis": sorted(api_names.get(key, str(key)) for key in self.apis),
            "scope": self.scope.as_dict(),
            "fired": self.fired,
            "count_left": self.count,
            "ms_left": left_ms,
        }
        if self.kind in (ERROR, COORDINATOR, LEADERLESS):
            out["error"] = self.error.name.upper()
            out["message"] = self.message
        if self.kind == DELAY:
            out["delay_ms"] = self.delay_ms
        return out


def parse_fault(
    fault_id: int,
    spec: Mapping[str, Any],
    api_keys: Mapping[str, int],
    coordinator_apis: frozenset[int],
) -> Fault:
    """A fault from a test's JSON object:

    {"kind": "error", "api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER", "count": 3,
     "topic": "orders", "partition": 0}
    {"kind": "delay", "api": "Fetch", "delay_ms": 2000, "duration_ms": 10000}
    {"kind": "leaderless", "topic": "orders", "partition": 0, "duration_ms": 5000}
    {"kind": "coordinator", "state": "unavailable", "group": "g", "count": 5}
    {"kind": "pause-fetching", "topic": "orders", "partition": 0, "duration_ms": 5000}
    """
    if not isinstance(spec, Mapping):
        raise FaultError("a fault is a JSON object")
    known = {
        "kind", "api", "apis", "error", "message", "delay_ms", "count", "duration_ms",
        "state", "topic", "partition", "group", "transactional_id", "client_id",
    }  # fmt: skip
    unknown = sorted(set(spec) - known)
    if unknown:
        raise FaultError(
            f"unknown fields: {', '.join(unknown)} (known: {', '.join(sorted(known))})"
        )
    kind = spec.get("kind")
    if kind not in KINDS:
        raise FaultError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    scope = Scope(
        topic=_optional(spec, "topic", str),
        partition=_optional(spec, "partition", int),
        group=_optional(spec, "group", str),
        transactional_id=_optional(spec, "transactional_id", str),
        client_id=_optional(spec, "client_id", str),
    )
    if scope.partition is not None and scope.topic is None:
        raise FaultError("a partition goes with its topic")
    count = _optional(spec, "count", int)
    duration = _optional(spec, "duration_ms", int)
    if count is None and duration is None:
        raise FaultError("a fault ends by count or by duration_ms: give one (or both)")
    if count is not None and count <= 0:
        raise FaultError("count must be at least 1")
    if duration is not None and not 0 < duration <= MAX_MS:
        raise FaultError(f"duration_ms must be from 1 to {MAX_MS}")
    until = None if duration is None else time.monotonic() + duration / 1000
    fault = Fault(fault_id, kind, frozenset(), scope, count=count, until=until)
    if kind in (ERROR, DELAY):
        fault.apis = _apis(spec, api_keys)
    if kind == ERROR:
        fault.error = _error_code(spec.get("error"))
        fault.message = _optional(spec, "message", str)
    elif kind == DELAY:
        delay = _optional(spec, "delay_ms", int)
        if delay is None or not 0 < delay <= MAX_MS:
            raise FaultError(f"a delay fault needs delay_ms from 1 to {MAX_MS}")
        fault.delay_ms = delay
    elif kind in (LEADERLESS, PAUSE_FETCHING):
        if scope.topic is None or scope.partition is None:
            raise FaultError(f"a {kind} fault names its topic and partition")
        fault.error = ErrorCode.not_leader_or_follower
    elif kind == COORDINATOR:
        state = spec.get("state", "unavailable")
        if state not in COORDINATOR_STATES:
            raise FaultError(f"state must be one of {', '.join(COORDINATOR_STATES)}")
        if scope.group is None and scope.transactional_id is None:
            raise FaultError("a coordinator fault names a group or a transactional_id")
        fault.error = COORDINATOR_STATES[state]
        fault.apis = coordinator_apis
    return fault


def _optional(spec: Mapping[str, Any], name: str, kind: type) -> Any:
    value = spec.get(name)
    if value is None:
        return None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise FaultError(f"{name} must be a {'number' if kind is int else 'string'}")
    return value


def _apis(spec: Mapping[str, Any], api_keys: Mapping[str, int]) -> frozenset[int]:
    names = spec.get("apis", [spec["api"]] if "api" in spec else None)
    if not isinstance(names, list) or not names:
        raise FaultError('name the API: "api": "Produce" (or "apis": [...])')
    keys = set()
    for name in names:
        key = api_keys.get(name.replace("_", "").lower()) if isinstance(name, str) else name
        if not isinstance(key, int) or key not in api_keys.values():
            raise FaultError(f"unknown API {name!r} (by name as Kafka names it, or by key)")
        keys.add(key)
    return frozenset(keys)


def _error_code(name: Any) -> ErrorCode:
    if isinstance(name, int) and not isinstance(name, bool):
        try:
            code = ErrorCode(name)
        except ValueError:
            raise FaultError(f"unknown error code {name}") from None
    elif isinstance(name, str):
        try:
            code = ErrorCode[name.lower()]
        except KeyError:
            raise FaultError(
                f"unknown error {name!r} (Kafka's names, as NOT_LEADER_OR_FOLLOWER)"
            ) from None
    else:
        raise FaultError('an error fault names its error: "error": "NOT_LEADER_OR_FOLLOWER"')
    if code == ErrorCode.none:
        raise FaultError("the error of an error fault is not NONE")
    return code
