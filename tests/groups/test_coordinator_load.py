"""A broker whose group coordinator has a large log to load keeps answering while it
loads: the shard replays its records a slice at a time, and only the requests that need
that shard wait (COORDINATOR_LOAD_IN_PROGRESS, as Kafka answers them)."""

from __future__ import annotations

import re
import time

from helpers.broker import Broker, BrokerFactory
from helpers.wire import WireClient

PARTITIONS = 100
ROUNDS = 1000  # commits of every partition: 100,000 offset records in one shard
IN_FLIGHT = 50
LOAD_IN_PROGRESS = 14


def commit_body(group: str, topic: str, offset: int) -> dict[str, object]:
    partitions = [
        {
            "partition_index": p,
            "committed_offset": offset,
            "committed_leader_epoch": -1,
            "committed_metadata": "",
        }
        for p in range(PARTITIONS)
    ]
    return {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [{"name": topic, "partitions": partitions}],
    }


def fill(broker: Broker, group: str, topic: str) -> None:
    """ROUNDS commits of every partition, IN_FLIGHT requests at a time."""
    with WireClient(broker.bootstrap, timeout=60) as client:
        client.create_topic(topic, PARTITIONS)
        for first in range(0, ROUNDS, IN_FLIGHT):
            sent = []
            for offset in range(first, min(first + IN_FLIGHT, ROUNDS)):
                correlation, data = client.request_bytes(8, 8, commit_body(group, topic, offset))
                client.send_raw(data)
                sent.append(correlation)
            for correlation in sent:
                reply = client.read_response(8, 8, correlation)
                codes = {p.error_code for t in reply.topics for p in t.partitions}
                assert codes == {0}, codes


def test_a_loading_coordinator_does_not_stall_the_broker(
    broker_factory: BrokerFactory, unique_group: str, unique_topic: str
) -> None:
    broker = broker_factory()
    fill(broker, unique_group, unique_topic)
    broker.stop()
    broker.start()

    slowest = 0.0
    answered_while_loading = 0
    with WireClient(broker.bootstrap, timeout=60) as client:
        deadline = time.monotonic() + 120
        while True:
            began = time.monotonic()
            metadata = client.call(3, 12, {"topics": [{"name": unique_topic}]})
            slowest = max(slowest, time.monotonic() - began)
            assert metadata.topics[0].error_code == 0
            fetched = client.call(9, 8, {"groups": [{"group_id": unique_group, "topics": None}]})
            if fetched.groups[0].error_code != LOAD_IN_PROGRESS:
                break
            answered_while_loading += 1
            assert time.monotonic() < deadline, "the coordinator did not load in 120 s"
            time.sleep(0.01)
        assert fetched.groups[0].error_code == 0
        offsets = {p.committed_offset for t in fetched.groups[0].topics for p in t.partitions}
        assert offsets == {ROUNDS - 1}

    records = ROUNDS * PARTITIONS
    loaded = re.search(
        rf'"records": {records}, "ms": ([\d.]+), "event": "shard loaded"',
        broker.start_log(2, wait_for=f'"records": {records}'),
    )
    assert loaded is not None, broker.log_tail()
    load_s = float(loaded.group(1)) / 1000
    print(
        f"load {load_s:.2f} s, {answered_while_loading} answers meanwhile, slowest {slowest:.3f} s"
    )
    assert answered_while_loading >= 5
    # Before slices, the first Metadata waited out the whole load
    assert slowest < max(0.25, load_s / 4), (slowest, load_s)
