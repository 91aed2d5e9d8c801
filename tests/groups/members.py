"""Group members driven from tests: Java consumers (KafkaTool ``group-member``) running
as processes, and helpers to wait until a group has settled on one assignment."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from helpers import java
from helpers.java import JavaToolError

FAST = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500}
# KIP-848 members: the broker sets their session and heartbeat interval
CONSUMER_PROTOCOL = {"group.protocol": "consumer"}

RANGE = "org.apache.kafka.clients.consumer.RangeAssignor"
ROUNDROBIN = "org.apache.kafka.clients.consumer.RoundRobinAssignor"
STICKY = "org.apache.kafka.clients.consumer.StickyAssignor"
COOPERATIVE = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"


def tp(topic: str, partition: int) -> str:
    return f"{topic}:{partition}"


def all_partitions(topics: Mapping[str, int]) -> set[str]:
    return {tp(t, p) for t, n in topics.items() for p in range(n)}


class JavaMember:
    """One Java consumer in a group. Events: started, assigned, revoked, lost,
    assignment, committed, polled, closed (each with assignment and generation)."""

    def __init__(
        self,
        bootstrap: str,
        group: str,
        topics: Sequence[str],
        client_id: str,
        props: Mapping[str, object] | None = None,
    ) -> None:
        self.client_id = client_id
        consumer_protocol = (props or {}).get("group.protocol") == "consumer"
        base = {} if consumer_protocol else FAST
        all_props: dict[str, object] = {"client.id": client_id, **base, **(props or {})}
        args = ["group-member", "--bootstrap", bootstrap, "--group", group]
        for t in topics:
            args += ["--topic", t]
        args += java.props_args(all_props)
        self.args = args
        self.proc = subprocess.Popen(
            java.command(args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.events: list[dict[str, Any]] = []
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._lock = threading.Lock()
        self._stderr: list[str] = []
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.strip()
            if line.startswith("{"):
                item = json.loads(line)
                with self._lock:
                    self.events.append(item)
                self._queue.put(item)
        self._queue.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line)

    def describe(self) -> str:
        return (
            f"{self.client_id}: events {self.snapshot()}\nstderr: {''.join(self._stderr)[-3000:]}"
        )

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.events)

    def errors(self) -> list[dict[str, Any]]:
        return [e["error"] for e in self.snapshot() if "error" in e]

    def rebalance_events(self) -> list[dict[str, Any]]:
        return [e for e in self.snapshot() if e.get("event") in ("assigned", "revoked", "lost")]

    def assignment(self) -> set[str] | None:
        """The assignment after the last assigned/revoked/lost callback (None before one)."""
        evs = self.rebalance_events()
        return set(evs[-1]["assignment"]) if evs else None

    def generation(self) -> int:
        evs = [e for e in self.rebalance_events() if e["event"] == "assigned"]
        return int(evs[-1]["generation"]) if evs else -1

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def wait_event(self, name: str, timeout: float = 30.0, after: int = 0) -> dict[str, Any]:
        """The first event called ``name`` at index >= ``after`` in ``events``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            evs = self.snapshot()
            for e in evs[after:]:
                if e.get("event") == name:
                    return e
            if self.errors():
                raise JavaToolError(self.describe())
            if self.proc.poll() is not None and self._queue.empty():
                time.sleep(0.2)
                if not any(e.get("event") == name for e in self.snapshot()[after:]):
                    raise JavaToolError(
                        f"member exited ({self.proc.returncode})\n{self.describe()}"
                    )
            time.sleep(0.05)
        raise JavaToolError(f"no {name!r} event within {timeout}s\n{self.describe()}")

    def commit(
        self, offsets: Mapping[str, int] | None = None, timeout: float = 20.0
    ) -> dict[str, Any]:
        mark = len(self.snapshot())
        words = " ".join(f"{k}={v}" for k, v in (offsets or {}).items())
        self.send(f"commit {words}".strip())
        return self.wait_event("committed", timeout, after=mark)

    def close(self, timeout: float = 20.0) -> None:
        """Leave the group (consumer.close()) and exit."""
        if self.proc.poll() is None:
            try:
                self.send("close")
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()

    def kill(self) -> None:
        """SIGKILL: the member vanishes without leaving the group."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class Members:
    """Context manager that starts Java members and kills leftovers at the end."""

    def __init__(self, bootstrap: str, group: str) -> None:
        self.bootstrap = bootstrap
        self.group = group
        self.members: list[JavaMember] = []

    def start(
        self, client_id: str, topics: Sequence[str], props: Mapping[str, object] | None = None
    ) -> JavaMember:
        m = JavaMember(self.bootstrap, self.group, topics, client_id, props)
        self.members.append(m)
        return m

    def __enter__(self) -> Members:
        return self

    def __exit__(self, *exc: object) -> None:
        for m in self.members:
            m.kill()


def settled(
    members: Iterable[JavaMember], partitions: set[str], same_generation: bool = True
) -> dict[str, set[str]] | None:
    """The assignment when every member has one, they share a generation (classic
    protocol: consumer-protocol members report the epoch of their last callback), cover
    every partition and overlap nowhere; else None."""
    out: dict[str, set[str]] = {}
    generations = set()
    for m in members:
        a = m.assignment()
        if a is None or m.generation() < 0:
            return None
        out[m.client_id] = a
        generations.add(m.generation())
    union: set[str] = set().union(*out.values()) if out else set()
    if (same_generation and len(generations) != 1) or union != partitions:
        return None
    if sum(len(a) for a in out.values()) != len(union):
        return None
    return out


def wait_settled(
    members: Sequence[JavaMember],
    partitions: set[str],
    timeout: float = 45.0,
    extra: Callable[[dict[str, set[str]]], bool] | None = None,
    same_generation: bool = True,
) -> dict[str, set[str]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for m in members:
            if m.errors() or m.proc.poll() is not None:
                raise JavaToolError(f"member failed\n{m.describe()}")
        got = settled(members, partitions, same_generation)
        if got is not None and (extra is None or extra(got)):
            return got
        time.sleep(0.1)
    raise JavaToolError(
        f"group did not settle on {sorted(partitions)} within {timeout}s\n"
        + "\n".join(m.describe() for m in members)
    )


def wait_until(
    condition: Callable[[], Any], timeout: float, what: str, interval: float = 0.1
) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)
