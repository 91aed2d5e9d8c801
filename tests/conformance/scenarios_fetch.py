"""Scenarios of Fetch (1): versions, offsets out of range, isolation levels over
committed, aborted and open transactions, fetch sessions, topic ids and size limits."""

from __future__ import annotations

import time
import uuid
from typing import Any

from conformance.harness import Run, scenario
from conformance.scenarios_data import batch
from conformance.scenarios_groups import NOT_READY, first_init, ready
from conformance.scenarios_produce import produce_body
from conformance.scenarios_topics import quietly_create, topic_id
from odradek.protocol.batch import build_batch

PRODUCE, FETCH, LIST_OFFSETS, METADATA, DELETE_RECORDS = 0, 1, 2, 3, 21
ADD_PARTITIONS_TO_TXN, END_TXN = 24, 26
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
TRANSACTIONAL = 0x10


def wanted(
    partition: int, offset: int, max_bytes: int = 1 << 20, epoch: int = -1
) -> dict[str, Any]:
    return {
        "partition": partition,
        "current_leader_epoch": epoch,
        "fetch_offset": offset,
        "last_fetched_epoch": -1,
        "log_start_offset": -1,
        "partition_max_bytes": max_bytes,
    }


def fetch_body(
    topics: dict[str, list[dict[str, Any]]],
    isolation: int = READ_UNCOMMITTED,
    session: tuple[int, int] = (0, -1),
    max_bytes: int = 1 << 20,
    forgotten: dict[str, list[int]] | None = None,
    topic_ids: dict[str, uuid.UUID] | None = None,
    min_bytes: int = 0,
    max_wait: int = 0,
) -> dict[str, Any]:
    """A Fetch of each topic's partitions (`wanted`); with `topic_ids` the topics are
    named by id (v13+)."""

    def named(name: str) -> dict[str, Any]:
        return {"topic_id": topic_ids[name]} if topic_ids else {"topic": name}

    return {
        "cluster_id": None,
        "replica_id": -1,
        "replica_state": {"replica_id": -1, "replica_epoch": -1},
        "max_wait": max_wait,
        "min_bytes": min_bytes,
        "max_bytes": max_bytes,
        "isolation_level": isolation,
        "session_id": session[0],
        "session_epoch": session[1],
        "topics": [{**named(name), "partitions": parts} for name, parts in topics.items()],
        "forgotten_topics_data": [
            {**named(name), "partitions": parts} for name, parts in (forgotten or {}).items()
        ],
        "rack_id": "",
    }


def fetch(run: Run, version: int = 12, **fields: Any) -> Any:
    topics = fields.pop("topics")
    return run.call(FETCH, version, fetch_body(topics, **fields))


def write(run: Run, name: str, records: bytes, partition: int = 0, txn: str | None = None) -> int:
    """Records written (set-up); their first offset."""
    answer = run.quiet(PRODUCE, 9, produce_body({name: {partition: records}}, transactional_id=txn))
    result = answer.responses[0].partition_responses[0]
    assert result.error_code == 0, result
    return int(result.base_offset)


class Transaction:
    """A transactional producer of the scenario (set-up requests only)."""

    def __init__(self, run: Run, name: str) -> None:
        self.run, self.id = run, run.name(name)
        ready(run, 1, self.id)
        started = first_init(run, self.id)
        self.pid, self.epoch = int(started.producer_id), int(started.producer_epoch)
        self.sequences: dict[tuple[str, int], int] = {}

    def send(
        self, topic: str, count: int = 2, partition: int = 0, timestamp: int | None = None
    ) -> int:
        body = {
            "v3_and_below_transactional_id": self.id,
            "v3_and_below_producer_id": self.pid,
            "v3_and_below_producer_epoch": self.epoch,
            "v3_and_below_topics": [{"name": topic, "partitions": [partition]}],
        }
        added = self.run.until(
            lambda: self.run.quiet(ADD_PARTITIONS_TO_TXN, 3, body),
            lambda answer: (
                answer.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
                not in (*NOT_READY, 51)
            ),  # CONCURRENT_TRANSACTIONS: the last one ending
        )
        assert (
            added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
        )
        sequence = self.sequences.get((topic, partition), 0)
        self.sequences[(topic, partition)] = sequence + count
        records = build_batch(
            [(None, b"x" * 10)] * count,
            timestamp=int(time.time() * 1000) if timestamp is None else timestamp,
            producer_id=self.pid,
            producer_epoch=self.epoch,
            base_sequence=sequence,
            attributes=TRANSACTIONAL,
        )
        return write(self.run, topic, records, partition, self.id)

    def end(self, committed: bool, topic: str, end_offset: int) -> None:
        """EndTxn, then until the marker is written (the last stable offset reaches
        `end_offset`)."""
        body = {
            "transactional_id": self.id,
            "producer_id": self.pid,
            "producer_epoch": self.epoch,
            "committed": committed,
        }
        ended = self.run.quiet(END_TXN, 3, body)
        assert ended.error_code == 0, ended
        stable(self.run, topic, end_offset)


