"""SPEC §8 transaction scenarios through the Apache Kafka Java client (3.9)."""

from __future__ import annotations

import pytest
from helpers import java
from helpers.topics import create_topic
from txn_clients import JavaTxn, java_group_offsets, java_values
from txn_helpers import (
    INVALID_TRANSACTION_TIMEOUT,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    Wire,
    wait_timed_out,
)

pytestmark = pytest.mark.timeout(240)

FENCED = ("ProducerFencedException", "InvalidProducerEpochException")


def test_zombie_is_fenced_and_its_transaction_aborted(
    shared_broker, unique_topic, name_factory
) -> None:
    b = shared_broker.bootstrap
    create_topic(b, unique_topic)
    tid = name_factory("tid")
    with JavaTxn(b, tid) as zombie:
        zombie.ok("init")
        zombie.ok("begin")
        zombie.send(unique_topic, ["zombie-1", "zombie-2"])
        with JavaTxn(b, tid) as fresh:
            fresh.ok("init")  # aborts the zombie's open transaction
            fresh.ok("begin")
            fresh.send(unique_topic, ["fresh"])
            fresh.ok("commit")
        res = zombie.cmd("commit")
        assert not res["ok"]
        assert res["error_type"] == "ProducerFencedException", res
    assert java_values(b, unique_topic, "read_committed") == ["fresh"]
    assert java_values(b, unique_topic, "read_uncommitted") == ["zombie-1", "zombie-2", "fresh"]


def test_commit_and_abort_read_committed_and_uncommitted(
    shared_broker, unique_topic, name_factory
) -> None:
    b = shared_broker.bootstrap
    create_topic(b, unique_topic)
    with JavaTxn(b, name_factory("tid")) as p:
        p.ok("init")
        p.ok("begin")
        assert p.send(unique_topic, ["a1", "a2", "a3"]) == [0, 1, 2]
        p.ok("commit")
        p.ok("begin")
        assert p.send(unique_topic, ["b1", "b2", "b3"]) == [4, 5, 6]  # 3 is the marker
        p.ok("abort")
        p.ok("begin")
        assert p.send(unique_topic, ["c1"]) == [8]
        p.ok("commit")
    committed = java.consume(b, unique_topic, until_end=True, isolation_level="read_committed")
    assert [r["value"] for r in committed.records] == ["a1", "a2", "a3", "c1"]
    assert [r["offset"] for r in committed.records] == [0, 1, 2, 8]
    everything = java.consume(b, unique_topic, until_end=True, isolation_level="read_uncommitted")
    assert [r["offset"] for r in everything.records] == [0, 1, 2, 4, 5, 6, 8]
    with Wire(b) as w:
        stored = w.read_all(unique_topic)
        assert [r.offset for r in stored if r.control] == [3, 7, 9]
        assert w.list_offset(unique_topic, 0, READ_COMMITTED) == 10
        assert w.list_offset(unique_topic, 0, READ_UNCOMMITTED) == 10


@pytest.mark.parametrize("outcome", ["commit", "abort"])
def test_open_transaction_blocks_read_committed(
    shared_broker, unique_topic, name_factory, outcome: str
) -> None:
    b = shared_broker.bootstrap
    create_topic(b, unique_topic)
    java.produce(b, unique_topic, records=[java.record_line("k", v) for v in ("pre1", "pre2")])
    with JavaTxn(b, name_factory("tid")) as p:
        p.ok("init")
        p.ok("begin")
        assert p.send(unique_topic, ["t1", "t2"]) == [2, 3]
        java.produce(b, unique_topic, records=[java.record_line("k", "post")])
        with Wire(b) as w:
            assert w.list_offset(unique_topic, 0, READ_COMMITTED) == 2
            assert w.list_offset(unique_topic, 0, READ_UNCOMMITTED) == 5
            part = w.fetch(unique_topic, 0, 0, READ_COMMITTED)
            assert part.last_stable_offset == 2 and part.high_watermark == 5
            assert {r.offset for r in _records(part)} <= {0, 1}
        assert java_values(b, unique_topic, "read_committed") == ["pre1", "pre2"]
        assert java_values(b, unique_topic, "read_uncommitted") == [
            "pre1",
            "pre2",
            "t1",
            "t2",
            "post",
        ]
        p.ok(outcome)
    expected = (
        ["pre1", "pre2", "t1", "t2", "post"] if outcome == "commit" else ["pre1", "pre2", "post"]
    )
    assert java_values(b, unique_topic, "read_committed") == expected
    with Wire(b) as w:
        assert w.list_offset(unique_topic, 0, READ_COMMITTED) == 6


