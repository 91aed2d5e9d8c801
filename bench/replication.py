"""What replication costs: three copies on three nodes beside one copy on one node.

Run from the repository root:

    .venv/bin/python -m bench.replication [--quick]

- Produce: librdkafka (confluent-kafka) sends 1 KB records with acks=all to a topic of
  three partitions, as fast as it can, first to one Odradek node on its own
  (replication factor 1), then to a cluster of three brokers and a controller
  (replication factor 3, every follower fetching from the leaders). Records/s and the
  brokers' CPU time per record (all the brokers' together, from /proc). The ratio
  is RF 3 over RF 1 (target: at least 0.5 on a 2-core machine, where the three
  brokers, the controller and the client share two cores).
- Failover: an idempotent acks=all producer writes one partition steadily; its leader
  is killed with SIGKILL; the time from the kill to the first record sent after it
  that is acknowledged (the new leader elected once the controller has fenced the
  dead node, the producer's metadata refreshed, its retry backoff capped at 200 ms),
  and when Metadata first names the new leader. With Kafka's default
  broker.session.timeout.ms (9 s) once and with 1 s three times (target: at most
  twice the session). librdkafka's idempotent producer drains what it had in flight
  to the dead leader before it writes to the new one, on a timer of its own that
  may add up to a second.

Results go to bench/results/replication.json.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.peers import REPO, process_cpu_seconds
from broker.testing import Broker
from broker.testing_cluster import Cluster

RESULTS = REPO / "bench" / "results" / "replication.json"
RECORD = b"x" * 1024


@dataclass
class ProduceResult:
    label: str
    records: int
    seconds: float
    records_per_s: float
    mb_per_s: float
    broker_cpu_us_per_record: float


@dataclass
class FailoverResult:
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


def _cpu(pids: list[int]) -> float:
    return sum(process_cpu_seconds(pid) for pid in pids)


def _measure(label: str, bootstrap: str, pids: list[int], count: int) -> ProduceResult:
    _produce(bootstrap, min(count // 5, 5000))  # warm up: connections, first segments
    before = _cpu(pids)
    seconds = _produce(bootstrap, count)
    cpu = _cpu(pids) - before
    return ProduceResult(
        label,
        count,
        round(seconds, 3),
        round(count / seconds),
        round(count * len(RECORD) / seconds / 1e6, 1),
        round(cpu / count * 1e6, 1),
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


def failover(session_timeout_ms: int) -> FailoverResult:
    with (
        tempfile.TemporaryDirectory() as tmp,
        Cluster(3, Path(tmp), session_timeout_ms=session_timeout_ms) as cluster,
    ):
        _create(cluster.bootstrap_servers, 3)
        leader = cluster.leader_of("bench", 1)
        producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 0,
                # librdkafka backs off up to 1 s between metadata refreshes by default:
                # what is measured here is the cluster's failover, not that backoff
                "retry.backoff.ms": 50,
                "retry.backoff.max.ms": 200,
                "reconnect.backoff.max.ms": 200,
                "topic.metadata.refresh.fast.interval.ms": 50,
            }
        )
        killed_at: list[float] = []
        recovered = threading.Event()
        first_ack: list[float] = []

        def delivered(error: Any, message: Any) -> None:
            if error is None and killed_at and float(message.value()) > killed_at[0]:
                if not first_ack:
                    first_ack.append(time.monotonic())
                recovered.set()

        elected: list[float] = []

        def watch() -> None:
            cluster.wait_for_new_leader("bench", 1, old=leader)
            elected.append(time.monotonic())

        watcher = threading.Thread(target=watch)
        deadline = time.monotonic() + 60
        sent = 0
        while not recovered.is_set() and time.monotonic() < deadline:
            producer.produce(
                "bench", str(time.monotonic()).encode(), partition=1, on_delivery=delivered
            )
            sent += 1
            producer.poll(0.005)
            if sent == 200:
                killed_at.append(time.monotonic())
                cluster.kill(leader)
                watcher.start()
        producer.flush(30)
        watcher.join()
        if not first_ack:
            raise RuntimeError("no record acknowledged after the kill")
        seconds = first_ack[0] - killed_at[0]
        return FailoverResult(
            session_timeout_ms,
            round(elected[0] - killed_at[0], 2),
            round(seconds, 2),
            round(seconds * 1000 / session_timeout_ms, 2),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer records, one failover")
    args = parser.parse_args()
    count = 20000 if args.quick else 100000
    rf1 = produce_rf1(count)
    rf3 = produce_rf3(count)
    sessions = [1000] if args.quick else [9000, 1000, 1000, 1000]
    failovers = [failover(ms) for ms in sessions]
    ratio = rf3.records_per_s / rf1.records_per_s
    print("| case | records/s | MB/s | brokers' CPU per record |")
    print("|---|---|---|---|")
    for result in (rf1, rf3):
        print(
            f"| {result.label} | {result.records_per_s:,} | {result.mb_per_s} | "
            f"{result.broker_cpu_us_per_record} µs |"
        )
    print(f"\nRF 3 / RF 1 throughput: {ratio:.2f}")
    print("\n| broker.session.timeout.ms | kill -9 to a new leader | to the first acks=all on it |")
    print("|---|---|---|")
    for f in failovers:
        print(
            f"| {f.session_timeout_ms} | {f.elected_s} s | {f.seconds} s "
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
