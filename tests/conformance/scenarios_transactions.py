"""Scenarios of the transaction coordinator: whole transactions committed and aborted
(InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn), the
errors of each step, and InitProducerId's timeouts, fencing and versions."""

from __future__ import annotations

import dataclasses
import struct
import time
from typing import Any

from conformance.harness import Run, scenario
from conformance.scenarios_classic_groups import lone_member
from conformance.scenarios_groups import first_init, ready
from conformance.scenarios_topics import quietly_create
from odradek.protocol.batch import build_batch

PRODUCE, OFFSET_FETCH, INIT_PRODUCER_ID = 0, 9, 22
ADD_PARTITIONS, ADD_OFFSETS, END_TXN, TXN_OFFSET_COMMIT = 24, 25, 26, 28
DESCRIBE_TRANSACTIONS = 65
TRANSACTIONAL = 0x10  # the batch attribute


def begin(run: Run, txn: str) -> tuple[int, int]:
    """A transactional producer, once the coordinator is ready: (producer id, epoch)."""
    ready(run, 1, txn)
    started = first_init(run, txn)
    return int(started.producer_id), int(started.producer_epoch)


def add_partitions(
    run: Run, txn: str, pid: int, epoch: int, topics: dict[str, list[int]], version: int = 3
) -> Any:
    """AddPartitionsToTxn, its answer kept with topics and partitions sorted (Kafka
    answers them in the order of a hash map)."""
    body = {
        "v3_and_below_transactional_id": txn,
        "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
    }
    answer = run.quiet(ADD_PARTITIONS, version, body)
    ordered = [
        dataclasses.replace(
            topic,
            results_by_partition=tuple(
                sorted(topic.results_by_partition, key=lambda p: p.partition_index)
            ),
        )
        for topic in sorted(answer.results_by_topic_v3_and_below, key=lambda t: t.name)
    ]
    kept = dataclasses.replace(answer, results_by_topic_v3_and_below=tuple(ordered))
    run.steps.append({"api": ADD_PARTITIONS, "version": version, "answer": kept})
    return answer


def produce(
    run: Run,
    txn: str,
    topic: str,
    pid: int,
    epoch: int,
    sequence: int = 0,
    version: int = 9,
    keep: bool = False,
) -> Any:
    """Two transactional records to partition 0: set-up that must succeed, or with
    `keep` a step of the result, whatever it answers."""
    records = build_batch(
        [(None, b"a"), (None, b"b")],
        timestamp=int(time.time() * 1000),
        attributes=TRANSACTIONAL,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=sequence,
    )
    body = {
        "transactional_id": txn,
        "acks": -1,
        "timeout": 10000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
    }
    # (Kafka's partition may take a moment to lead after the topic is created)
    answer = run.until(
        lambda: run.quiet(PRODUCE, version, body),
        lambda answer: answer.responses[0].partition_responses[0].error_code != 6,
    )
    if keep:
        run.answered(PRODUCE, version, answer)
    else:
        assert answer.responses[0].partition_responses[0].error_code == 0, answer
    return answer


def add_offsets(run: Run, txn: str, pid: int, epoch: int, group: str, version: int = 3) -> Any:
    body = {
        "transactional_id": txn,
        "producer_id": pid,
        "producer_epoch": epoch,
        "group_id": group,
    }
    return run.call(ADD_OFFSETS, version, body)


def txn_commit(
    run: Run,
    txn: str,
    pid: int,
    epoch: int,
    group: str,
    topics: dict[str, list[int]],
    **fields: Any,
) -> Any:
    body = {
        "transactional_id": txn,
        "group_id": group,
        "producer_id": pid,
        "producer_epoch": epoch,
        "generation_id": fields.pop("generation_id", -1),
        "member_id": fields.pop("member_id", ""),
        "group_instance_id": None,
        "topics": [
            {
                "name": t,
                "partitions": [
                    {
                        "partition_index": p,
                        "committed_offset": 2,
                        "committed_leader_epoch": -1,
                        "committed_metadata": fields.get("metadata"),
                    }
                    for p in ps
                ],
            }
            for t, ps in topics.items()
        ],
    }
    return run.call(TXN_OFFSET_COMMIT, 3, body)


