"""Share groups (KIP-932) with real confluent-kafka ShareConsumers: members share one
partition's records, acknowledge them (accept, release, reject), and records held by a
member that dies or leaves go to the others."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter

from confluent_kafka import AcknowledgeType, ShareConsumer
from helpers.broker import REPO_ROOT, BrokerFactory, free_port
from helpers.topics import create_topic

from share.sharing import (
    FAST,
    Delivery,
    earliest_group,
    explicit,
    poll_once,
    poll_until,
    produce,
    share_among,
    share_consumer,
)


def test_three_members_share_one_partition(
    broker_factory: BrokerFactory, unique_topic: str, unique_group: str
) -> None:
    # few record locks per partition, so that no member can take every record at once
    broker = broker_factory({**FAST, "group.share.partition.max.record.locks": 20})
    create_topic(broker.bootstrap, unique_topic, 1)
    group = earliest_group(broker.bootstrap, unique_group)
    values = [f"r{i}".encode() for i in range(600)]
    # small batches: a member acquires whole batches, and one of 600 would go to one member
    produce(broker.bootstrap, unique_topic, values, batch_records=5)
    # held at most 2 s of the 3 s record locks of FAST
    received = share_among(broker.bootstrap, group, unique_topic, 3, len(values), hold=2.0)
    every = [d.value for got in received.values() for d in got]
    assert Counter(every) == Counter(values)
    assert all(received[i] for i in range(3)), {i: len(g) for i, g in received.items()}
    assert {d.delivery_count for got in received.values() for d in got} == {1}


def test_explicit_accept_release_reject_and_lock_expiry(
    broker_factory: BrokerFactory, unique_topic: str, unique_group: str
) -> None:
    """... and the share metrics count what happened."""
    broker = broker_factory(FAST, start=False)
    broker.metrics_port = free_port()
    broker.start()
    create_topic(broker.bootstrap, unique_topic, 1)
    group = earliest_group(broker.bootstrap, unique_group)
    produce(broker.bootstrap, unique_topic, [b"accept", b"release", b"reject"])
    first = explicit(broker.bootstrap, group, [unique_topic])
    try:
        batch: list = []
        deadline = time.monotonic() + 30
        while len(batch) < 3 and time.monotonic() < deadline:
            batch += poll_once(first)
        assert [d.value for _m, d in batch] == [b"accept", b"release", b"reject"]
        assert [d.delivery_count for _m, d in batch] == [1, 1, 1]
        kinds = [AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT]
        for (message, _d), kind in zip(batch, kinds, strict=True):
            first.acknowledge(message, kind)
        first.commit_sync()
        # the released record comes back, counted twice; the others never
        again: list = []
        deadline = time.monotonic() + 15
        while not again and time.monotonic() < deadline:
            again = poll_once(first)
        assert [(d.value, d.delivery_count) for _m, d in again] == [(b"release", 2)]
        # held without an answer: the lock (3 s) runs out and another member gets it
        second = explicit(broker.bootstrap, group, [unique_topic])
        try:
            taken = time.monotonic()
            redelivered: list = []
            while not redelivered and time.monotonic() < taken + 20:
                redelivered = poll_once(second)
            assert [(d.value, d.delivery_count) for _m, d in redelivered] == [(b"release", 3)]
            assert time.monotonic() - taken > 1.5
            for message, _d in redelivered:
                second.acknowledge(message, AcknowledgeType.ACCEPT)
            second.commit_sync()
            assert poll_for_explicit(second, 4) == []
            shown = scrape(broker.metrics_port)
            assert shown["odradek_share_records_acquired_total"] == 5
            for kind, count in (("accept", 2), ("release", 1), ("reject", 1)):
                name = f'odradek_share_records_acknowledged_total{{type="{kind}"}}'
                assert shown[name] == count, kind
            assert shown["odradek_share_acquisition_lock_timeouts_total"] == 1
            assert shown['odradek_share_groups{state="Stable"}'] == 1
            assert shown["odradek_share_sessions"] == 2
        finally:
            second.close()
    finally:
        first.close()


def scrape(port: int | None) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
    values = {}
    for line in text.decode().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    return values


def poll_for_explicit(consumer: ShareConsumer, seconds: float) -> list[Delivery]:
    got: list[Delivery] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for message, d in poll_once(consumer):
            got.append(d)
            consumer.acknowledge(message, AcknowledgeType.ACCEPT)
    return got


def test_the_delivery_limit_archives_a_record(
    broker_factory: BrokerFactory, unique_topic: str, unique_group: str
) -> None:
    broker = broker_factory({**FAST, "group.share.delivery.count.limit": 2})
    create_topic(broker.bootstrap, unique_topic, 1)
    group = earliest_group(broker.bootstrap, unique_group)
    produce(broker.bootstrap, unique_topic, [b"poison", b"fine"])
    consumer = explicit(broker.bootstrap, group, [unique_topic])
    try:
        counts: list[tuple[bytes, int]] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(counts) < 4:
            for message, d in poll_once(consumer):
                counts.append((d.value, d.delivery_count))
                kind = AcknowledgeType.RELEASE if d.value == b"poison" else AcknowledgeType.ACCEPT
                consumer.acknowledge(message, kind)
        # twice delivered (the limit), then archived: never a third time
        assert sorted(counts) == [(b"fine", 1), (b"poison", 1), (b"poison", 2)]
    finally:
        consumer.close()


HOLDER = """
import json, sys, time
from confluent_kafka import ShareConsumer
consumer = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                          "share.acknowledgement.mode": "explicit"})
consumer.subscribe([sys.argv[3]])
held = []
while len(held) < int(sys.argv[4]):
    held += [m.offset() for m in consumer.poll(0.5) if m.error() is None]
