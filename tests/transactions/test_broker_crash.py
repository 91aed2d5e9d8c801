"""Broker kill -9 during transactions (SPEC §8 crashes).

- At each step of EndTxn (fault injection ODRADEK_TXN_CRASH_AT): after restart the
  outcome is all-or-nothing for data and offsets, and a new initTransactions works.
- With a transaction open: read_committed stays blocked at its first offset until the
  transaction commits or times out, and never shows aborted data.
"""

from __future__ import annotations

import time

import pytest
from helpers import java
from helpers.topics import create_topic
from txn_clients import JavaTxn, java_values, rdk_read
from txn_helpers import (
    INVALID_TXN_STATE,
    PRODUCER_FENCED,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    UNSTABLE_OFFSET_COMMIT,
    Wire,
)

from odradek.protocol.batch import ATTR_TRANSACTIONAL, build_batch

pytestmark = pytest.mark.timeout(180)

STEPS = ["before-prepare", "after-prepare", "mid-markers", "after-markers"]


def txn_batch(pid: int, epoch: int, seq: int, *values: bytes) -> bytes:
    return build_batch(
        [(None, v) for v in values],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        attributes=ATTR_TRANSACTIONAL,
        timestamp=int(time.time() * 1000),
    )


def wait_state(w: Wire, tid: str, states: set[str], timeout: float = 20) -> str:
    deadline = time.monotonic() + timeout
    while True:
        state = w.describe_transaction(tid).transaction_state
        if state in states or time.monotonic() > deadline:
            return state
        time.sleep(0.1)


def stable_offset(w: Wire, group: str, tp: tuple[str, int], timeout: float = 20) -> int:
    deadline = time.monotonic() + timeout
    while True:
        offset, code = w.offset_fetch(group, [tp], require_stable=True)[tp]
        if code != UNSTABLE_OFFSET_COMMIT or time.monotonic() > deadline:
            assert code == 0, code
            return offset


@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
@pytest.mark.parametrize("step", STEPS)
def test_kill_at_each_step_of_end_txn(
    broker_factory, name_factory, step: str, commit: bool
) -> None:
    broker = broker_factory(start=False)
    broker.env["ODRADEK_TXN_CRASH_AT"] = step
    broker.start()
    b = broker.bootstrap
    topic, source, group, tid = (name_factory(x) for x in ("data", "src", "group", "tid"))
    src_tp = (source, 0)
    with Wire(b) as w:
        w.create_topic(topic, partitions=2)
        w.create_topic(source)
        code, pid, epoch = w.init_pid(tid)
        assert code == 0
        assert w.add_partitions(tid, pid, epoch, [(topic, 0), (topic, 1)]) == {
            (topic, 0): 0,
            (topic, 1): 0,
        }
        assert w.add_offsets(tid, pid, epoch, group) == 0
        assert w.produce(topic, 0, txn_batch(pid, epoch, 0, b"p0-a", b"p0-b"), tid) == (0, 0)
        assert w.produce(topic, 1, txn_batch(pid, epoch, 0, b"p1-a"), tid) == (0, 0)
        assert w.txn_offset_commit(tid, group, pid, epoch, {src_tp: 42}) == {src_tp: 0}
        with pytest.raises((ConnectionError, OSError)):
            w.end_txn(tid, pid, epoch, commit=commit)  # the broker dies on the way
    broker.proc.wait(10)  # type: ignore[union-attr]
    broker.kill()
    broker.env.clear()
    broker.start()

    with Wire(b) as w:
        if step == "before-prepare":
            # nothing decided: the transaction is still open and blocks read_committed
            assert wait_state(w, tid, {"Ongoing"}) == "Ongoing"
            assert w.list_offset(topic, 0, READ_COMMITTED) == 0
            assert w.list_offset(topic, 0, READ_UNCOMMITTED) == 2
            # a new producer instance aborts it
            from confluent_kafka import Producer

            fresh = Producer({"bootstrap.servers": b, "transactional.id": tid})
            fresh.init_transactions(30)
            committed = False
            assert w.end_txn(tid, pid, epoch, commit=commit) == PRODUCER_FENCED
        else:
            # decided before the crash: recovery finishes the markers
            final = "CompleteCommit" if commit else "CompleteAbort"
            assert wait_state(w, tid, {final}) == final
            committed = commit
            # the client's retry of EndTxn gets the same answer, the opposite one not
            assert w.end_txn(tid, pid, epoch, commit=commit, retry=True) == 0
            assert w.end_txn(tid, pid, epoch, commit=not commit) == INVALID_TXN_STATE
        visible = sorted(m.value() for m in rdk_read(b, topic, "read_committed", partitions=2))
        assert visible == ([b"p0-a", b"p0-b", b"p1-a"] if committed else [])
        everything = rdk_read(b, topic, "read_uncommitted", partitions=2)
        assert len(everything) == 3  # markers never show, data never doubled
        for p in (0, 1):  # a marker on each partition, nothing left open
            stored = w.read_all(topic, p)
            markers = [r for r in stored if r.control]
            # recovery writes again the markers of a transaction without its Complete*
            # record (as Kafka resends them); they all carry the same result
            assert markers and len({m.key for m in markers}) == 1, stored
            assert markers[0].key == (b"\x00\x00\x00\x01" if committed else b"\x00" * 4)
            if step == "after-prepare":
                assert len(markers) == 1
            assert w.list_offset(topic, p, READ_COMMITTED) == w.list_offset(
                topic, p, READ_UNCOMMITTED
            )
        assert stable_offset(w, group, src_tp) == (42 if committed else -1)

    # a new initTransactions works, and so does a whole transaction
    with JavaTxn(b, tid) as p:
        p.ok("init")
        p.ok("begin")
        p.send(topic, ["after"])
        assert p.send_offsets(group, {src_tp: 50})["ok"]
        p.ok("commit")
    with Wire(b) as w:
        assert stable_offset(w, group, src_tp) == 50
    visible = sorted(m.value() for m in rdk_read(b, topic, "read_committed", partitions=2))
    assert visible == sorted([b"after"] + ([b"p0-a", b"p0-b", b"p1-a"] if committed else []))


