"""A consume-transform-produce loop (Java client) copying records between topics while
its process is killed (SIGKILL) and restarted: the output, read read_committed, holds
every input record exactly once, and the group's offsets end at the input's end."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from helpers import java
from helpers.topics import create_topic
from txn_clients import ctp_args, java_group_offsets, rdk_read

PARTITIONS = 3


def run_ctp_with_kills(
    bootstrap: str,
    name_factory,
    records: int,
    kills: int,  # type: ignore[no-untyped-def]
    commit_every: int,
    sleep_ms: int,
) -> None:
    source, sink = name_factory("in"), name_factory("out")
    group, tid = name_factory("group"), name_factory("tid")
    create_topic(bootstrap, source, partitions=PARTITIONS)
    create_topic(bootstrap, sink, partitions=PARTITIONS)
    java.produce(bootstrap, source, count=records, linger_ms=20, batch_size=262144, timeout=300)
    args = ctp_args(
        bootstrap,
        source,
        sink,
        group,
        commit_every=commit_every,
        idle_ms=1500,
        sleep_ms=sleep_ms,
        consumer_props={"session.timeout.ms": 6000, "heartbeat.interval.ms": 500},
        producer_props={"transactional.id": tid, "transaction.timeout.ms": 60000, "linger.ms": 5},
    )
    rnd = random.Random(records)
    killed = 0
    runs = 0
    while True:
        runs += 1
        proc = java.JavaProcess(args)
        try:
            if killed < kills:
                proc.wait_event("ready", timeout=60)
                # let it commit a few transactions, then kill it mid-flight
                wanted = rnd.randint(3, 12)
                for _ in range(wanted):
                    line = proc.wait_for(
                        lambda x: x.get("event") in ("committed", "done"), timeout=120
                    )
                    if line["event"] == "done":
                        break
                else:
                    proc.proc.kill()
                    proc.proc.wait()
                    killed += 1
                    continue
            lines = proc.finish(timeout=600)
            assert proc.proc.returncode == 0, proc.stderr[-5000:]
            assert lines and lines[-1].get("event") == "done", lines[-3:]
            break
        finally:
            proc.close()
    assert killed == kills

    got = rdk_read(bootstrap, sink, "read_committed", partitions=PARTITIONS, timeout=120)
    counts = Counter(m.value() for m in got)
    duplicates = {v: c for v, c in counts.items() if c > 1}
    assert not duplicates, f"{len(duplicates)} records copied twice, e.g. {list(duplicates)[:5]}"
    expected = {b"value-%d" % i for i in range(records)}
    missing = expected - set(counts)
    assert not missing, f"{len(missing)} records missing, e.g. {sorted(missing)[:5]}"
    assert len(got) == records
    # the output keeps each input partition's order (same partition index)
    ends = java.run(
        ["list-offsets", "--bootstrap", bootstrap, "--topic", source, "--spec", "latest"]
    )
    assert java_group_offsets(bootstrap, group) == {
        (source, r["partition"]): r["offset"] for r in ends.records
    }


@pytest.mark.timeout(300)
def test_ctp_survives_kills(broker, name_factory) -> None:
    run_ctp_with_kills(
        broker.bootstrap, name_factory, records=10_000, kills=2, commit_every=200, sleep_ms=30
    )


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_ctp_survives_kills_100k(broker, name_factory) -> None:
    run_ctp_with_kills(
        broker.bootstrap, name_factory, records=100_000, kills=5, commit_every=500, sleep_ms=20
    )