def end(run: Run, txn: str, pid: int, epoch: int, committed: bool) -> Any:
    body = {
        "transactional_id": txn,
        "producer_id": pid,
        "producer_epoch": epoch,
        "committed": committed,
    }
    return run.call(END_TXN, 3, body)


class Reader:
    """Just enough of the flexible wire format to read a DescribeTransactions answer."""

    def __init__(self, data: bytes, position: int = 0) -> None:
        self.data, self.position = data, position

    def take(self, fmt: str) -> Any:
        (value,) = struct.unpack_from(fmt, self.data, self.position)
        self.position += struct.calcsize(fmt)
        return value

    def uvarint(self) -> int:
        value, shift = 0, 0
        while True:
            byte = self.data[self.position]
            self.position += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7

    def string(self) -> str:
        length = self.uvarint() - 1
        text = self.data[self.position : self.position + length].decode()
        self.position += length
        return text

    def array(self) -> int:
        return self.uvarint() - 1

    def tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.position += self.uvarint()


def describe_transactions(run: Run, *ids: str, keep: bool = True) -> dict[str, Any]:
    """DescribeTransactions v0, read here: kio refuses the start time -1 Kafka sends for
    an id without an open transaction."""
    client = run._clients[0] if run._clients else run.client()
    correlation, data = client.request_bytes(
        DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": list(ids)}
    )
    client.send_raw(data)
    frame = Reader(client.read_frame())
    assert frame.take(">i") == correlation
    frame.tags()
    answer: dict[str, Any] = {"throttle_time": frame.take(">i"), "transaction_states": []}
    for _ in range(frame.array()):
        state = {
            "error_code": frame.take(">h"),
            "transactional_id": frame.string(),
            "transaction_state": frame.string(),
            "transaction_timeout": frame.take(">i"),
            "transaction_start_time_ms": frame.take(">q"),
            "producer_id": frame.take(">q"),
            "producer_epoch": frame.take(">h"),
            "topics": [],
        }
        for _ in range(frame.array()):
            topic = {"topic": frame.string(), "partitions": []}
            topic["partitions"] = sorted(frame.take(">i") for _ in range(frame.array()))
            frame.tags()
            state["topics"].append(topic)
        state["topics"].sort(key=lambda t: t["topic"])  # (Kafka's order is a hash set's)
        frame.tags()
        answer["transaction_states"].append(state)
    if keep:
        run.steps.append({"api": DESCRIBE_TRANSACTIONS, "version": 0, "answer": answer})
    return answer


def state_of(run: Run, txn: str) -> str:
    """The transaction's state, as DescribeTransactions tells it (kio cannot read an
    answer whose start time is -1, so it is read here by hand)."""
    answer = describe_transactions(run, txn, keep=False)
    return str(answer["transaction_states"][0]["transaction_state"])


def settled(run: Run, txn: str) -> None:
    """Until the markers of an ended transaction are written, recorded as its state."""
    state = run.until(
        lambda: state_of(run, txn), lambda s: s not in ("PrepareCommit", "PrepareAbort")
    )
    run.record("state", state)