@pytest.mark.parametrize(
    ("ending", "hard"),
    [("commit", True), ("timeout", True), ("commit", False)],
    ids=["kill9-commit", "kill9-timeout", "clean-commit"],
)
def test_open_transaction_survives_restart(
    broker_factory, name_factory, ending: str, hard: bool
) -> None:
    broker = broker_factory({"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500})
    b = broker.bootstrap
    topic, tid = name_factory("data"), name_factory("tid")
    create_topic(b, topic)
    java.produce(b, topic, records=[java.record_line("k", v) for v in ("pre1", "pre2")])
    timeout_ms = 60000 if ending == "commit" else 8000
    with JavaTxn(b, tid, {"transaction.timeout.ms": timeout_ms, "retry.backoff.ms": 100}) as p:
        p.ok("init")
        p.ok("begin")
        assert p.send(topic, ["open-1", "open-2"]) == [2, 3]
        java.produce(b, topic, records=[java.record_line("k", "post")])
        broker.restart(hard=hard)  # clean: the producer state comes from its snapshot
        with Wire(b) as w:
            assert w.list_offset(topic, 0, READ_COMMITTED) == 2  # still blocked
            assert w.list_offset(topic, 0, READ_UNCOMMITTED) == 5
            part = w.fetch(topic, 0, 0, READ_COMMITTED)
            assert part.last_stable_offset == 2
        # (a timed-out transaction may be aborted by now: the Java reader takes a while)
        visible = java_values(b, topic, "read_committed")
        assert visible == ["pre1", "pre2"] or (
            ending == "timeout" and visible == ["pre1", "pre2", "post"]
        ), visible
        if ending == "commit":
            assert p.send(topic, ["open-3"]) == [5]
            p.ok("commit")
            expected = ["pre1", "pre2", "open-1", "open-2", "post", "open-3"]
        else:
            # nobody ends it: the coordinator aborts it at its timeout (kept across the
            # restart), and the aborted records never show
            deadline = time.monotonic() + 30
            with Wire(b) as w:
                while w.list_offset(topic, 0, READ_COMMITTED) == 2:
                    assert time.monotonic() < deadline, "never aborted"
                    # (the abort may land while this reads)
                    assert java_values(b, topic, "read_committed", timeout_ms=3000) in (
                        ["pre1", "pre2"],
                        ["pre1", "pre2", "post"],
                    )
                    time.sleep(0.5)
                assert w.describe_transaction(tid).transaction_state == "CompleteAbort"
            res = p.cmd("commit")
            assert not res["ok"], res
            expected = ["pre1", "pre2", "post"]
    assert java_values(b, topic, "read_committed") == expected
    rd = [m.value().decode() for m in rdk_read(b, topic, "read_committed")]
    assert rd == expected
    # and once more after a clean restart (producer state from the snapshot)
    broker.restart()
    assert [m.value().decode() for m in rdk_read(b, topic, "read_committed")] == expected
