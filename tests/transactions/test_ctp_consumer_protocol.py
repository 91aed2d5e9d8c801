"""Exactly once under churn with the consumer group protocol (KIP-848): two Java
consume-transform-produce workers in one group.protocol=consumer group copy records
between topics while they are killed and restarted in turn, so partitions keep moving
between them. The output, read read_committed, holds every input record once, and the
group's offsets end at the input's end."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from helpers import java
from helpers.broker import BrokerFactory
from helpers.topics import create_topic
from txn_clients import ctp_args, java_group_offsets, rdk_read

PARTITIONS = 4
RECORDS = 8_000
KILLS = 3
SETTINGS = {"group.consumer.heartbeat.interval.ms": 200, "group.consumer.session.timeout.ms": 6000}


def worker_args(bootstrap: str, source: str, sink: str, group: str, tid: str) -> list[str]:
    return ctp_args(
        bootstrap,
        source,
        sink,
        group,
        commit_every=100,
        idle_ms=3000,
        sleep_ms=20,
        consumer_props={"group.protocol": "consumer"},
        producer_props={"transactional.id": tid, "transaction.timeout.ms": 60000, "linger.ms": 5},
    )


@pytest.mark.timeout(400)
def test_two_workers_killed_in_turn_copy_everything_once(
    broker_factory: BrokerFactory, name_factory
) -> None:  # type: ignore[no-untyped-def]
    broker = broker_factory(SETTINGS)
    bootstrap = broker.bootstrap
    source, sink, group = name_factory("in"), name_factory("out"), name_factory("group")
    create_topic(bootstrap, source, partitions=PARTITIONS)
    create_topic(bootstrap, sink, partitions=PARTITIONS)
    java.produce(bootstrap, source, count=RECORDS, linger_ms=20, batch_size=262144, timeout=300)
    tids = [name_factory("tid-a"), name_factory("tid-b")]
    workers = [java.JavaProcess(worker_args(bootstrap, source, sink, group, t)) for t in tids]
    rnd = random.Random(7)
    try:
        for worker in workers:
            worker.wait_event("ready", timeout=60)
        for _ in range(KILLS):
            index = rnd.randrange(2)
            victim = workers[index]
            for _ in range(rnd.randint(2, 6)):
                line = victim.wait_for(
                    lambda x: x.get("event") in ("committed", "done"), timeout=120
                )
                if line["event"] == "done":
                    break
            victim.proc.kill()
            victim.proc.wait()
            victim.close()
            workers[index] = java.JavaProcess(
                worker_args(bootstrap, source, sink, group, tids[index])
            )
            workers[index].wait_event("ready", timeout=60)
        for worker in workers:
            worker.finish(timeout=300)
        # whatever a worker left when it went idle, a last one finishes
        last = java.JavaProcess(worker_args(bootstrap, source, sink, group, tids[0]))
        lines = last.finish(timeout=300)
        assert lines and lines[-1].get("event") == "done", lines[-3:]
        last.close()
    finally:
        for worker in workers:
            worker.close()

    got = rdk_read(bootstrap, sink, "read_committed", partitions=PARTITIONS, timeout=120)
    counts = Counter(m.value() for m in got)
    duplicates = {v: c for v, c in counts.items() if c > 1}
    assert not duplicates, f"{len(duplicates)} records copied twice, e.g. {list(duplicates)[:5]}"
    missing = {b"value-%d" % i for i in range(RECORDS)} - set(counts)
    assert not missing, f"{len(missing)} records missing, e.g. {sorted(missing)[:5]}"
    ends = java.run(
        ["list-offsets", "--bootstrap", bootstrap, "--topic", source, "--spec", "latest"]
    )
    assert java_group_offsets(bootstrap, group) == {
        (source, r["partition"]): r["offset"] for r in ends.records
    }
