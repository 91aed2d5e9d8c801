"""Data-plane behaviour checked on the wire, where the clients hide it."""

from __future__ import annotations

import os
import struct
import threading
import time
import urllib.request
from typing import Any

from helpers.broker import free_port, rss_kb
from helpers.wire import WireClient

from odradek.protocol.batch import build_batch

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
DELETE_RECORDS, OFFSET_FOR_LEADER_EPOCH, DESCRIBE_LOG_DIRS = 21, 23, 35


def create(client: WireClient, topic: str, partitions: int = 1, **configs: str) -> None:
    client.create_topic(topic, partitions, {k.replace("_", "."): v for k, v in configs.items()})


def list_offset(client: WireClient, topic: str, timestamp: int) -> int:
    """ListOffsets v7 for partition 0 (-1 latest, -2 earliest), read_uncommitted."""
    reply = client.call(
        LIST_OFFSETS,
        7,
        {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [
                {"name": topic, "partitions": [{"partition_index": 0, "timestamp": timestamp}]}
            ],
        },
    )
    return int(reply.topics[0].partitions[0].offset)


def produce(client: WireClient, topic: str, batch: bytes, acks: int = 1, partition: int = 0):
    body = {
        "acks": acks,
        "timeout": 5000,
        "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}],
    }
    return client.call(PRODUCE, 9, body)


def fetch_body(topic: str, offset: int, session_id: int = 0, epoch: int = -1, max_wait: int = 0):
    return {
        "max_wait": max_wait,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": session_id,
        "session_epoch": epoch,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
                ],
            }
        ],
        "forgotten_topics_data": [],
    }


def test_pipelined_requests_are_answered_in_order(shared_broker, unique_topic) -> None:
    with WireClient(shared_broker.bootstrap) as client:
        create(client, unique_topic)
        frames = []
        correlations = []
        for i in range(20):
            api = METADATA if i % 2 else FETCH
            body = {"topics": None} if api == METADATA else fetch_body(unique_topic, 0)
            version = 9 if api == METADATA else 11
            correlation, data = client.request_bytes(api, version, body)
            correlations.append(correlation)
            frames.append(data)
        client.send_raw(b"".join(frames))
        got = [struct.unpack_from(">i", client.read_frame())[0] for _ in frames]
        assert got == correlations


def test_acks_zero_gets_no_response(shared_broker, unique_topic) -> None:
    with WireClient(shared_broker.bootstrap) as client:
        create(client, unique_topic)
        _, data = client.request_bytes(
            PRODUCE,
            9,
            {
                "acks": 0,
                "timeout": 5000,
                "topic_data": [
                    {
                        "name": unique_topic,
                        "partition_data": [{"index": 0, "records": build_batch([(b"k", b"v")])}],
                    }
                ],
            },
        )
        client.send_raw(data)
        # The next answer on the wire belongs to the next request, not to the acks=0 one.
        assert list_offset(client, unique_topic, -1) == 1


def test_incremental_fetch_session(shared_broker, unique_topic) -> None:
    with WireClient(shared_broker.bootstrap) as client:
        create(client, unique_topic)
        produce(client, unique_topic, build_batch([(None, b"a")]))
        full = client.call(FETCH, 12, fetch_body(unique_topic, 0, session_id=0, epoch=0))
        assert full.error_code == 0 and full.session_id > 0
        assert full.responses[0].partitions[0].high_watermark == 1
        session = full.session_id
        # The consumer moves to offset 1; nothing new there: no partition in the answer.
        moved = client.call(FETCH, 12, fetch_body(unique_topic, 1, session_id=session, epoch=1))
        assert moved.session_id == session and moved.responses == ()
        produce(client, unique_topic, build_batch([(None, b"b")]))
        # Naming no partition, the session still fetches from the cached offset 1.
        empty = fetch_body(unique_topic, 1, session_id=session, epoch=2)
        empty["topics"] = []
        news = client.call(FETCH, 12, empty)
        partitions = news.responses[0].partitions
        assert partitions[0].high_watermark == 2
        assert partitions[0].records and b"b" in partitions[0].records
        stale = client.call(FETCH, 12, {**empty, "session_epoch": 2})
        assert stale.error_code == 71  # INVALID_FETCH_SESSION_EPOCH
        unknown = client.call(
            FETCH, 12, {**empty, "session_id": session + 12345, "session_epoch": 1}
        )
        assert unknown.error_code == 70  # FETCH_SESSION_ID_NOT_FOUND