print(json.dumps(held), flush=True)
time.sleep(600)
"""


def _start_holder(bootstrap: str, group: str, topic: str, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", HOLDER, bootstrap, group, topic, str(count)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
    )


def _held(holder: subprocess.Popen[str]) -> list[int]:
    assert holder.stdout is not None
    offsets: list[int] = json.loads(holder.stdout.readline())
    return offsets


def test_records_of_a_hung_member_go_to_the_others_after_the_lock(
    broker_factory: BrokerFactory, unique_topic: str, unique_group: str
) -> None:
    broker = broker_factory(FAST)
    create_topic(broker.bootstrap, unique_topic, 1)
    group = earliest_group(broker.bootstrap, unique_group)
    produce(broker.bootstrap, unique_topic, [f"v{i}".encode() for i in range(10)])
    holder = _start_holder(broker.bootstrap, group, unique_topic, 10)
    try:
        assert sorted(_held(holder)) == list(range(10))
        # stopped, its connection still open: only the locks (3 s) running out free them
        os.kill(holder.pid, signal.SIGSTOP)
        stopped = time.monotonic()
        other = share_consumer(broker.bootstrap, group, [unique_topic])
        try:
            got = poll_until(other, 10, timeout=30)
            assert time.monotonic() - stopped > 1.5
        finally:
            other.close()
    finally:
        holder.kill()
        holder.wait()
    assert sorted(d.offset for d in got) == list(range(10))
    assert {d.delivery_count for d in got} == {2}


def test_records_of_a_killed_member_go_to_the_others(
    broker_factory: BrokerFactory, unique_topic: str, unique_group: str
) -> None:
    # locks of 30 s: the records come back sooner because the member's connection closed
    broker = broker_factory({k: v for k, v in FAST.items() if "lock" not in k})
    create_topic(broker.bootstrap, unique_topic, 1)
    group = earliest_group(broker.bootstrap, unique_group)
    produce(broker.bootstrap, unique_topic, [f"v{i}".encode() for i in range(10)])
    holder = _start_holder(broker.bootstrap, group, unique_topic, 10)
    try:
        assert sorted(_held(holder)) == list(range(10))
    finally:
        holder.kill()
        holder.wait()
    killed = time.monotonic()
    other = share_consumer(broker.bootstrap, group, [unique_topic])
    try:
        got = poll_until(other, 10, timeout=25)
    finally:
        other.close()
    assert time.monotonic() - killed < 25
    assert sorted(d.offset for d in got) == list(range(10))
    assert {d.delivery_count for d in got} == {2}


def test_a_member_that_leaves_releases_its_records_at_once(
    broker_factory: BrokerFactory, unique_topic: str, unique_group: str
) -> None:
    # the default lock of 30 s: anything faster than that is the release on leaving
    broker = broker_factory({k: v for k, v in FAST.items() if "lock" not in k})
    create_topic(broker.bootstrap, unique_topic, 1)
    group = earliest_group(broker.bootstrap, unique_group)
    produce(broker.bootstrap, unique_topic, [f"v{i}".encode() for i in range(5)])
    leaving = explicit(broker.bootstrap, group, [unique_topic])
    held: list = []
    deadline = time.monotonic() + 30
    while len(held) < 5 and time.monotonic() < deadline:
        held += poll_once(leaving)
    assert len(held) == 5
    left = time.monotonic()
    leaving.close()
    staying = share_consumer(broker.bootstrap, group, [unique_topic])
    try:
        got = poll_until(staying, 5, timeout=20)
    finally:
        staying.close()
    assert time.monotonic() - left < 20
    assert sorted(d.offset for d in got) == list(range(5))
    assert {d.delivery_count for d in got} == {2}