def fetch_offsets(run: Run, group: str, topic: str, stable: bool) -> Any:
    body = {
        "groups": [{"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]}],
        "require_stable": stable,
    }
    return run.call(OFFSET_FETCH, 8, body)


def whole_transaction(run: Run, committed: bool) -> tuple[str, str, str, int, int]:
    txn, group, topic = run.name("t"), run.name("g"), run.name("topic")
    quietly_create(run, topic, 2)
    ready(run, 0, group)
    pid, epoch = begin(run, txn)
    add_partitions(run, txn, pid, epoch, {topic: [0, 1]})
    produce(run, txn, topic, pid, epoch)
    add_offsets(run, txn, pid, epoch, group)
    txn_commit(run, txn, pid, epoch, group, {topic: [0]}, metadata="in a transaction")
    run.record("before the end", state_of(run, txn))
    fetch_offsets(run, group, topic, stable=True)
    fetch_offsets(run, group, topic, stable=False)
    end(run, txn, pid, epoch, committed)
    settled(run, txn)
    fetch_offsets(run, group, topic, stable=True)
    return txn, group, topic, pid, epoch


@scenario("transactions.commit", "a whole transaction with records and offsets, committed")
def _commit(run: Run) -> None:
    txn, _, _, pid, epoch = whole_transaction(run, committed=True)
    end(run, txn, pid, epoch, True)  # a retry
    end(run, txn, pid, epoch, False)


@scenario("transactions.abort", "a whole transaction with records and offsets, aborted")
def _abort(run: Run) -> None:
    txn, group, topic, pid, epoch = whole_transaction(run, committed=False)
    end(run, txn, pid, epoch, False)  # a retry
    end(run, txn, pid, epoch, True)
    # the next transaction of the same producer
    add_partitions(run, txn, pid, epoch, {topic: [1]})
    end(run, txn, pid, epoch, True)
    settled(run, txn)


@scenario("add-partitions-to-txn.errors", "unknown partitions, wrong epochs and producers")
def _add_partitions_errors(run: Run) -> None:
    txn, topic = run.name("t"), run.name("topic")
    quietly_create(run, topic, 2)
    pid, epoch = begin(run, txn)
    add_partitions(run, txn, pid, epoch, {topic: [0, 5], run.name("none"): [0]})
    add_partitions(run, txn, pid, epoch, {topic: [-1]})
    add_partitions(run, txn, pid, epoch + 1, {topic: [0]})
    add_partitions(run, txn, pid, epoch - 1, {topic: [0]})
    add_partitions(run, txn, pid + 1000, epoch, {topic: [0]})
    add_partitions(run, run.name("never"), pid, epoch, {topic: [0]})
    add_partitions(run, "", pid, epoch, {topic: [0]})
    run.record("still empty", state_of(run, txn))
    for version in (0, 1, 2, 3):
        add_partitions(run, txn, pid, epoch, {topic: [0, 1]}, version=version)
    add_partitions(run, txn, pid, epoch, {topic: []})
    add_partitions(run, txn, pid, epoch, {})


@scenario(
    "add-offsets-to-txn.cases", "AddOffsetsToTxn first in a transaction, its versions, errors"
)
def _add_offsets(run: Run) -> None:
    txn, group = run.name("t"), run.name("g")
    ready(run, 0, group)
    pid, epoch = begin(run, txn)
    for version in (0, 1, 2, 3, 4):
        add_offsets(run, txn, pid, epoch, group, version=version)
    run.record("started by it", state_of(run, txn))
    add_offsets(run, txn, pid, epoch, run.name("other"))
    add_offsets(run, txn, pid, epoch, "")
    add_offsets(run, run.name("never"), pid, epoch, group)
    end(run, txn, pid, epoch, False)
    settled(run, txn)


@scenario(
    "txn-offset-commit.errors", "TxnOffsetCommit before AddOffsetsToTxn, of strangers, too large"
)
def _txn_offset_commit(run: Run) -> None:
    txn, group, topic = run.name("t"), run.name("g"), run.name("topic")
    quietly_create(run, topic, 2)
    ready(run, 0, group)
    pid, epoch = begin(run, txn)
    txn_commit(run, txn, pid, epoch, group, {topic: [0]})
    add_offsets(run, txn, pid, epoch, group)
    txn_commit(run, txn, pid, epoch, group, {topic: [0, 7], run.name("none"): [0]})
    txn_commit(run, txn, pid, epoch, group, {topic: [1]}, metadata="x" * 4097)
    txn_commit(run, txn, pid, epoch - 1, group, {topic: [0]})
    txn_commit(run, txn, pid, epoch + 1, group, {topic: [0]})
    txn_commit(run, txn, pid + 1000, epoch, group, {topic: [0]})
    txn_commit(run, txn, pid, epoch, "", {topic: [0]})
    end(run, txn, pid, epoch, True)
    settled(run, txn)


@scenario("txn-offset-commit.group-members", "a transactional commit naming a classic member")
def _txn_offset_commit_members(run: Run) -> None:
    txn, group, topic = run.name("t"), run.name("g"), run.name("topic")
    quietly_create(run, topic)
    ready(run, 0, group)
    me, generation = lone_member(run, group)
    pid, epoch = begin(run, txn)
    add_offsets(run, txn, pid, epoch, group)
    for member_id, generation_id in (
        (me, generation),
        (me, generation + 1),
        ("stranger", generation),
        ("", -1),
    ):
        txn_commit(
            run,
            txn,
            pid,
            epoch,
            group,
            {topic: [0]},
            member_id=member_id,
            generation_id=generation_id,
        )
    end(run, txn, pid, epoch, False)
    settled(run, txn)


@scenario(
    "txn-offset-commit.session",
    "transactional commits of a classic member do not keep its session alive",
)
def _txn_offset_commit_session(run: Run) -> None:
    txn, group, topic = run.name("t"), run.name("g"), run.name("topic")
    quietly_create(run, topic)
    ready(run, 0, group)
    me, generation = lone_member(run, group, session_timeout=6000)
    pid, epoch = begin(run, txn)
    add_offsets(run, txn, pid, epoch, group)
    txn_commit(run, txn, pid, epoch, group, {topic: [0]}, member_id=me, generation_id=generation)
    body = {
        "transactional_id": txn,
        "group_id": group,
        "producer_id": pid,
        "producer_epoch": epoch,
        "generation_id": generation,
        "member_id": me,
        "group_instance_id": None,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 2,
                        "committed_leader_epoch": -1,
                        "committed_metadata": None,
                    }
                ],
            }
        ],
    }
    # no heartbeat, a transactional commit every half second, past the session timeout
    # (6 s) and on until the group is seen empty, or 30 s
    describe_body = {"groups": [group], "include_authorized_operations": False}
    started = time.monotonic()
    while time.monotonic() - started < 30:
        run.quiet(TXN_OFFSET_COMMIT, 3, body)
        time.sleep(0.5)
        if time.monotonic() - started > 8 and not run.quiet(15, 5, describe_body).groups[0].members:
            break
    run.call(15, 5, describe_body)
    end(run, txn, pid, epoch, False)
    settled(run, txn)