def _records(part):  # type: ignore[no-untyped-def]
    from txn_helpers import decode_records

    return [r for r in decode_records(part.records) if not r.control]


def test_send_offsets_commit_moves_group_offsets_abort_leaves_them(
    shared_broker, unique_topic, unique_group, name_factory
) -> None:
    b = shared_broker.bootstrap
    create_topic(b, unique_topic)
    source = name_factory("source")
    create_topic(b, source)
    with JavaTxn(b, name_factory("tid")) as p:
        p.ok("init")
        p.ok("begin")
        p.send(unique_topic, ["out-1"])
        assert p.send_offsets(unique_group, {(source, 0): 5})["ok"]
        p.ok("commit")
        assert java_group_offsets(b, unique_group) == {(source, 0): 5}
        p.ok("begin")
        p.send(unique_topic, ["out-2"])
        assert p.send_offsets(unique_group, {(source, 0): 9})["ok"]
        p.ok("abort")
        assert java_group_offsets(b, unique_group) == {(source, 0): 5}
        # offsets alone (no data) in a transaction
        p.ok("begin")
        assert p.send_offsets(unique_group, {(source, 0): 7})["ok"]
        p.ok("commit")
    assert java_group_offsets(b, unique_group) == {(source, 0): 7}
    assert java_values(b, unique_topic, "read_committed") == ["out-1"]


def test_consume_transform_produce_loop(shared_broker, name_factory, unique_group) -> None:
    b = shared_broker.bootstrap
    source, sink = name_factory("in"), name_factory("out")
    create_topic(b, source, partitions=3)
    create_topic(b, sink, partitions=3)
    java.produce(b, source, count=300, linger_ms=5)
    res = java.run(
        [
            "ctp",
            "--bootstrap",
            b,
            "--input",
            source,
            "--output",
            sink,
            "--group",
            unique_group,
            "--commit-every",
            "25",
            "--idle-ms",
            "1000",
            *java.props_args({"transactional.id": name_factory("tid")}),
        ],
        timeout=120,
    )
    done = res.events[-1]
    assert done["event"] == "done" and done["copied"] == 300
    out = java.consume(b, sink, until_end=True, isolation_level="read_committed")
    assert sorted(r["value"] for r in out.records) == sorted(f"value-{i}" for i in range(300))
    offsets = java_group_offsets(b, unique_group)
    ends = java.run(["list-offsets", "--bootstrap", b, "--topic", source, "--spec", "latest"])
    assert offsets == {(source, r["partition"]): r["offset"] for r in ends.records}


