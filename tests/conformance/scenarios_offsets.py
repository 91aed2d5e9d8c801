"""Scenarios of ListOffsets (2) and OffsetForLeaderEpoch (23): the special timestamps,
searches by time, read_committed against the last stable offset, leader epochs and
bad input."""

from __future__ import annotations

import time
from typing import Any

from conformance.harness import Run, scenario
from conformance.scenarios_data import batch
from conformance.scenarios_fetch import Transaction, write
from conformance.scenarios_topics import quietly_create
from odradek.protocol.batch import build_batch

LIST_OFFSETS, OFFSET_FOR_LEADER_EPOCH, DELETE_RECORDS = 2, 23, 21
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL = -1, -2, -3, -4
LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -5, -6


def asked(partition: int, timestamp: int, epoch: int = -1) -> dict[str, Any]:
    return {"partition_index": partition, "timestamp": timestamp, "current_leader_epoch": epoch}


def list_offsets(
    run: Run,
    topics: dict[str, list[dict[str, Any]]],
    version: int = 11,
    isolation: int = 0,
) -> Any:
    body = {
        "replica_id": -1,
        "isolation_level": isolation,
        "timeout": 30000,
        "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
    }
    return run.call(LIST_OFFSETS, version, body)


def timed(run: Run, name: str) -> None:
    """Batches stamped 1000, 2000 (three records) and 3000 (offsets 0, 1-3, 4)."""
    write(run, name, build_batch([(None, b"a")], timestamp=1_000))
    write(run, name, build_batch([(None, b"b")] * 3, timestamp=2_000))
    write(run, name, build_batch([(None, b"c")], timestamp=3_000))


@scenario(
    "list-offsets.special-timestamps",
    "earliest, latest, max, earliest-local, latest-tiered, earliest-pending-upload, by version",
)
def _specials(run: Run) -> None:
    name = run.name("t")
    # (retention kept away from the records stamped in 1970)
    quietly_create(run, name, 2, retention_ms="-1")
    timed(run, name)
    for version in (1, 4, 7, 8, 9, 10, 11):
        specials = [LATEST, EARLIEST] + ([MAX_TIMESTAMP] if version >= 7 else [])
        specials += [EARLIEST_LOCAL] if version >= 8 else []
        specials += [LATEST_TIERED] if version >= 9 else []
        specials += [EARLIEST_PENDING_UPLOAD] if version >= 11 else []
        for timestamp in specials:  # (one partition a request: Kafka answers in hash order)
            list_offsets(run, {name: [asked(0, timestamp)]}, version)
            list_offsets(run, {name: [asked(1, timestamp)]}, version)


@scenario("list-offsets.by-timestamp", "before, at, between and after the records' timestamps")
def _by_timestamp(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name, retention_ms="-1")
    timed(run, name)
    for timestamp in (0, 1_000, 1_500, 2_000, 2_500, 3_000, 3_001, 10**13):
        list_offsets(run, {name: [asked(0, timestamp)]})
    list_offsets(run, {name: [asked(0, 1_500)]}, version=1)


@scenario("list-offsets.read-committed", "latest under read_committed stops at an open transaction")
def _read_committed(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name)
    now = int(time.time() * 1000)  # (stamped apart: the max timestamp is one record's)
    write(run, name, build_batch([(None, b"a")] * 2, timestamp=now))
    txn = Transaction(run, "txn")
    txn.send(name, 3, timestamp=now + 1)
    write(run, name, build_batch([(None, b"b")], timestamp=now + 2))
    for isolation in (0, 1):
        for timestamp in (LATEST, EARLIEST, MAX_TIMESTAMP):
            list_offsets(run, {name: [asked(0, timestamp)]}, isolation=isolation)
    txn.end(True, name, 7)
    list_offsets(run, {name: [asked(0, LATEST)]}, isolation=1)


@scenario("list-offsets.errors", "unknown topics and partitions, other negative timestamps")
def _errors(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name)
    write(run, name, batch(2))
    list_offsets(run, {run.name("none"): [asked(0, LATEST)]})
    list_offsets(run, {name: [asked(4, LATEST)]})
    for timestamp in (-7, -100):
        list_offsets(run, {name: [asked(0, timestamp)]})
    list_offsets(run, {name: [asked(0, MAX_TIMESTAMP)]}, version=6)
    list_offsets(run, {name: [asked(0, EARLIEST_LOCAL)]}, version=7)
    list_offsets(run, {name: [asked(0, LATEST_TIERED)]}, version=8)
    list_offsets(run, {name: [asked(0, EARLIEST_PENDING_UPLOAD)]}, version=10)
    list_offsets(run, {run.name("none"): [asked(0, -100)]})
    list_offsets(run, {name: [asked(0, LATEST), asked(0, EARLIEST)]})  # the same partition twice
    list_offsets(run, {name: [asked(0, LATEST), asked(0, EARLIEST)]}, version=1)


@scenario("list-offsets.leader-epochs", "the current leader epoch, a later one, none")
def _leader_epochs(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name)
    write(run, name, batch(2))
    for epoch in (-1, 0, 1, 7):
        list_offsets(run, {name: [asked(0, LATEST, epoch)]})
    list_offsets(run, {name: [asked(0, 0, 3)]})


def epochs(run: Run, topics: dict[str, list[tuple[int, int, int]]], version: int = 4) -> Any:
    """OffsetForLeaderEpoch of (partition, current leader epoch, leader epoch) each."""
    body = {
        "replica_id": -1,
        "topics": [
            {
                "topic": name,
                "partitions": [
                    {"partition": p, "current_leader_epoch": current, "leader_epoch": epoch}
                    for p, current, epoch in parts
                ],
            }
            for name, parts in topics.items()
        ],
    }
    return run.call(OFFSET_FOR_LEADER_EPOCH, version, body)


@scenario("offset-for-leader-epoch.more", "several partitions, unknown epochs, old versions")
def _offset_for_leader_epoch(run: Run) -> None:
    name, empty = run.name("t"), run.name("empty")
    quietly_create(run, name, 2)
    quietly_create(run, empty)
    write(run, name, batch(3))
    write(run, name, batch(2), partition=1)
    epochs(run, {name: [(0, -1, 0), (1, -1, 0), (2, -1, 0)], empty: [(0, -1, 0)]})
    epochs(run, {name: [(0, -1, -1), (0, -1, 5), (1, 2, 0)]})
    epochs(run, {empty: [(0, -1, -1), (0, 0, 1)]})
    body = {"topics": [{"name": name, "partitions": [{"partition_index": 0, "offset": 2}]}]}
    run.quiet(DELETE_RECORDS, 2, {**body, "timeout": 5000})
    for version in (2, 3, 4):
        epochs(run, {name: [(0, 0, 0)], empty: [(0, 0, 0)]}, version)
