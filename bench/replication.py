"""What replication costs: three copies on three nodes beside one copy on one node.

Run from the repository root:

    .venv/bin/python -m bench.replication [--quick]

- Produce: librdkafka (confluent-kafka) sends 1 KB records with acks=all to a topic of
  three partitions, as fast as it can, first to one Odradek node on its own
  (replication factor 1), then to a cluster of three brokers and a controller
  (replication factor 3, every follower fetching from the leaders). Records/s, the
  brokers' CPU time per record (all the brokers' together, from /proc, split into user
  and system time) and the client's (this process, librdkafka's threads included). The ratio
  is RF 3 over RF 1 (target: at least 0.5 on a 2-core machine, where the three
  brokers, the controller and the client share two cores).
- Failover: an idempotent acks=all producer writes one partition steadily; its leader
  is killed with SIGKILL; the time from the kill to the first record sent after it
  that is acknowledged (the new leader elected once the controller has fenced the
  dead node, the producer's metadata refreshed, its retry backoff capped at 200 ms),
  and when Metadata first names the new leader. librdkafka with Kafka's default
  broker.session.timeout.ms (9 s) once; librdkafka and aiokafka with 1 s three
  times each (target: at most twice the session). librdkafka's idempotent producer
  drains what it had in flight to the dead leader before it writes to the new one,
  on a timer of its own that may add up to a second; aiokafka asks for Metadata
  again as soon as a send fails.

Results go to bench/results/replication.json.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import logging
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaProducer
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.peers import REPO, own_cpu_seconds, process_cpu_times
from odradek.testing import Broker, Cluster

RESULTS = REPO / "bench" / "results" / "replication.json"
# An idempotent acks=all librdkafka producer timed across a leader's death. librdkafka
# backs off up to 1 s between metadata refreshes by default: what is measured is the
# cluster's failover, not that backoff.
FAILOVER_PRODUCER = {
    "acks": "all",
    "enable.idempotence": True,
    "linger.ms": 0,
    "retry.backoff.ms": 50,
    "retry.backoff.max.ms": 200,
    "reconnect.backoff.max.ms": 200,
    "topic.metadata.refresh.fast.interval.ms": 50,
}
RECORD = b"x" * 1024


@dataclass
class ProduceResult:
    label: str
    records: int
    seconds: float
    records_per_s: float
    mb_per_s: float
    broker_cpu_us_per_record: float
    broker_user_us_per_record: float
    broker_system_us_per_record: float
    client_cpu_us_per_record: float


@dataclass
class FailoverResult:
    client: str
    session_timeout_ms: int
    elected_s: float  # kill to a new leader in Metadata
    seconds: float  # kill to the first acks=all acknowledged by it
    over_session: float


def _create(bootstrap: str, factor: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic("bench", 3, factor)]).values():
        future.result(30)


def _produce(bootstrap: str, count: int) -> float:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "batch.size": 262144,
            "queue.buffering.max.messages": 200000,
        }
    )
    started = time.perf_counter()
    for i in range(count):
        while True:
            try:
                producer.produce("bench", RECORD, partition=i % 3)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 1000 == 0:
            producer.poll(0)
    left = producer.flush(120)
    if left:
        raise RuntimeError(f"{left} records not acknowledged")
    return time.perf_counter() - started


def _cpu(pids: list[int]) -> tuple[float, float]:
    """The processes' user and system time together."""
    times = [process_cpu_times(pid) for pid in pids]
    return sum(user for user, _ in times), sum(system for _, system in times)


def _measure(label: str, bootstrap: str, pids: list[int], count: int) -> ProduceResult:
    _produce(bootstrap, min(count // 5, 5000))  # warm up: connections, first segments
    user, system = _cpu(pids)
    client = own_cpu_seconds()  # this process is the client: librdkafka's threads too
    seconds = _produce(bootstrap, count)
    client = own_cpu_seconds() - client
    user_after, system_after = _cpu(pids)
    per_record = 1e6 / count
    return ProduceResult(
        label,
        count,
        round(seconds, 3),
        round(count / seconds),
        round(count * len(RECORD) / seconds / 1e6, 1),
        round((user_after - user + system_after - system) * per_record, 2),
        round((user_after - user) * per_record, 2),
        round((system_after - system) * per_record, 2),
        round(client * per_record, 2),
    )


def produce_rf1(count: int) -> ProduceResult:
    with tempfile.TemporaryDirectory() as tmp, Broker(Path(tmp) / "data") as broker:
        _create(broker.bootstrap_servers, 1)
        assert broker.pid is not None
        return _measure("RF 1, one node", broker.bootstrap_servers, [broker.pid], count)


def produce_rf3(count: int) -> ProduceResult:
    with tempfile.TemporaryDirectory() as tmp, Cluster(3, Path(tmp)) as cluster:
        _create(cluster.bootstrap_servers, 3)
        pids = [b.pid for b in [cluster.controller, *cluster.nodes.values()] if b.pid]
        return _measure("RF 3, three brokers", cluster.bootstrap_servers, pids, count)


class Kill:
    """Kills the leader of bench-1 once the producer has sent `after` records, and
    notes when that was and when Metadata first named another leader."""

    def __init__(self, cluster: Cluster, after: int = 200) -> None:
        self.cluster, self.after = cluster, after
        self.leader = cluster.leader_of("bench", 1)
        self.killed_at = 0.0
        self.elected_at = 0.0
        self._watcher = threading.Thread(target=self._watch)

    def sent(self, count: int) -> None:
        if count == self.after:
            self.killed_at = time.monotonic()
            self.cluster.kill(self.leader)
            self._watcher.start()

    def _watch(self) -> None:
        self.cluster.wait_for_new_leader("bench", 1, old=self.leader)
        self.elected_at = time.monotonic()

    def after_kill(self, sent_at: float) -> bool:
        return 0 < self.killed_at < sent_at

    def join(self) -> None:
        self._watcher.join()


def _librdkafka_until_acknowledged(cluster: Cluster, kill: Kill) -> float:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, **FAILOVER_PRODUCER})
    first_ack: list[float] = []

    def delivered(error: Any, message: Any) -> None:
        if error is None and not first_ack and kill.after_kill(float(message.value())):
            first_ack.append(time.monotonic())

    deadline = time.monotonic() + 60
    sent = 0
    while not first_ack and time.monotonic() < deadline:
        producer.produce(
            "bench", str(time.monotonic()).encode(), partition=1, on_delivery=delivered
        )
        sent += 1
        producer.poll(0.005)
        kill.sent(sent)
    producer.flush(30)
    if not first_ack:
        raise RuntimeError("no record acknowledged after the kill")
    return first_ack[0]