def test_transaction_timeout_aborts_and_fences(broker_factory, unique_topic, name_factory) -> None:
    broker = broker_factory({"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500})
    b = broker.bootstrap
    create_topic(b, unique_topic)
    tid = name_factory("tid")
    with JavaTxn(
        b,
        tid,
        {
            "transaction.timeout.ms": 3000,
            "delivery.timeout.ms": 3000,
            "request.timeout.ms": 2000,
            "linger.ms": 0,
        },
    ) as p:
        p.ok("init")
        p.ok("begin")
        assert p.send(unique_topic, ["late-1", "late-2"]) == [0, 1]
        with Wire(b) as w:
            assert w.list_offset(unique_topic, 0, READ_COMMITTED) == 0
        p.ok("sleep", ms=3500)  # the producer stays idle past its transaction's timeout
        state = wait_timed_out(b, tid)
        assert state.transaction_state == "CompleteAbort"
        assert state.producer_epoch == 1
        with Wire(b) as w:  # aborted by the coordinator: read_committed moves on
            assert w.list_offset(unique_topic, 0, READ_COMMITTED) == 3
        res = p.cmd("commit")
        assert not res["ok"] and res["error_type"] in FENCED, res
    assert java_values(b, unique_topic, "read_committed") == []
    assert java_values(b, unique_topic, "read_uncommitted") == ["late-1", "late-2"]
    with JavaTxn(b, tid) as again:  # the id still works
        again.ok("init")
        again.ok("begin")
        again.send(unique_topic, ["next"])
        again.ok("commit")
    assert java_values(b, unique_topic, "read_committed") == ["next"]


def test_timeout_above_maximum_is_invalid(shared_broker, name_factory) -> None:
    with JavaTxn(
        shared_broker.bootstrap, name_factory("tid"), {"transaction.timeout.ms": 900001}
    ) as p:
        res = p.cmd("init")
        assert not res["ok"], res
        # the Java client has no special case for INVALID_TRANSACTION_TIMEOUT (50): it wraps
        # the error's message in a fatal KafkaException
        assert "transaction timeout is larger than the maximum" in res["error_message"], res
    with Wire(shared_broker.bootstrap) as w:
        assert w.init_pid(name_factory("tid"), timeout_ms=900001)[0] == INVALID_TRANSACTION_TIMEOUT
        assert w.init_pid(name_factory("tid"), timeout_ms=900000)[0] == 0


def _back_to_back(bootstrap: str, count: int, name_factory, group: str) -> None:  # type: ignore[no-untyped-def]
    sink, source = name_factory("out"), name_factory("src")
    create_topic(bootstrap, sink)
    create_topic(bootstrap, source)
    with JavaTxn(bootstrap, name_factory("tid"), {"linger.ms": 0}) as p:
        p.ok("init")
        res = p.ok(
            "loop", timeout=600, count=count, topic=sink, group=group, **{"offsets-topic": source}
        )
        assert res["count"] == count
    assert java_group_offsets(bootstrap, group) == {(source, 0): count}
    with Wire(bootstrap) as w:
        assert w.list_offset(sink, 0, READ_COMMITTED) == 2 * count
        assert w.list_offset(sink, 0, READ_UNCOMMITTED) == 2 * count


def test_back_to_back_transactions_with_offsets(shared_broker, name_factory, unique_group) -> None:
    _back_to_back(shared_broker.bootstrap, 300, name_factory, unique_group)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_5000_back_to_back_transactions_with_offsets(broker, name_factory, unique_group) -> None:
    _back_to_back(broker.bootstrap, 5000, name_factory, unique_group)


def test_producer_ids_after_restart_are_greater(broker, name_factory) -> None:
    b = broker.bootstrap
    before = []
    kept = name_factory("kept")
    for tid in [kept, name_factory("a"), name_factory("b")]:
        with JavaTxn(b, tid) as p:
            p.ok("init")
    for tid in [kept]:
        d = java.admin(b, "describe-transactions", "--transactional-id", tid).records[0]
        before.append(d["producer_id"])
        assert d["producer_epoch"] == 0
    with Wire(b) as w:
        before += [w.init_pid(None)[1] for _ in range(3)]
    for hard in (True, False):
        broker.restart(hard=hard)
        after = []
        for tid in [name_factory("c"), name_factory("d")]:
            with JavaTxn(b, tid) as p:
                p.ok("init")
            after.append(
                java.admin(b, "describe-transactions", "--transactional-id", tid).records[0][
                    "producer_id"
                ]
            )
        with Wire(b) as w:
            after += [w.init_pid(None)[1] for _ in range(3)]
        assert min(after) > max(before), (before, after)
        before += after
    # a known transactional id keeps its producer id and gets a new epoch
    with JavaTxn(b, kept) as p:
        p.ok("init")
    d = java.admin(b, "describe-transactions", "--transactional-id", kept).records[0]
    assert d["producer_id"] == before[0] and d["producer_epoch"] == 1