@scenario("end-txn.states", "EndTxn with nothing to end, twice, of an old epoch, crossed")
def _end_states(run: Run) -> None:
    txn, topic = run.name("t"), run.name("topic")
    quietly_create(run, topic)
    pid, epoch = begin(run, txn)
    end(run, txn, pid, epoch, False)
    add_partitions(run, txn, pid, epoch, {topic: [0]})
    end(run, txn, pid, epoch - 1, True)
    end(run, txn, pid, epoch + 1, True)
    end(run, txn, pid + 1000, epoch, True)
    end(run, txn, pid, epoch, True)
    settled(run, txn)
    end(run, txn, pid, epoch, False)
    end(run, txn, pid, epoch - 1, True)
    for version in (0, 1, 2):
        add_partitions(run, txn, pid, epoch, {topic: [0]})
        body = {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch}
        run.call(END_TXN, version, {**body, "committed": version != 1})
        settled(run, txn)


def init(run: Run, txn: str | None, timeout: int = 60000, version: int = 4, **ids: int) -> Any:
    body: dict[str, Any] = {"transactional_id": txn, "transaction_timeout": timeout}
    if version >= 3:
        body["producer_id"] = ids.get("pid", -1)
        body["producer_epoch"] = ids.get("epoch", -1)
    return run.call(INIT_PRODUCER_ID, version, body)


@scenario(
    "init-producer-id.timeouts", "transaction timeouts at and over transaction.max.timeout.ms"
)
def _init_timeouts(run: Run) -> None:
    txn = run.name("t")
    begin(run, txn)
    for timeout in (900000, 900001, 0, -1, 1):
        init(run, txn, timeout)
    init(run, None, -1)
    init(run, None, 900001)


@scenario("init-producer-id.fencing", "a second InitProducerId fences the first producer")
def _init_fencing(run: Run) -> None:
    txn, group, topic = run.name("t"), run.name("g"), run.name("topic")
    quietly_create(run, topic)
    ready(run, 0, group)
    pid, old = begin(run, txn)
    again = init(run, txn)
    run.record("same producer id", int(again.producer_id) == pid)
    new = int(again.producer_epoch)
    add_partitions(run, txn, pid, old, {topic: [0]})
    add_offsets(run, txn, pid, old, group)
    txn_commit(run, txn, pid, old, group, {topic: [0]})
    end(run, txn, pid, old, True)
    # the old producer asks to bump its own (old) epoch; a stranger asks for a bump
    init(run, txn, pid=pid, epoch=old)
    init(run, txn, pid=pid + 1000, epoch=new)
    add_partitions(run, txn, pid, new, {topic: [0]})
    end(run, txn, pid, new, False)
    settled(run, txn)