def stable(run: Run, topic: str, offset: int) -> None:
    """Until the last stable offset of partition 0 is `offset`."""
    body = {
        "replica_id": -1,
        "isolation_level": READ_COMMITTED,
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}],
    }
    answer = run.until(
        lambda: run.quiet(LIST_OFFSETS, 7, body),
        lambda answer: answer.topics[0].partitions[0].offset == offset,
    )
    assert answer.topics[0].partitions[0].offset == offset, answer


@scenario("fetch.versions", "the same fetch in versions 4, 7, 11, 12, and 13-18 (by topic id)")
def _versions(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name)
    write(run, name, batch(3))
    write(run, name, batch(2))
    for version in (4, 7, 11, 12):
        fetch(run, version, topics={name: [wanted(0, 3)]})
    fetch(run, 13, topics={name: [wanted(0, 0)]}, topic_ids={name: topic_id(run, name)})
    fetch(run, 16, topics={name: [wanted(0, 5)]}, topic_ids={name: topic_id(run, name)})
    for version in (17, 18):
        fetch(run, version, topics={name: [wanted(0, 2)]}, topic_ids={name: topic_id(run, name)})


@scenario("fetch.out-of-range", "below the log start and past the end, in v4, v16 and v18")
def _out_of_range(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name, 2)
    write(run, name, batch(4))
    deleted = {"topics": [{"name": name, "partitions": [{"partition_index": 0, "offset": 3}]}]}
    run.quiet(DELETE_RECORDS, 2, {**deleted, "timeout": 5000})
    ids = {name: topic_id(run, name)}
    for offset in (0, 2, 3, 4, 5, 100, -1):
        fetch(run, 4, topics={name: [wanted(0, offset)]})
        fetch(run, 16, topics={name: [wanted(0, offset), wanted(1, 0)]}, topic_ids=ids)
    fetch(run, 18, topics={name: [wanted(0, 100), wanted(1, 0)]}, topic_ids=ids)


@scenario("fetch.isolation-committed-aborted", "committed and aborted transactions, both levels")
def _isolation(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name)
    write(run, name, batch(2))
    txn = Transaction(run, "txn")
    txn.send(name, 3)
    txn.end(True, name, 6)  # 2 records, 3 in the transaction, the commit marker
    txn.send(name, 2)
    txn.end(False, name, 9)
    write(run, name, batch(1))
    for isolation in (READ_UNCOMMITTED, READ_COMMITTED):
        fetch(run, topics={name: [wanted(0, 0)]}, isolation=isolation)
        fetch(run, topics={name: [wanted(0, 6)]}, isolation=isolation)
        fetch(run, topics={name: [wanted(0, 9)]}, isolation=isolation)


@scenario("fetch.open-transaction", "an open transaction holds the last stable offset back")
def _open_transaction(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name)
    write(run, name, batch(2))
    txn = Transaction(run, "txn")
    txn.send(name, 2)
    write(run, name, batch(3))
    for isolation in (READ_UNCOMMITTED, READ_COMMITTED):
        fetch(run, topics={name: [wanted(0, 0)]}, isolation=isolation)
        fetch(run, topics={name: [wanted(0, 4)]}, isolation=isolation)
    txn.end(False, name, 8)
    fetch(run, topics={name: [wanted(0, 0)]}, isolation=READ_COMMITTED)