def test_parked_fetch_wakes_on_produce(shared_broker, unique_topic) -> None:
    with (
        WireClient(shared_broker.bootstrap) as fetcher,
        WireClient(shared_broker.bootstrap) as producer,
    ):
        create(fetcher, unique_topic)
        correlation, data = fetcher.request_bytes(
            FETCH, 11, fetch_body(unique_topic, 0, max_wait=5000)
        )
        fetcher.send_raw(data)
        time.sleep(0.2)
        started = time.monotonic()
        produce(producer, unique_topic, build_batch([(None, b"wake")]))
        reply = fetcher.read_response(FETCH, 11, correlation)
        waited = time.monotonic() - started
        assert reply.responses[0].partitions[0].records
        assert waited < 0.5, f"parked fetch answered {waited:.3f}s after the produce"


def test_out_of_range_and_log_start_after_delete_records(shared_broker, unique_topic) -> None:
    with WireClient(shared_broker.bootstrap) as client:
        create(client, unique_topic)
        for i in range(5):
            produce(client, unique_topic, build_batch([(None, str(i).encode())]))
        deleted = client.call(
            DELETE_RECORDS,
            2,
            {
                "topics": [
                    {"name": unique_topic, "partitions": [{"partition_index": 0, "offset": 3}]}
                ],
                "timeout": 5000,
            },
        )
        assert deleted.topics[0].partitions[0].low_watermark == 3
        early = client.call(FETCH, 11, fetch_body(unique_topic, 1))
        partition = early.responses[0].partitions[0]
        assert partition.error_code == 1  # OFFSET_OUT_OF_RANGE
        # without the log's offsets, as Kafka 4.4 answers (the conformance suite checks
        # it there): a client finds the log start with ListOffsets
        assert partition.log_start_offset == -1 and partition.high_watermark == -1
        assert list_offset(client, unique_topic, -2) == 3
        epochs = client.call(
            OFFSET_FOR_LEADER_EPOCH,
            4,
            {
                "replica_id": -1,
                "topics": [
                    {
                        "topic": unique_topic,
                        "partitions": [
                            {"partition": 0, "current_leader_epoch": 0, "leader_epoch": 0}
                        ],
                    }
                ],
            },
        )
        answer = epochs.topics[0].partitions[0]
        assert (answer.error_code, answer.leader_epoch, answer.end_offset) == (0, 0, 5)
        dirs = client.call(
            DESCRIBE_LOG_DIRS, 4, {"topics": [{"topic": unique_topic, "partitions": [0]}]}
        )
        assert dirs.results[0].topics[0].partitions[0].partition_size > 0


def test_metrics_endpoint(broker_factory, unique_topic) -> None:
    metrics_port = free_port()
    broker = broker_factory(start=False)
    broker.metrics_port = metrics_port
    broker.start()
    with WireClient(broker.bootstrap) as client:
        create(client, unique_topic)
        produce(client, unique_topic, build_batch([(None, b"x" * 100)]))
    text = (
        urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5)
        .read()
        .decode()
    )
    assert 'odradek_requests_total{api="produce"} 1.0' in text
    assert "odradek_bytes_in_total" in text and "odradek_partitions 1.0" in text


def test_idle_broker_hands_back_its_request_buffers(broker_factory, unique_topic) -> None:
    """Large Produce buffers are kept while busy (see broker/network/memory.py), then returned."""
    broker = broker_factory()
    connections, requests = 3, 16
    with WireClient(broker.bootstrap) as admin:
        create(admin, unique_topic)
        baseline = rss_kb(broker.pid)
    batch = build_batch([(None, os.urandom(1000)) for _ in range(1000)])
    body = {
        "acks": 1,
        "timeout": 5000,
        "topic_data": [{"name": unique_topic, "partition_data": [{"index": 0, "records": batch}]}],
    }
    clients = [WireClient(broker.bootstrap) for _ in range(connections)]
    try:
        # pipelined on several connections at once: the broker holds many requests
        for client in clients:
            client.send_raw(
                b"".join(client.request_bytes(PRODUCE, 9, body)[1] for _ in range(requests))
            )
        peak = baseline
        for client in clients:
            for _ in range(requests):
                client.read_frame()
                peak = max(peak, rss_kb(broker.pid))
    finally:
        for client in clients:
            client.close()
    deadline = time.monotonic() + 10
    while rss_kb(broker.pid) > baseline + 3_000 and time.monotonic() < deadline:
        time.sleep(0.2)
    final = rss_kb(broker.pid)
    # back to what the broker held before the requests, and well below the peak, so the
    # freed buffers were not merely kept for the next burst
    assert final <= baseline + 3_000, (baseline, peak, final)
    assert final <= peak - 4_000, (baseline, peak, final)
    with WireClient(broker.bootstrap) as client:
        assert list_offset(client, unique_topic, -1) == connections * requests * 1000


