"""Differential conformance: one scenario, run against Odradek and against Apache Kafka
4.4 through the same wire client, and what each answered compared.

A scenario is a function of a `Run`: it creates what it needs under names the run
makes unique (`run.name("orders")`), sends requests with `run.call(...)`, and its
observable results are the answers it collected (`run.record(...)`, or every answer
`run.call` got). Before comparing, what legitimately differs between two brokers is
set aside: cluster and node ids, hosts and ports, topic ids, member and producer ids,
throttle times and timestamps. Error messages are compared where Kafka sends one.

Differences a scenario may show are listed, with their reason, in the README's
"Differences from Apache Kafka" table; the suite fails on any other, and on a listed
one that no longer shows, so that the table stays true.
"""

from __future__ import annotations

import dataclasses
import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from helpers.wire import WireClient

README = Path(__file__).resolve().parents[2] / "README.md"

# fields whose values differ between any two brokers, or between two runs
SET_ASIDE = {
    "throttle_time",
    "cluster_id",
    "controller_id",
    "node_id",
    "leader_id",
    "coordinator_id",
    "broker_id",
    "host",
    "port",
    "rack",
    "topic_id",
    "member_id",
    "leader",  # a member id (JoinGroup)
    "producer_id",
    "timestamp",
    "log_append_time",
    "log_start_offset_time",
    "max_timestamp",
    "transaction_start_time_ms",
    "last_timestamp",
    "session_id",
    "authorized_operations",
    "cluster_authorized_operations",
    "topic_authorized_operations",
    "brokers",
    "supported_features",
    "finalized_features",
    "finalized_features_epoch",
    "zk_migration_ready",
    "acquisition_lock_timeout",
    "coordinators_host",
}

Step = dict[str, Any]
ScenarioFunction = Callable[["Run"], None]


@dataclass
class Scenario:
    id: str
    about: str
    run: ScenarioFunction
    secure: bool = False  # run against the pair with an authorizer and a SASL listener


SCENARIOS: dict[str, Scenario] = {}


def scenario(
    scenario_id: str, about: str, secure: bool = False
) -> Callable[[ScenarioFunction], ScenarioFunction]:
    def register(function: ScenarioFunction) -> ScenarioFunction:
        assert scenario_id not in SCENARIOS, f"scenario {scenario_id} twice"
        SCENARIOS[scenario_id] = Scenario(scenario_id, about, function, secure)
        return function

    return register


@dataclass
class Run:
    """One scenario against one broker."""

    bootstrap: str
    sasl_bootstrap: str = ""  # the SASL_PLAINTEXT listener of a secure scenario's broker
    prefix: str = field(default_factory=lambda: f"cf{uuid.uuid4().hex[:10]}")
    steps: list[Step] = field(default_factory=list)
    _clients: list[WireClient] = field(default_factory=list)

    def name(self, base: str) -> str:
        """A name of this run's own (topics, groups, transactional ids)."""
        return f"{self.prefix}-{base}"

    def client(self, sasl: bool = False) -> WireClient:
        """Another connection: to the PLAINTEXT listener, or to the SASL one."""
        assert self.sasl_bootstrap or not sasl, "a SASL listener is for secure scenarios"
        client = WireClient(self.sasl_bootstrap if sasl else self.bootstrap)
        self._clients.append(client)
        return client

    def call(
        self,
        api_key: int,
        version: int,
        body: dict[str, Any],
        client: WireClient | None = None,
        view: Callable[[Any], Any] | None = None,
    ) -> Any:
        """Send one request (on the run's first connection unless told) and keep its
        answer, or the part of it `view` picks, as a step of the result."""
        connection = client or (self._clients[0] if self._clients else self.client())
        answer = connection.call(api_key, version, body)
        self.answered(api_key, version, answer if view is None else view(answer))
        return answer

    def answered(self, api_key: int, version: int, answer: Any) -> None:
        """Keep an answer got otherwise (a request written by hand) as a step."""
        self.steps.append({"api": api_key, "version": version, "answer": answer})

    def quiet(
        self, api_key: int, version: int, body: dict[str, Any], client: WireClient | None = None
    ) -> Any:
        """A request whose answer is not part of the result (set-up, waiting)."""
        connection = client or (self._clients[0] if self._clients else self.client())
        return connection.call(api_key, version, body)

    def record(self, label: str, value: Any) -> None:
        self.steps.append({"label": label, "value": value})

    def until(
        self, ask: Callable[[], Any], done: Callable[[Any], bool], timeout: float = 15
    ) -> Any:
        """Ask again until the answer is `done` (a coordinator loading, say)."""
        deadline = time.monotonic() + timeout
        answer = ask()
        while not done(answer) and time.monotonic() < deadline:
            time.sleep(0.1)
            answer = ask()
        return answer

    def close(self) -> None:
        for client in self._clients:
            client.close()