def session_of(answer: Any) -> int:
    return int(answer.session_id)


@scenario("fetch.sessions", "a session: full fetch, incremental fetches, a forgotten topic")
def _sessions(run: Run) -> None:
    a, b = run.name("a"), run.name("b")
    quietly_create(run, a, 2)
    quietly_create(run, b)
    write(run, a, batch(2))
    first = fetch(run, topics={a: [wanted(0, 0), wanted(1, 0)], b: [wanted(0, 0)]}, session=(0, 0))
    session = session_of(first)
    run.record("a session was opened", session != 0)
    fetch(run, topics={}, session=(session, 1))  # nothing new: no partitions
    write(run, a, batch(1), partition=1)
    fetch(run, topics={}, session=(session, 2))  # a-1 has new records
    fetch(run, topics={a: [wanted(0, 2)]}, session=(session, 3))  # a-0 moves on
    fetch(run, topics={}, session=(session, 4), forgotten={b: [0]})
    write(run, b, batch(1))
    fetch(run, topics={}, session=(session, 5))  # b is no longer in the session
    fetch(run, topics={}, session=(session, -1))  # closed
    fetch(run, topics={}, session=(session, 6))


@scenario("fetch.session-errors", "an unknown session, a wrong epoch, a sessionless epoch")
def _session_errors(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name)
    first = fetch(run, topics={name: [wanted(0, 0)]}, session=(0, 0))
    session = session_of(first)
    fetch(run, topics={}, session=(session, 5))  # the epoch expected is 1
    fetch(run, topics={}, session=(session, 1))
    fetch(run, topics={}, session=(123456789, 1))
    fetch(run, topics={name: [wanted(0, 0)]}, session=(0, 3))
    fetch(run, topics={name: [wanted(0, 0)]}, session=(123456789, 0))
    fetch(run, topics={name: [wanted(0, 0)]}, session=(0, -1))


@scenario("fetch.topic-ids", "v13+: an unknown topic id, a zero id, an unknown partition")
def _topic_ids(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name)
    write(run, name, batch(1))
    ids = {name: topic_id(run, name)}
    stranger = {name: uuid.UUID("8f4e1a52-1cf5-4d2b-9f8c-0123456789ab")}
    fetch(run, 13, topics={name: [wanted(0, 0)]}, topic_ids=stranger)
    fetch(run, 16, topics={name: [wanted(0, 0)]}, topic_ids={name: uuid.UUID(int=0)})
    fetch(run, 16, topics={name: [wanted(0, 0), wanted(3, 0)]}, topic_ids=ids)
    fetch(run, 18, topics={name: [wanted(0, 0)]}, topic_ids=stranger)
    fetch(run, 18, topics={name: [wanted(0, 0), wanted(3, 0)]}, topic_ids=ids)


@scenario("fetch.max-bytes", "small max_bytes and partition_max_bytes: whole first batches")
def _max_bytes(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name, 2)
    for partition in (0, 1):
        write(run, name, batch(3, size=100), partition)
        write(run, name, batch(2, size=100), partition)
    both = [wanted(0, 0), wanted(1, 0)]
    fetch(run, topics={name: both}, max_bytes=1)
    fetch(run, topics={name: both}, max_bytes=500)
    fetch(run, topics={name: [wanted(0, 0, 1), wanted(1, 3, 1)]})
    fetch(run, topics={name: [wanted(0, 0, 0), wanted(1, 0, 2000)]})
    fetch(run, 4, topics={name: both}, max_bytes=1)


@scenario("fetch.min-bytes", "min_bytes not reached within max_wait: what there is")
def _min_bytes(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name)
    write(run, name, batch(1))
    fetch(run, topics={name: [wanted(0, 0)]}, min_bytes=100_000, max_wait=200)
    fetch(run, topics={name: [wanted(0, 1)]}, min_bytes=1, max_wait=200)
