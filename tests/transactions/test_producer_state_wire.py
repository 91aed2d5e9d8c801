"""Producer state seen from the wire: DescribeProducers, expiry of idle producer ids,
and ListOffsets(latest) under read_committed answering the last stable offset."""

from __future__ import annotations

import time

from confluent_kafka import Producer
from helpers.wire import WireClient

from odradek.protocol.batch import build_batch

PRODUCE, LIST_OFFSETS, INIT_PRODUCER_ID, DESCRIBE_PRODUCERS = 0, 2, 22, 61


def _producers(c: WireClient, topic: str) -> dict[int, object]:
    reply = c.call(DESCRIBE_PRODUCERS, 0, {"topics": [{"name": topic, "partition_indexes": [0]}]})
    partition = reply.topics[0].partitions[0]
    assert partition.error_code == 0
    return {p.producer_id: p for p in partition.active_producers}


def test_idle_producer_ids_expire(broker_factory, unique_topic) -> None:
    broker = broker_factory({"producer.id.expiration.ms": "1500"})
    with WireClient(broker.bootstrap) as c:
        c.create_topic(unique_topic)
        init = c.call(
            INIT_PRODUCER_ID,
            4,
            {
                "transactional_id": None,
                "transaction_timeout": 60000,
                "producer_id": -1,
                "producer_epoch": -1,
            },
        )
        pid = init.producer_id
        batch = build_batch(
            [(None, b"v")],
            producer_id=pid,
            producer_epoch=0,
            base_sequence=0,
            timestamp=int(time.time() * 1000),
        )
        reply = c.call(
            PRODUCE,
            9,
            {
                "acks": -1,
                "timeout": 5000,
                "topic_data": [
                    {"name": unique_topic, "partition_data": [{"index": 0, "records": batch}]}
                ],
            },
        )
        assert reply.responses[0].partition_responses[0].error_code == 0
        described = _producers(c, unique_topic)
        assert pid in described
        assert described[pid].last_sequence == 0 and described[pid].producer_epoch == 0
        deadline = time.monotonic() + 10
        while pid in _producers(c, unique_topic) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert pid not in _producers(c, unique_topic), "the idle producer id expired"


def test_list_offsets_latest_under_read_committed_is_the_last_stable_offset(
    shared_broker, unique_topic
) -> None:
    with WireClient(shared_broker.bootstrap) as c:
        c.create_topic(unique_topic)
        plain = build_batch([(None, b"before")])
        c.call(
            PRODUCE,
            9,
            {
                "acks": -1,
                "timeout": 5000,
                "topic_data": [
                    {"name": unique_topic, "partition_data": [{"index": 0, "records": plain}]}
                ],
            },
        )
    producer = Producer(
        {"bootstrap.servers": shared_broker.bootstrap, "transactional.id": unique_topic}
    )
    producer.init_transactions(15)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(unique_topic, value=b"open-%d" % i, partition=0)
    producer.flush(10)

    def latest(isolation: int) -> int:
        with WireClient(shared_broker.bootstrap) as c:
            reply = c.call(
                LIST_OFFSETS,
                7,
                {
                    "replica_id": -1,
                    "isolation_level": isolation,
                    "topics": [
                        {
                            "name": unique_topic,
                            "partitions": [{"partition_index": 0, "timestamp": -1}],
                        }
                    ],
                },
            )
            return int(reply.topics[0].partitions[0].offset)

    assert latest(0) == 4, "read_uncommitted: the high watermark"
    assert latest(1) == 1, "read_committed: the first offset of the open transaction"
    with WireClient(shared_broker.bootstrap) as c:
        active = _producers(c, unique_topic)
        assert [p.current_txn_start_offset for p in active.values()] == [1]
    producer.commit_transaction(15)
    assert latest(1) == 5, "after the marker the last stable offset is the high watermark"