# Kafka names a request it refuses for want of a cluster permission by its own
# description of it (object hashes, connection ids), which differs between any two runs
KAFKA_REQUEST = re.compile(r"^Request .* needs (\w+) permission\.$", re.DOTALL)

# lists of node ids: compared by their length (one broker's id is not another's)
NODE_LISTS = {"replica_nodes", "isr_nodes", "offline_replicas", "eligible_leader_replicas"}


def plain(value: Any, prefix: str) -> Any:
    """A decoded answer as plain data, with this run's names made neutral."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: len(getattr(value, f.name) or ())
            if f.name in NODE_LISTS
            else plain(getattr(value, f.name), prefix)
            for f in dataclasses.fields(value)
            if f.name not in SET_ASIDE
        }
    if isinstance(value, dict):
        return {k: plain(v, prefix) for k, v in value.items() if k not in SET_ASIDE}
    if isinstance(value, list | tuple):
        return [plain(v, prefix) for v in value]
    if isinstance(value, str):
        return KAFKA_REQUEST.sub(r"Request <request> needs \1 permission.", value).replace(
            prefix, "<run>"
        )
    if isinstance(value, uuid.UUID):
        return "<uuid>"
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(bytes(value))} bytes>"
    if hasattr(value, "value") and hasattr(value, "name"):  # enums (error codes)
        return int(value.value)
    return value


def differences(kafka: Any, odradek: Any, path: str = "") -> Iterator[str]:
    """Where the two plain results differ; an error message counts only where Kafka
    sends one."""
    if isinstance(kafka, dict) and isinstance(odradek, dict):
        for key in sorted(set(kafka) | set(odradek)):
            if key.endswith("error_message") and kafka.get(key) is None:
                continue
            if key not in kafka or key not in odradek:
                yield f"{path}.{key}: only {'Kafka' if key in kafka else 'Odradek'} has it"
                continue
            yield from differences(kafka[key], odradek[key], f"{path}.{key}")
    elif isinstance(kafka, list) and isinstance(odradek, list):
        if len(kafka) != len(odradek):
            yield f"{path}: Kafka {len(kafka)} items, Odradek {len(odradek)}"
            yield f"{path}: Kafka {kafka!r}"
            yield f"{path}: Odradek {odradek!r}"
            return
        for index, (a, b) in enumerate(zip(kafka, odradek, strict=True)):
            yield from differences(a, b, f"{path}[{index}]")
    elif kafka != odradek:
        yield f"{path}: Kafka {kafka!r}, Odradek {odradek!r}"


def execute(scenario_: Scenario, bootstrap: str, sasl_bootstrap: str = "") -> list[Any]:
    run = Run(bootstrap, sasl_bootstrap)
    try:
        scenario_.run(run)
    finally:
        run.close()
    return [plain(step, run.prefix) for step in run.steps]


def error_codes(value: Any) -> Iterator[int]:
    """Every error code in a plain answer, however deep."""
    if isinstance(value, dict):
        for key, item in value.items():
            # (AddPartitionsToTxn's is "partition_error_code")
            if key.endswith("error_code") and isinstance(item, int):
                yield item
            else:
                yield from error_codes(item)
    elif isinstance(value, list):
        for item in value:
            yield from error_codes(item)


def kinds_of_answers(steps: list[Any]) -> Iterator[tuple[int, str]]:
    """(api key, "valid" or "invalid") for every request a run recorded: invalid where
    the answer carries an error code, valid where it carries none."""
    for step in steps:
        if isinstance(step, dict) and "api" in step:
            failed = any(code != 0 for code in error_codes(step["answer"]))
            yield step["api"], "invalid" if failed else "valid"


def listed_differences() -> dict[str, str]:
    """Scenario id -> reason, from the README's "Differences from Apache Kafka" table."""
    text = README.read_text()
    start = text.find("## Differences from Apache Kafka")
    if start < 0:
        return {}
    section = text[start : text.find("\n## ", start + 1)]
    found = {}
    for line in section.splitlines():
        match = re.match(r"\|\s*`([a-z0-9_.-]+)`\s*\|(.*)\|\s*$", line)
        if match:
            found[match.group(1)] = match.group(2).strip()
    return found