@scenario("init-producer-id.ongoing", "InitProducerId while a transaction is open aborts it")
def _init_ongoing(run: Run) -> None:
    txn, topic = run.name("t"), run.name("topic")
    quietly_create(run, topic)
    pid, epoch = begin(run, txn)
    add_partitions(run, txn, pid, epoch, {topic: [0]})
    produce(run, txn, topic, pid, epoch)
    init(run, txn)
    body = {
        "transactional_id": txn,
        "transaction_timeout": 60000,
        "producer_id": -1,
        "producer_epoch": -1,
    }
    done = run.until(
        lambda: run.quiet(INIT_PRODUCER_ID, 4, body), lambda answer: answer.error_code == 0
    )
    run.record("epochs moved on", int(done.producer_epoch) - epoch)
    run.record("state", state_of(run, txn))


@scenario("init-producer-id.versions", "InitProducerId v0-v4 without a transactional id")
def _init_versions(run: Run) -> None:
    for version in (0, 1, 2, 3, 4):
        answer = init(run, None, version=version)
        run.record("epoch", answer.producer_epoch)
    started = init(run, None)
    pid, epoch = int(started.producer_id), int(started.producer_epoch)
    bumped = init(run, None, pid=pid, epoch=epoch)
    run.record("same producer", int(bumped.producer_id) == pid)
    init(run, None, pid=pid, epoch=-1)
    init(run, None, pid=-1, epoch=3)


def add_partitions_batch(run: Run, version: int, *transactions: dict[str, Any]) -> None:
    """AddPartitionsToTxn v4+ (the batch form), kept with each transaction's topics and
    partitions sorted (Kafka answers them in the order of a hash map)."""
    answer = run.quiet(ADD_PARTITIONS, version, {"transactions": list(transactions)})
    results = [
        dataclasses.replace(
            result,
            topic_results=tuple(
                dataclasses.replace(
                    topic,
                    results_by_partition=tuple(
                        sorted(topic.results_by_partition, key=lambda p: p.partition_index)
                    ),
                )
                for topic in sorted(result.topic_results, key=lambda t: t.name)
            ),
        )
        for result in answer.results_by_transaction
    ]
    kept = dataclasses.replace(answer, results_by_transaction=tuple(results))
    run.steps.append({"api": ADD_PARTITIONS, "version": version, "answer": kept})


@scenario(
    "add-partitions-to-txn.verify-only", "AddPartitionsToTxn v4-v5 from a client: verify and add"
)
def _add_partitions_batch(run: Run) -> None:
    txn, topic = run.name("t"), run.name("topic")
    quietly_create(run, topic, 3)
    pid, epoch = begin(run, txn)

    def transaction(partitions: list[int], verify: bool = True, **fields: Any) -> dict[str, Any]:
        return {
            "transactional_id": txn,
            "producer_id": pid,
            "producer_epoch": epoch,
            "verify_only": verify,
            "topics": [{"name": topic, "partitions": partitions}],
            **fields,
        }

    add_partitions_batch(run, 4, transaction([0]))
    add_partitions(run, txn, pid, epoch, {topic: [0]})
    for version in (4, 5):
        add_partitions_batch(run, version, transaction([0, 1]))
    add_partitions_batch(run, 4, transaction([0], producer_epoch=epoch + 1))
    add_partitions_batch(run, 4, transaction([0], producer_id=pid + 1000))
    add_partitions_batch(run, 4, transaction([0], transactional_id=run.name("never")))
    add_partitions_batch(run, 4, transaction([0], transactional_id=""))
    add_partitions_batch(run, 4, transaction([0, 9]))
    add_partitions_batch(run, 4, transaction([2], verify=False))
    run.record("after an add", state_of(run, txn))
    end(run, txn, pid, epoch, False)
    settled(run, txn)
    add_partitions_batch(run, 4, transaction([0]))
