"""Scenarios of the data plane: Produce (unknown topics, sizes, corrupt batches,
idempotent sequences), Fetch (offsets out of range, leader epochs, isolation levels)
and OffsetForLeaderEpoch."""

from __future__ import annotations

import time
from typing import Any

from conformance.harness import Run, scenario
from conformance.scenarios_groups import first_init
from conformance.scenarios_topics import list_offsets, quietly_create
from odradek.protocol.batch import build_batch

PRODUCE, FETCH, OFFSET_FOR_LEADER_EPOCH = 0, 1, 23


def batch(count: int = 1, size: int = 10, **fields: Any) -> bytes:
    now = int(time.time() * 1000)
    return build_batch([(None, b"x" * size)] * count, timestamp=now, **fields)


def produce(run: Run, topic: str, records: bytes, acks: int = -1, partition: int = 0) -> Any:
    body = {
        "transactional_id": None,
        "acks": acks,
        "timeout": 10000,
        "topic_data": [
            {"name": topic, "partition_data": [{"index": partition, "records": records}]}
        ],
    }
    return run.call(PRODUCE, 9, body)


def fetch(run: Run, topic: str, offset: int, leader_epoch: int = -1, isolation: int = 0) -> Any:
    body = {
        "cluster_id": None,
        "replica_id": -1,
        "max_wait": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "isolation_level": isolation,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": leader_epoch,
                        "fetch_offset": offset,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    return run.call(FETCH, 12, body)


@scenario("produce.unknown-and-bad-partitions", "Produce to an unknown topic and partition")
def _produce_unknown(run: Run) -> None:
    quietly_create(run, run.name("t"))
    produce(run, run.name("none"), batch(), acks=1)
    produce(run, run.name("t"), batch(), acks=1, partition=3)


@scenario("produce.too-large-and-corrupt", "a batch over max.message.bytes; a bad CRC")
def _produce_bad_batches(run: Run) -> None:
    quietly_create(run, run.name("t"))
    produce(run, run.name("t"), batch(size=1_100_000))
    corrupt = bytearray(batch(3))
    corrupt[-1] ^= 0xFF
    produce(run, run.name("t"), bytes(corrupt))
    produce(run, run.name("t"), batch(2))


@scenario("produce.idempotent-sequences", "a duplicate batch, then one out of order")
def _produce_sequences(run: Run) -> None:
    quietly_create(run, run.name("t"))
    started = first_init(run, None)
    pid, epoch = int(started.producer_id), int(started.producer_epoch)

    def send(sequence: int, count: int = 2) -> None:
        records = batch(count, producer_id=pid, producer_epoch=epoch, base_sequence=sequence)
        produce(run, run.name("t"), records)

    send(0)
    send(0)  # the same batch again: acknowledged once, written once
    send(5)  # a gap
    send(2)
    list_offsets(run, run.name("t"), -1)


@scenario("fetch.offsets-and-epochs", "in range, out of range, fenced and unknown epochs")
def _fetch(run: Run) -> None:
    quietly_create(run, run.name("t"))
    produce(run, run.name("t"), batch(3))
    fetch(run, run.name("t"), 0)
    fetch(run, run.name("t"), 3)
    fetch(run, run.name("t"), 10)
    fetch(run, run.name("t"), -5)
    fetch(run, run.name("t"), 0, leader_epoch=5)
    fetch(run, run.name("t"), 0, isolation=1)
    fetch(run, run.name("none"), 0)
    # below the log start, once DeleteRecords moved it
    body = {
        "topics": [{"name": run.name("t"), "partitions": [{"partition_index": 0, "offset": 2}]}],
        "timeout": 5000,
    }
    run.call(21, 2, body)
    fetch(run, run.name("t"), 1)
    fetch(run, run.name("t"), 2)


@scenario("offset-for-leader-epoch.cases", "the current epoch, a later one, an unknown topic")
def _offset_for_leader_epoch(run: Run) -> None:
    quietly_create(run, run.name("t"))
    produce(run, run.name("t"), batch(2))

    def ask(name: str, current: int, epoch: int) -> None:
        body = {
            "replica_id": -1,
            "topics": [
                {
                    "topic": name,
                    "partitions": [
                        {"partition": 0, "current_leader_epoch": current, "leader_epoch": epoch}
                    ],
                }
            ],
        }
        run.call(OFFSET_FOR_LEADER_EPOCH, 4, body)

    ask(run.name("t"), -1, 0)
    ask(run.name("t"), 0, 0)
    ask(run.name("t"), 3, 0)
    ask(run.name("none"), -1, 0)
