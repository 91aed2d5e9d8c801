"""The broker compacts topics with cleanup.policy=compact in the background."""

from __future__ import annotations

import time

from helpers.wire import WireClient

from odradek.protocol.batch import build_batch, iter_batches, iter_records

PRODUCE, FETCH = 0, 1


def _fetch_all(client: WireClient, topic: str) -> list[tuple[int, bytes | None, bytes | None]]:
    """Every record, fetching on (a fetch reads from one segment at a time)."""
    out: list[tuple[int, bytes | None, bytes | None]] = []
    offset = 0
    while True:
        partition = (
            client.call(
                FETCH,
                11,
                {
                    "max_wait": 0,
                    "min_bytes": 0,
                    "max_bytes": 1 << 24,
                    "topics": [
                        {
                            "topic": topic,
                            "partitions": [
                                {
                                    "partition": 0,
                                    "fetch_offset": offset,
                                    "partition_max_bytes": 1 << 24,
                                }
                            ],
                        }
                    ],
                },
            )
            .responses[0]
            .partitions[0]
        )
        data = bytes(partition.records or b"")
        if not data:
            return out
        for header in iter_batches(data):
            batch = data[header.position : header.position + header.size]
            out += [
                (header.base_offset + d, k, v)
                for d, k, v in iter_records(batch)
                if header.base_offset + d >= offset
            ]
            offset = max(offset, header.next_offset)
        if offset >= partition.high_watermark:
            return out


def test_compacted_topic_keeps_latest_value_per_key(broker_factory, unique_topic) -> None:
    broker = broker_factory({"log.cleaner.backoff.ms": "200"})
    with WireClient(broker.bootstrap) as client:
        client.create_topic(unique_topic, 1, {"cleanup.policy": "compact", "segment.bytes": "2048"})
        for round_ in range(20):
            for key in (b"a", b"b", b"c"):
                batch = build_batch([(key, b"%s-%d" % (key, round_))])
                body = {
                    "acks": -1,
                    "timeout": 5000,
                    "topic_data": [
                        {"name": unique_topic, "partition_data": [{"index": 0, "records": batch}]}
                    ],
                }
                assert (
                    client.call(PRODUCE, 9, body).responses[0].partition_responses[0].error_code
                    == 0
                )
        keyless = build_batch([(None, b"no key")])
        body = {
            "acks": -1,
            "timeout": 5000,
            "topic_data": [
                {"name": unique_topic, "partition_data": [{"index": 0, "records": keyless}]}
            ],
        }
        assert client.call(PRODUCE, 9, body).responses[0].partition_responses[0].error_code == 87
        before = _fetch_all(client, unique_topic)
        assert len(before) == 60
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            after = _fetch_all(client, unique_topic)
            if len(after) < 20:
                break
            time.sleep(0.3)
        latest = {k: v for _, k, v in after}
        assert latest == {b"a": b"a-19", b"b": b"b-19", b"c": b"c-19"}
        assert len(after) < 20, f"nothing was compacted: {len(after)} records left"
        offsets = [o for o, _, _ in after]
        assert offsets == sorted(offsets) and offsets[-1] == 59, "offsets are kept"
