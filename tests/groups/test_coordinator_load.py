"""A broker whose group coordinator has a large log to load keeps answering while it
loads: its shards replay their records a slice at a time, one shard at a time, and only
the requests for a loading shard's groups wait (COORDINATOR_LOAD_IN_PROGRESS, as Kafka
answers them)."""

from __future__ import annotations

import time

from helpers.broker import Broker, BrokerFactory
from helpers.wire import WireClient

PARTITIONS = 100
GROUPS = 200  # spread over nearly every shard of __consumer_offsets
ROUNDS = 1000  # commits of every partition, each by the next group: 100,000 records
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


def fill(broker: Broker, groups: list[str], topic: str) -> None:
    """ROUNDS commits of every partition, round i by group i % GROUPS at offset
    i // GROUPS, IN_FLIGHT requests at a time."""
    with WireClient(broker.bootstrap, timeout=60) as client:
        client.create_topic(topic, PARTITIONS)
        for first in range(0, ROUNDS, IN_FLIGHT):
            sent = []
            for i in range(first, min(first + IN_FLIGHT, ROUNDS)):
                body = commit_body(groups[i % GROUPS], topic, i // GROUPS)
                correlation, data = client.request_bytes(8, 8, body)
                client.send_raw(data)
                sent.append(correlation)
            for correlation in sent:
                reply = client.read_response(8, 8, correlation)
                codes = {p.error_code for t in reply.topics for p in t.partitions}
                assert codes == {0}, codes


def test_loading_coordinators_do_not_stall_the_broker(
    broker_factory: BrokerFactory, unique_group: str, unique_topic: str
) -> None:
    broker = broker_factory()
    groups = [f"{unique_group}-{i}" for i in range(GROUPS)]
    fill(broker, groups, unique_topic)
    broker.stop()
    broker.start()
    began = time.monotonic()

    slowest = 0.0
    answered_while_loading = 0
    fetch = {"groups": [{"group_id": group, "topics": None} for group in groups]}
    with WireClient(broker.bootstrap, timeout=60) as client:
        while True:
            asked = time.monotonic()
            metadata = client.call(3, 12, {"topics": [{"name": unique_topic}]})
            slowest = max(slowest, time.monotonic() - asked)
            assert metadata.topics[0].error_code == 0
            fetched = client.call(9, 8, fetch)
            codes = {group.error_code for group in fetched.groups}
            if LOAD_IN_PROGRESS not in codes:
                break
            answered_while_loading += 1
            assert time.monotonic() - began < 120, "the coordinator did not load in 120 s"
            time.sleep(0.01)
        loading_s = time.monotonic() - began
        assert codes == {0}, codes
        last = (ROUNDS - 1) // GROUPS
        for group in fetched.groups:
            offsets = {p.committed_offset for t in group.topics for p in t.partitions}
            assert offsets == {last}, (group.group_id, offsets)

    loaded = broker.start_log(2).count('"event": "shard loaded"')
    print(
        f"loaded in {loading_s:.2f} s, {answered_while_loading} answers meanwhile, "
        f"slowest {slowest:.3f} s, {loaded} shards"
    )
    assert answered_while_loading >= 5
    # Before slices the first Metadata waited out the whole load (1.7 s here), and with
    # every shard taking its slice in turn, 50 slices of 5 ms passed between two reads
    # (1.1 s); now about 50 ms. Twice Kafka's 250 ms mark leaves room for a test run
    # sharing two cores; bench/coordinator_load.py measures it beside Kafka.
    assert slowest < 0.5, (slowest, loading_s)