def test_clean_shutdown_skips_recovery_scan(broker_factory, unique_topic) -> None:
    broker = broker_factory({"log.segment.bytes": "4096"})
    with WireClient(broker.bootstrap) as client:
        create(client, unique_topic)
        for i in range(50):
            produce(client, unique_topic, build_batch([(None, b"%d" % i * 50)]))
    broker.stop()
    broker.start()
    with WireClient(broker.bootstrap) as client:
        assert list_offset(client, unique_topic, -1) == 50
    second_start = broker.start_log(2)
    assert '"recovered_partitions": 0' in second_start
    with WireClient(broker.bootstrap) as client:
        produce(client, unique_topic, build_batch([(None, b"after")]))
    broker.kill()
    broker.start()
    third_start = broker.start_log(3)
    assert '"recovered_partitions": 1' in third_start


def test_fsync_every_append_option(broker_factory, unique_topic) -> None:
    broker = broker_factory({"log.flush.interval.messages": "1"})
    with WireClient(broker.bootstrap) as client:
        create(client, unique_topic)
        reply = produce(client, unique_topic, build_batch([(None, b"durable")]), acks=-1)
        assert reply.responses[0].partition_responses[0].error_code == 0
    recovery = broker.data_dir / f"{unique_topic}-0" / "recovery-point-offset-checkpoint"
    assert recovery.exists() and "1" in recovery.read_text()


def test_min_insync_replicas_above_one_rejects_acks_all(shared_broker, unique_topic) -> None:
    with WireClient(shared_broker.bootstrap) as client:
        create(client, unique_topic, min_insync_replicas="2")
        reply = produce(client, unique_topic, build_batch([(None, b"x")]), acks=-1)
        assert reply.responses[0].partition_responses[0].error_code == 19  # NOT_ENOUGH_REPLICAS
        reply = produce(client, unique_topic, build_batch([(None, b"x")]), acks=1)
        assert reply.responses[0].partition_responses[0].error_code == 0


def test_follower_fetch_behind_the_high_watermark_is_answered_at_once(
    shared_broker, unique_topic
) -> None:
    """Fetch v18 (KIP-1166): a follower that knows an older high watermark than the
    leader's is answered at once, not parked for max_wait; one that knows the current
    one, or sends none, is parked."""
    with WireClient(shared_broker.bootstrap) as client:
        create(client, unique_topic)
        produce(client, unique_topic, build_batch([(None, b"v")] * 3))
        topic_id = (
            client.call(
                METADATA,
                12,
                {"topics": [{"name": unique_topic}], "allow_auto_topic_creation": False},
            )
            .topics[0]
            .topic_id
        )

        def waited(**known: int) -> float:
            partition = {"partition": 0, "fetch_offset": 3, "partition_max_bytes": 1 << 20}
            body = {
                "replica_state": {"replica_id": 7, "replica_epoch": -1},
                "max_wait": 1000,
                "min_bytes": 1,
                "topics": [{"topic_id": topic_id, "partitions": [partition | known]}],
                "forgotten_topics_data": [],
            }
            started = time.monotonic()
            reply = client.call(FETCH, 18, body)
            assert reply.responses[0].partitions[0].high_watermark == 3
            return time.monotonic() - started

        assert waited(high_watermark=1) < 0.5
        assert waited(high_watermark=-1) < 0.5
        assert waited(high_watermark=3) >= 0.9
        assert waited() >= 0.9


def test_a_topic_of_thousands_of_partitions_is_listed_whole_once_created(
    shared_broker, unique_topic
) -> None:
    """Its logs are opened a slice at a time while other requests are answered: one
    Metadata meanwhile sees the topic not at all, or whole; one that would create it
    gets LEADER_NOT_AVAILABLE, as on Kafka; CreateTopics then succeeds."""
    partitions = 3000
    created: list[Any] = []
    with WireClient(shared_broker.bootstrap, timeout=60) as creator:
        body = {
            "topics": [
                {"name": unique_topic, "num_partitions": partitions, "replication_factor": 1}
            ],
            "timeout": 60000,
        }
        worker = threading.Thread(target=lambda: created.append(creator.call(19, 7, body)))
        worker.start()
        seen: set[int] = set()
        answers_meanwhile = 0
        with WireClient(shared_broker.bootstrap, timeout=60) as asker:
            while worker.is_alive():
                listing = asker.call(METADATA, 12, {"topics": None})
                mine = [t for t in listing.topics if t.name == unique_topic]
                seen.update(len(t.partitions) for t in mine)
                asking = asker.call(
                    METADATA,
                    12,
                    {"topics": [{"name": unique_topic}], "allow_auto_topic_creation": True},
                )
                code = asking.topics[0].error_code
                assert code in (0, 5), code  # LEADER_NOT_AVAILABLE while it is made
                if code == 0:
                    seen.add(len(asking.topics[0].partitions))
                answers_meanwhile += 1
        worker.join()
    assert created[0].topics[0].error_code == 0, created[0]
    assert seen <= {partitions}, seen  # never a part of it
    assert answers_meanwhile >= 1
