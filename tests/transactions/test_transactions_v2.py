"""Transactions version 2 (KIP-890) from the wire, on Odradek and on Kafka 4.4 alike:
every EndTxn v5 moves the producer to a new epoch, a Produce v12 adds its partition to
the transaction itself, and what KIP-890 exists for: a late or duplicate Produce of an
aborted transaction opens no new transaction and never lands in the next one."""

from __future__ import annotations

import time

from transactions.txn_helpers import READ_COMMITTED, TxnState, Wire

from odradek.protocol.batch import ATTR_TRANSACTIONAL, build_batch

FIND_COORDINATOR, END_TXN = 10, 26
NOT_LEADER_OR_FOLLOWER = 6


def batch(value: bytes, producer_id: int, epoch: int, sequence: int) -> bytes:
    return build_batch(
        [(None, value)],
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
        attributes=ATTR_TRANSACTIONAL,
        timestamp=int(time.time() * 1000),
    )


def init(w: Wire, tid: str) -> tuple[int, int]:
    """FindCoordinator first: Kafka creates its transaction topic on that request."""
    w.call(FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [tid]})
    code, pid, epoch = w.init_pid(tid, version=5)
    assert code == 0
    return pid, epoch


def end(w: Wire, tid: str, pid: int, epoch: int, commit: bool) -> tuple[int, int, int]:
    body = {
        "transactional_id": tid,
        "producer_id": pid,
        "producer_epoch": epoch,
        "committed": commit,
    }
    r = w.call(END_TXN, 5, body)
    return int(r.error_code), int(r.producer_id), int(r.producer_epoch)


def settled(w: Wire, tid: str) -> TxnState:
    """The transaction's state once its end is complete (Kafka completes it after it
    answers EndTxn)."""
    deadline = time.monotonic() + 15
    state = w.describe_transaction(tid)
    while state.transaction_state.startswith("Prepare") and time.monotonic() < deadline:
        time.sleep(0.05)
        state = w.describe_transaction(tid)
    return state


def committed_values(w: Wire, topic: str) -> list[bytes | None]:
    """The data records below the last stable offset that no abort marker covers."""
    stable = w.list_offset(topic, 0, READ_COMMITTED)
    aborted_pids: dict[int, bool] = {}
    values = []
    for record in reversed(w.read_all(topic)):
        if record.offset >= stable:
            continue
        if record.control:  # its key: version, then type (0 abort, 1 commit), int16s
            assert record.key is not None
            aborted_pids[record.producer_id] = record.key[2:4] == b"\x00\x00"
        elif not aborted_pids.get(record.producer_id, False):
            values.append(record.value)
    return list(reversed(values))


def first_produce(w: Wire, topic: str, data: bytes, tid: str) -> int:
    """Produce v12 to a new topic's partition 0, retried while the broker is not yet its
    leader as a client retries: Kafka's Metadata names the leader a moment before its
    broker takes the partition's writes."""
    deadline = time.monotonic() + 10
    code, _offset = w.produce(topic, 0, data, tid, version=12)
    while code == NOT_LEADER_OR_FOLLOWER and time.monotonic() < deadline:
        time.sleep(0.05)
        code, _offset = w.produce(topic, 0, data, tid, version=12)
    return code


def test_a_late_produce_after_an_abort_opens_nothing(either_broker: str, name_factory) -> None:
    topic, tid = name_factory("t"), name_factory("tid")
    with Wire(either_broker) as w:
        w.create_topic(topic)
        pid, epoch = init(w, tid)
        # no AddPartitionsToTxn: the Produce adds its partition
        assert first_produce(w, topic, batch(b"aborted", pid, epoch, 0), tid) == 0
        assert w.describe_transaction(tid).transaction_state == "Ongoing"
        code, same_pid, bumped = end(w, tid, pid, epoch, commit=False)
        assert (code, same_pid, bumped) == (0, pid, epoch + 1)
        # the late retry of the first batch and a late next batch (Kafka, which answers
        # EndTxn before its markers are in, may still take them into the aborted one)
        for sequence in (0, 1):
            w.produce(topic, 0, batch(b"late", pid, epoch, sequence), tid, version=12)
        state = settled(w, tid)
        assert (state.transaction_state, state.producer_epoch) == ("CompleteAbort", bumped)
        # the next transaction, on the new epoch, commits alone
        assert w.produce(topic, 0, batch(b"next", pid, bumped, 0), tid, version=12)[0] == 0
        assert end(w, tid, pid, bumped, commit=True) == (0, pid, bumped + 1)
        assert settled(w, tid).transaction_state == "CompleteCommit"
        assert committed_values(w, topic) == [b"next"]


def test_end_txn_v5_retries_and_empty_aborts(either_broker: str, name_factory) -> None:
    tid = name_factory("tid")
    with Wire(either_broker) as w:
        pid, epoch = init(w, tid)
        assert end(w, tid, pid, epoch, commit=True)[0] == 48  # INVALID_TXN_STATE: nothing open
        assert end(w, tid, pid, epoch, commit=False) == (0, pid, epoch + 1)  # an empty abort
        settled(w, tid)
        assert end(w, tid, pid, epoch, commit=False) == (0, pid, epoch + 1)  # its retry
        assert end(w, tid, pid, epoch - 1, commit=False)[0] == 90  # PRODUCER_FENCED
