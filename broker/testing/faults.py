"""Faults from a test: the control endpoint of a broker started with faults enabled
(``Broker(faults=True)``, ``odradek --enable-faults``), through plain HTTP on its
listener, so this works for a broker in a container too (``FaultControl("host:port")``).

    faults = broker.faults
    with faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", count=3, topic="orders"):
        ...                                  # the producer retries, then gets through
    faults.delay("Fetch", 2000, duration_ms=10_000)
    faults.leaderless("orders", 0, duration_ms=5000)
    faults.coordinator("unavailable", group="billing", count=5)
    faults.close_connections(client_id="worker-1")
    cluster.controller.faults.move_leader("orders", 0)   # (Cluster(faults=True))
    faults.clear()

Every fault ends by its count (requests it answers) or its time (duration_ms), or
both, whichever comes first; `clear()` ends them all. A refused fault raises
FaultRefused with the broker's reason."""

from __future__ import annotations

import contextlib
import json
import urllib.error
import urllib.request
from types import TracebackType
from typing import Any

TIMEOUT_S = 10.0


class FaultRefused(RuntimeError):
    """The broker refused the fault (faults off, or a fault that makes no sense)."""


class Fault:
    """One fault in force: ``remove()`` it, or leave the ``with`` block."""

    def __init__(self, control: FaultControl, described: dict[str, Any]) -> None:
        self.control = control
        self.id = int(described["id"])
        self.described = described

    def remove(self) -> None:
        self.control.remove(self.id)

    def fired(self) -> int:
        """How many times it has acted (0 once it is over and gone)."""
        for fault in self.control.in_force():
            if fault["id"] == self.id:
                return int(fault["fired"])
        return 0

    def __enter__(self) -> Fault:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.remove()


class FaultControl:
    def __init__(self, bootstrap: str) -> None:
        self.url = f"http://{bootstrap.split(',')[0]}/faults"

    # -- faults ----------------------------------------------------------------

    def error(self, api: str | int, error: str | int, **scope_and_end: Any) -> Fault:
        """Answer requests of ``api`` with ``error`` (Kafka's name, or its code)."""
        return self.add(kind="error", api=api, error=error, **scope_and_end)

    def delay(self, api: str | int, delay_ms: int, **scope_and_end: Any) -> Fault:
        """Hold the answers of ``api`` back ``delay_ms``."""
        return self.add(kind="delay", api=api, delay_ms=delay_ms, **scope_and_end)

    def leaderless(self, topic: str, partition: int, **end: Any) -> Fault:
        """The partition without a leader: Metadata says so, its leader's requests are
        answered NOT_LEADER_OR_FOLLOWER."""
        return self.add(kind="leaderless", topic=topic, partition=partition, **end)

    def coordinator(self, state: str = "unavailable", **scope_and_end: Any) -> Fault:
        """A group's or a transactional id's coordinator ``unavailable``, ``loading``
        or ``moved`` (give ``group=`` or ``transactional_id=``)."""
        return self.add(kind="coordinator", state=state, **scope_and_end)

    def pause_fetching(self, topic: str, partition: int, **end: Any) -> Fault:
        """In a cluster, this node's replica of the partition stops fetching; a move
        of its replica to another log directory (AlterReplicaLogDirs) stops copying."""
        return self.add(kind="pause-fetching", topic=topic, partition=partition, **end)

    def add(self, **spec: Any) -> Fault:
        """Any fault, as the endpoint takes it (see broker/faults/rules.py)."""
        spec = {key: value for key, value in spec.items() if value is not None}
        return Fault(self, self._call("POST", "", spec))

    def move_leader(self, topic: str, partition: int, to: int | None = None) -> int:
        """On a cluster's controller (``cluster.controller.faults``): another in-sync
        replica (``to``, or the next) leads the partition; its node id."""
        body: dict[str, Any] = {"topic": topic, "partition": partition, "to": to}
        return int(self._call("POST", "/move-leader", body)["leader"])

    # -- the rest --------------------------------------------------------------

    def close_connections(self, client_id: str | None = None) -> int:
        """Close the connections of a client id (of every client: None); how many."""
        body = {} if client_id is None else {"client_id": client_id}
        return int(self._call("POST", "/close-connections", body)["closed"])

    def in_force(self) -> list[dict[str, Any]]:
        return list(self._call("GET", "")["faults"])

    def remove(self, fault_id: int) -> None:
        with contextlib.suppress(FaultRefused):  # already over
            self._call("DELETE", f"/{fault_id}")

    def clear(self) -> int:
        return int(self._call("DELETE", "")["removed"])

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            try:
                reason = json.loads(exc.read()).get("error", exc.reason)
            except ValueError:
                reason = exc.reason
            raise FaultRefused(f"{method} {self.url}{path}: {reason}") from None
