"""SPEC §8 transaction scenarios through librdkafka (confluent-kafka), and the raw
OffsetFetch(require_stable) check."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.env import require_module
from helpers.topics import create_topic
from txn_clients import rdk_read
from txn_helpers import (
    INVALID_TRANSACTION_TIMEOUT,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    UNSTABLE_OFFSET_COMMIT,
    Wire,
    wait_timed_out,
)

require_module("confluent_kafka")

from confluent_kafka import (  # noqa: E402
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

pytestmark = pytest.mark.timeout(180)
TIMEOUT = 30.0
FENCED = {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}


def txn_producer(bootstrap: str, tid: str, **conf: Any) -> Producer:
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": tid,
            "linger.ms": 0,
            **{k.replace("_", "."): v for k, v in conf.items()},
        }
    )


def send(p: Producer, topic: str, values: list[str]) -> None:
    for v in values:
        p.produce(topic, key=v, value=v, partition=0)
    assert p.flush(TIMEOUT) == 0


def values(bootstrap: str, topic: str, isolation: str) -> list[str]:
    return [m.value().decode() for m in rdk_read(bootstrap, topic, isolation)]


def group_metadata(bootstrap: str, group: str) -> Any:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    meta = consumer.consumer_group_metadata()
    consumer.close()
    return meta


def committed(bootstrap: str, group: str, topic: str) -> int:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": "read_committed"}
    )
    try:
        return int(consumer.committed([TopicPartition(topic, 0)], timeout=TIMEOUT)[0].offset)
    finally:
        consumer.close()


def test_zombie_is_fenced(shared_broker, unique_topic, name_factory) -> None:
    b = shared_broker.bootstrap
    create_topic(b, unique_topic)
    tid = name_factory("tid")
    zombie = txn_producer(b, tid)
    zombie.init_transactions(TIMEOUT)
    zombie.begin_transaction()
    send(zombie, unique_topic, ["zombie-1", "zombie-2"])
    fresh = txn_producer(b, tid)
    fresh.init_transactions(TIMEOUT)  # aborts the zombie's transaction
    fresh.begin_transaction()
    send(fresh, unique_topic, ["fresh"])
    fresh.commit_transaction(TIMEOUT)
    with pytest.raises(KafkaException) as info:
        zombie.commit_transaction(TIMEOUT)
    err = info.value.args[0]
    assert err.code() in FENCED or err.fatal(), err
    assert values(b, unique_topic, "read_committed") == ["fresh"]
    assert values(b, unique_topic, "read_uncommitted") == ["zombie-1", "zombie-2", "fresh"]


def test_commit_and_abort(shared_broker, unique_topic, name_factory) -> None:
    b = shared_broker.bootstrap
    create_topic(b, unique_topic)
    p = txn_producer(b, name_factory("tid"))
    p.init_transactions(TIMEOUT)
    for batch, commit in ((["a1", "a2"], True), (["b1", "b2"], False), (["c1"], True)):
        p.begin_transaction()
        send(p, unique_topic, batch)
        if commit:
            p.commit_transaction(TIMEOUT)
        else:
            p.abort_transaction(TIMEOUT)
    got = rdk_read(b, unique_topic, "read_committed")
    assert [m.value() for m in got] == [b"a1", b"a2", b"c1"]
    assert [m.offset() for m in got] == [0, 1, 6]
    everything = rdk_read(b, unique_topic, "read_uncommitted")
    assert [m.offset() for m in everything] == [0, 1, 3, 4, 6]  # never the markers 2, 5, 7


def test_open_transaction_blocks_read_committed(shared_broker, unique_topic, name_factory) -> None:
    b = shared_broker.bootstrap
    create_topic(b, unique_topic)
    plain = Producer({"bootstrap.servers": b})
    send(plain, unique_topic, ["pre"])
    p = txn_producer(b, name_factory("tid"))
    p.init_transactions(TIMEOUT)
    p.begin_transaction()
    send(p, unique_topic, ["t1", "t2"])
    send(plain, unique_topic, ["post"])
    assert values(b, unique_topic, "read_committed") == ["pre"]
    assert values(b, unique_topic, "read_uncommitted") == ["pre", "t1", "t2", "post"]
    with Wire(b) as w:
        assert w.list_offset(unique_topic, 0, READ_COMMITTED) == 1
    p.commit_transaction(TIMEOUT)
    assert values(b, unique_topic, "read_committed") == ["pre", "t1", "t2", "post"]


def test_send_offsets_commit_and_abort(
    shared_broker, unique_topic, unique_group, name_factory
) -> None:
    b = shared_broker.bootstrap
    create_topic(b, unique_topic)
    source = name_factory("src")
    create_topic(b, source)
    meta = group_metadata(b, unique_group)
    p = txn_producer(b, name_factory("tid"))
    p.init_transactions(TIMEOUT)
    p.begin_transaction()
    send(p, unique_topic, ["x"])
    p.send_offsets_to_transaction([TopicPartition(source, 0, 12)], meta, TIMEOUT)
    p.commit_transaction(TIMEOUT)
    assert committed(b, unique_group, source) == 12
    p.begin_transaction()
    send(p, unique_topic, ["y"])
    p.send_offsets_to_transaction([TopicPartition(source, 0, 20)], meta, TIMEOUT)
    p.abort_transaction(TIMEOUT)
    assert committed(b, unique_group, source) == 12
    assert values(b, unique_topic, "read_committed") == ["x"]


def test_require_stable_during_pending_txn_offset_commit(
    shared_broker, unique_topic, unique_group, name_factory
) -> None:
    tid = name_factory("tid")
    tp = (unique_topic, 0)
    with Wire(shared_broker.bootstrap) as w:
        w.create_topic(unique_topic)
        code, pid, epoch = w.init_pid(tid)
        assert code == 0
        assert w.add_offsets(tid, pid, epoch, unique_group) == 0
        assert w.txn_offset_commit(tid, unique_group, pid, epoch, {tp: 3}) == {tp: 0}
        assert w.offset_fetch(unique_group, [tp], require_stable=True) == {
            tp: (-1, UNSTABLE_OFFSET_COMMIT)
        }
        assert w.offset_fetch(unique_group, [tp], require_stable=False) == {tp: (-1, 0)}
        assert w.end_txn(tid, pid, epoch, commit=True) == 0
        assert w.offset_fetch(unique_group, [tp], require_stable=True) == {tp: (3, 0)}
        # a second transaction, aborted: the committed offset stays, stable again after
        assert w.add_offsets(tid, pid, epoch, unique_group) == 0
        assert w.txn_offset_commit(tid, unique_group, pid, epoch, {tp: 8}) == {tp: 0}
        assert w.offset_fetch(unique_group, [tp], require_stable=True)[tp][1] == (
            UNSTABLE_OFFSET_COMMIT
        )
        assert w.offset_fetch(unique_group, [tp], require_stable=False) == {tp: (3, 0)}
        assert w.end_txn(tid, pid, epoch, commit=False) == 0
        assert w.offset_fetch(unique_group, [tp], require_stable=True) == {tp: (3, 0)}


def test_transaction_timeout_aborts_and_fences(broker_factory, unique_topic, name_factory) -> None:
    broker = broker_factory({"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500})
    b = broker.bootstrap
    create_topic(b, unique_topic)
    tid = name_factory("tid")
    p = txn_producer(b, tid, transaction_timeout_ms=3000)
    p.init_transactions(TIMEOUT)
    p.begin_transaction()
    send(p, unique_topic, ["late"])
    assert wait_timed_out(b, tid).transaction_state == "CompleteAbort"
    with Wire(b) as w:
        assert w.list_offset(unique_topic, 0, READ_COMMITTED) == 2
    with pytest.raises(KafkaException) as info:
        p.commit_transaction(TIMEOUT)
    err = info.value.args[0]
    assert err.code() in FENCED or err.fatal() or err.txn_requires_abort(), err
    assert values(b, unique_topic, "read_committed") == []
    assert values(b, unique_topic, "read_uncommitted") == ["late"]


def test_timeout_above_maximum(broker_factory, name_factory) -> None:
    broker = broker_factory({"transaction.max.timeout.ms": 60000})
    p = txn_producer(broker.bootstrap, name_factory("tid"), transaction_timeout_ms=60001)
    with pytest.raises(KafkaException) as info:
        p.init_transactions(TIMEOUT)
    assert info.value.args[0].code() == INVALID_TRANSACTION_TIMEOUT
    ok = txn_producer(broker.bootstrap, name_factory("tid"), transaction_timeout_ms=60000)
    ok.init_transactions(TIMEOUT)


def test_back_to_back_transactions_with_offsets(shared_broker, name_factory, unique_group) -> None:
    b = shared_broker.bootstrap
    sink, source = name_factory("out"), name_factory("src")
    create_topic(b, sink)
    create_topic(b, source)
    meta = group_metadata(b, unique_group)
    p = txn_producer(b, name_factory("tid"))
    p.init_transactions(TIMEOUT)
    count = 200
    for i in range(count):
        p.begin_transaction()
        p.produce(sink, value=b"%d" % i, partition=0)
        p.send_offsets_to_transaction([TopicPartition(source, 0, i + 1)], meta, TIMEOUT)
        p.commit_transaction(TIMEOUT)
    assert committed(b, unique_group, source) == count
    with Wire(b) as w:
        assert w.list_offset(sink, 0, READ_COMMITTED) == 2 * count
        assert w.list_offset(sink, 0, READ_UNCOMMITTED) == 2 * count


def test_producer_ids_after_restart(broker, name_factory) -> None:
    b = broker.bootstrap
    tids = [name_factory("t") for _ in range(6)]
    for tid in tids[:3]:
        txn_producer(b, tid).init_transactions(TIMEOUT)
    with Wire(b) as w:
        before = [w.describe_transaction(t).producer_id for t in tids[:3]]
    broker.restart(hard=True)
    for tid in tids[3:]:
        txn_producer(b, tid).init_transactions(TIMEOUT)
    with Wire(b) as w:
        after = [w.describe_transaction(t).producer_id for t in tids[3:]]
        assert min(after) > max(before)
        again = w.describe_transaction(tids[0])
        assert again.producer_id == before[0] and again.producer_epoch == 0


def test_interleaved_transactions(shared_broker, unique_topic, name_factory) -> None:
    """Two producers' transactions interleaved on one partition: the aborted one's
    records never show, whichever offset a read_committed consumer starts from."""
    b = shared_broker.bootstrap
    create_topic(b, unique_topic)
    p1 = txn_producer(b, name_factory("tid1"))
    p2 = txn_producer(b, name_factory("tid2"))
    for p in (p1, p2):
        p.init_transactions(TIMEOUT)
        p.begin_transaction()
    send(p1, unique_topic, ["a1"])  # 0
    send(p2, unique_topic, ["b1"])  # 1
    send(p1, unique_topic, ["a2"])  # 2
    send(p2, unique_topic, ["b2"])  # 3
    with Wire(b) as w:
        assert w.list_offset(unique_topic, 0, READ_COMMITTED) == 0
    p2.commit_transaction(TIMEOUT)  # marker 4
    with Wire(b) as w:  # p1 still open since offset 0
        assert w.list_offset(unique_topic, 0, READ_COMMITTED) == 0
    send(p1, unique_topic, ["a3"])  # 5
    p1.abort_transaction(TIMEOUT)  # marker 6
    assert values(b, unique_topic, "read_committed") == ["b1", "b2"]
    with Wire(b) as w:
        assert w.list_offset(unique_topic, 0, READ_COMMITTED) == 7
        for start in (0, 2, 3, 5):
            part = w.fetch(unique_topic, 0, start, READ_COMMITTED)
            aborted = [(a.producer_id, a.first_offset) for a in part.aborted_transactions]
            assert len(aborted) == 1 and aborted[0][1] == 0, (start, aborted)
        part = w.fetch(unique_topic, 0, 7, READ_COMMITTED)
        assert list(part.aborted_transactions) == []
    consumer = Consumer(
        {
            "bootstrap.servers": b,
            "group.id": "x",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    try:  # starting in the middle of the aborted transaction
        consumer.assign([TopicPartition(unique_topic, 0, 2)])
        got = []
        while True:
            msg = consumer.poll(5)
            assert msg is not None
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF
                break
            got.append(msg.value())
        assert got == [b"b2"]
    finally:
        consumer.close()