async def _aiokafka_until_acknowledged(cluster: Cluster, kill: Kill) -> float:
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)  # a line per failed send
    producer = AIOKafkaProducer(
        bootstrap_servers=cluster.bootstrap_servers,
        acks="all",
        enable_idempotence=True,
        linger_ms=0,
        retry_backoff_ms=50,
        request_timeout_ms=5000,
    )
    await producer.start()
    first_ack: list[float] = []

    def delivered(future: asyncio.Future[Any], sent_at: float) -> None:
        if not future.exception() and not first_ack and kill.after_kill(sent_at):
            first_ack.append(time.monotonic())

    try:
        deadline = time.monotonic() + 60
        sent = 0
        while not first_ack and time.monotonic() < deadline:
            sent_at = time.monotonic()
            future = await producer.send("bench", str(sent_at).encode(), partition=1)
            future.add_done_callback(functools.partial(delivered, sent_at=sent_at))
            sent += 1
            await asyncio.sleep(0.005)
            kill.sent(sent)
    finally:
        await producer.stop()
    if not first_ack:
        raise RuntimeError("no record acknowledged after the kill")
    return first_ack[0]


def failover(client: str, session_timeout_ms: int) -> FailoverResult:
    with (
        tempfile.TemporaryDirectory() as tmp,
        Cluster(3, Path(tmp), session_timeout_ms=session_timeout_ms) as cluster,
    ):
        _create(cluster.bootstrap_servers, 3)
        kill = Kill(cluster)
        if client == "librdkafka":
            acknowledged_at = _librdkafka_until_acknowledged(cluster, kill)
        else:
            acknowledged_at = asyncio.run(_aiokafka_until_acknowledged(cluster, kill))
        kill.join()
        seconds = acknowledged_at - kill.killed_at
        return FailoverResult(
            client,
            session_timeout_ms,
            round(kill.elected_at - kill.killed_at, 2),
            round(seconds, 2),
            round(seconds * 1000 / session_timeout_ms, 2),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer records, one failover")
    args = parser.parse_args()
    count = 20000 if args.quick else 300000
    rf1 = produce_rf1(count)
    rf3 = produce_rf3(count)
    runs = [("librdkafka", 1000), ("aiokafka", 1000)]
    if not args.quick:
        runs = [("librdkafka", 9000), *runs * 3]
    failovers = [failover(client, ms) for client, ms in runs]
    ratio = rf3.records_per_s / rf1.records_per_s
    print("| case | records/s | MB/s | brokers' CPU per record, user + system | client's |")
    print("|---|---|---|---|---|")
    for result in (rf1, rf3):
        print(
            f"| {result.label} | {result.records_per_s:,} | {result.mb_per_s} | "
            f"{result.broker_cpu_us_per_record} µs ({result.broker_user_us_per_record} + "
            f"{result.broker_system_us_per_record}) | {result.client_cpu_us_per_record} µs |"
        )
    print(f"\nRF 3 / RF 1 throughput: {ratio:.2f}")
    print(
        "\n| client | broker.session.timeout.ms | kill -9 to a new leader "
        "| to the first acks=all on it |"
    )
    print("|---|---|---|---|")
    for f in failovers:
        print(
            f"| {f.client} | {f.session_timeout_ms} | {f.elected_s} s | {f.seconds} s "
            f"({f.over_session}× the session) |"
        )
    if not args.quick:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        document = {
            "produce": [asdict(rf1), asdict(rf3)],
            "ratio": round(ratio, 2),
            "failover": [asdict(f) for f in failovers],
        }
        RESULTS.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
