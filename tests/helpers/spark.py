"""Reading topics back for the Spark tests, with librdkafka (not through Spark)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import cast

from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient


@dataclass(frozen=True)
class Record:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] | None
    timestamp: int
    timestamp_type: int  # 0 CreateTime, 1 LogAppendTime, as the Spark source reports it


def read_topic(
    bootstrap: str, topic: str, *, read_committed: bool = True, timeout: float = 30.0
) -> list[Record]:
    """Every record of ``topic`` up to its current end, ordered by partition and offset."""
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    partitions = sorted(metadata.topics[topic].partitions)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "odradek-tests-reader",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed" if read_committed else "read_uncommitted",
        }
    )
    records: list[Record] = []
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        pending = set(partitions)
        deadline = time.monotonic() + timeout
        while pending:
            assert time.monotonic() < deadline, f"reading {topic} timed out; left {pending}"
            for m in consumer.consume(500, timeout=0.5):
                error = m.error()
                if error is not None:
                    assert error.code() == KafkaError._PARTITION_EOF, error
                    pending.discard(m.partition())
                    continue
                kind, ts = m.timestamp()
                headers = cast("list[tuple[str, bytes | None]] | None", m.headers())
                records.append(
                    Record(
                        m.partition() or 0,
                        m.offset() or 0,
                        cast("bytes | None", m.key()),
                        cast("bytes | None", m.value()),
                        tuple(headers) if headers is not None else None,
                        ts,
                        1 if kind == 2 else 0,
                    )
                )
    finally:
        consumer.close()
    return sorted(records, key=lambda r: (r.partition, r.offset))


def records_from_rows(rows: list[object]) -> list[Record]:
    """Spark source rows (key, value, partition, offset, timestamp, headers ...) as Records."""
    out = []
    for row in rows:
        d = row.asDict(recursive=True)  # type: ignore[attr-defined]
        headers = d.get("headers")
        out.append(
            Record(
                d["partition"],
                d["offset"],
                d["key"],
                d["value"],
                tuple((h["key"], h["value"]) for h in headers) if headers is not None else None,
                int(d["timestamp"].timestamp() * 1000 + 0.5),
                d["timestampType"],
            )
        )
    return sorted(out, key=lambda r: (r.partition, r.offset))
