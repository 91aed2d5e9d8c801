"""Bad input to every transaction API, through the raw protocol: Kafka's error codes, no
crash, nothing already stored lost."""

from __future__ import annotations

import time

import pytest
from txn_helpers import (
    ADD_PARTITIONS,
    CONCURRENT_TRANSACTIONS,
    DESCRIBE_PRODUCERS,
    INIT_PRODUCER_ID,
    INVALID_PRODUCER_EPOCH,
    INVALID_PRODUCER_ID_MAPPING,
    INVALID_REQUEST,
    INVALID_TRANSACTION_TIMEOUT,
    INVALID_TXN_STATE,
    LIST_TRANSACTIONS,
    OPERATION_NOT_ATTEMPTED,
    PRODUCER_FENCED,
    READ_COMMITTED,
    TRANSACTIONAL_ID_NOT_FOUND,
    UNKNOWN_TOPIC_OR_PARTITION,
    WRITE_TXN_MARKERS,
    Wire,
)

from odradek.protocol.batch import ATTR_TRANSACTIONAL, build_batch

pytestmark = pytest.mark.timeout(120)


def txn_batch(pid: int, epoch: int, seq: int, *values: bytes) -> bytes:
    return build_batch(
        [(None, v) for v in values],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        attributes=ATTR_TRANSACTIONAL,
        timestamp=int(time.time() * 1000),
    )


@pytest.fixture
def wire(shared_broker):  # type: ignore[no-untyped-def]
    with Wire(shared_broker.bootstrap) as w:
        yield w


def test_init_producer_id_bad_input(wire, name_factory) -> None:
    assert wire.init_pid("", retry=False)[0] == INVALID_REQUEST
    for timeout in (0, -5, 900001):
        assert wire.init_pid(name_factory("tid"), timeout_ms=timeout)[0] == (
            INVALID_TRANSACTION_TIMEOUT
        )
    tid = name_factory("tid")
    code, pid, epoch = wire.init_pid(tid)
    assert (code, epoch) == (0, 0)
    # KIP-360: the caller's producer id must match
    assert wire.init_pid(tid, producer_id=pid + 12345, epoch=0)[0] == PRODUCER_FENCED
    # the producer bumps its own epoch; a retry of that bump gets the same answer
    assert wire.init_pid(tid, producer_id=pid, epoch=0) == (0, pid, 1)
    assert wire.init_pid(tid, producer_id=pid, epoch=0) == (0, pid, 1)
    assert wire.init_pid(tid, producer_id=pid, epoch=5)[0] == PRODUCER_FENCED
    # a new instance (no expected epoch) bumps and fences the old one for good
    assert wire.init_pid(tid) == (0, pid, 2)
    assert wire.init_pid(tid, producer_id=pid, epoch=1)[0] == PRODUCER_FENCED
    assert wire.init_pid(tid, producer_id=pid, epoch=0)[0] == PRODUCER_FENCED
    assert wire.init_pid(tid, producer_id=pid, epoch=2) == (0, pid, 3)
    # older versions: no expected producer, plain bump
    assert wire.init_pid(tid, version=2) == (0, pid, 4)
    # an unknown transactional id with an expected producer: a new producer id
    code, other, epoch = wire.init_pid(name_factory("tid"), producer_id=pid, epoch=7)
    assert code == 0 and other != pid and epoch == 0


def test_add_partitions_bad_input(wire, unique_topic, name_factory) -> None:
    wire.create_topic(unique_topic, partitions=2)
    tid = name_factory("tid")
    tp = (unique_topic, 0)
    assert wire.add_partitions(name_factory("unknown"), 1, 0, [tp]) == {
        tp: INVALID_PRODUCER_ID_MAPPING
    }
    _, pid, epoch = wire.init_pid(tid)
    assert wire.add_partitions(tid, pid + 1, epoch, [tp]) == {tp: INVALID_PRODUCER_ID_MAPPING}
    assert wire.add_partitions(tid, pid, epoch + 1, [tp]) == {tp: PRODUCER_FENCED}
    assert wire.add_partitions(tid, pid, epoch + 1, [tp], version=1) == {tp: INVALID_PRODUCER_EPOCH}
    # an unknown topic or partition: nothing added at all
    missing = ("no-such-topic-" + unique_topic, 0)
    assert wire.add_partitions(tid, pid, epoch, [tp, missing]) == {
        tp: OPERATION_NOT_ATTEMPTED,
        missing: UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert wire.add_partitions(tid, pid, epoch, [(unique_topic, 7)])[(unique_topic, 7)] == (
        UNKNOWN_TOPIC_OR_PARTITION
    )
    assert wire.describe_transaction(tid).transaction_state == "Empty"
    assert wire.add_partitions(tid, pid, epoch, [tp]) == {tp: 0}
    assert wire.add_partitions(tid, pid, epoch, [tp]) == {tp: 0}  # again: no-op
    state = wire.describe_transaction(tid)
    assert state.transaction_state == "Ongoing" and state.partitions == [tp]
    assert wire.end_txn(tid, pid, epoch, commit=True) == 0


def test_add_offsets_bad_input(wire, unique_group, name_factory) -> None:
    tid = name_factory("tid")
    assert wire.add_offsets(tid, 1, 0, unique_group) == INVALID_PRODUCER_ID_MAPPING
    _, pid, epoch = wire.init_pid(tid)
    assert wire.add_offsets(tid, pid + 1, epoch, unique_group) == INVALID_PRODUCER_ID_MAPPING
    assert wire.add_offsets(tid, pid, epoch + 3, unique_group) == PRODUCER_FENCED
    assert wire.add_offsets(tid, pid, epoch + 3, unique_group, version=1) == (
        INVALID_PRODUCER_EPOCH
    )
    assert wire.add_offsets(tid, pid, epoch, unique_group) == 0
    assert wire.describe_transaction(tid).partitions[0][0] == "__consumer_offsets"
    assert wire.end_txn(tid, pid, epoch, commit=False) == 0


def test_end_txn_bad_input(wire, unique_topic, name_factory) -> None:
    wire.create_topic(unique_topic)
    tid = name_factory("tid")
    assert wire.end_txn(tid, 1, 0, commit=True) == INVALID_PRODUCER_ID_MAPPING
    _, pid, epoch = wire.init_pid(tid)
    # no transaction open
    assert wire.end_txn(tid, pid, epoch, commit=True) == INVALID_TXN_STATE
    assert wire.end_txn(tid, pid, epoch, commit=False) == INVALID_TXN_STATE
    assert wire.end_txn(tid, pid + 1, epoch, commit=True) == INVALID_PRODUCER_ID_MAPPING
    assert wire.end_txn(tid, pid, epoch + 1, commit=True) == PRODUCER_FENCED
    assert wire.end_txn(tid, pid, epoch + 1, commit=True, version=1) == INVALID_PRODUCER_EPOCH
    tp = (unique_topic, 0)
    assert wire.add_partitions(tid, pid, epoch, [tp]) == {tp: 0}
    assert wire.produce(unique_topic, 0, txn_batch(pid, epoch, 0, b"v"), tid)[0] == 0
    assert wire.end_txn(tid, pid, epoch, commit=True) == 0
    # the same result again: fine; the opposite one: INVALID_TXN_STATE
    assert wire.end_txn(tid, pid, epoch, commit=True) == 0
    assert wire.end_txn(tid, pid, epoch, commit=False) == INVALID_TXN_STATE
    assert wire.add_partitions(tid, pid, epoch, [tp]) == {tp: 0}
    assert wire.end_txn(tid, pid, epoch, commit=False) == 0
    assert wire.end_txn(tid, pid, epoch, commit=False) == 0
    assert wire.end_txn(tid, pid, epoch, commit=True) == INVALID_TXN_STATE
    stored = wire.read_all(unique_topic)
    assert [r.value for r in stored if not r.control] == [b"v"]
    assert [r.offset for r in stored if r.control] == [1, 2]  # a marker per EndTxn
    assert wire.list_offset(unique_topic, 0, READ_COMMITTED) == 3


def test_transactional_produce_bad_input(wire, unique_topic, name_factory) -> None:
    wire.create_topic(unique_topic, partitions=2)
    tid = name_factory("tid")
    _, pid, epoch = wire.init_pid(tid)
    # not added to a transaction
    code, _ = wire.produce(unique_topic, 0, txn_batch(pid, epoch, 0, b"x"), tid)
    assert code == INVALID_TXN_STATE
    assert wire.add_partitions(tid, pid, epoch, [(unique_topic, 0)]) == {(unique_topic, 0): 0}
    # added partition 0, not partition 1
    code, _ = wire.produce(unique_topic, 1, txn_batch(pid, epoch, 0, b"x"), tid)
    assert code == INVALID_TXN_STATE
    # transactional records without a transactional id, or with another one
    assert wire.produce(unique_topic, 0, txn_batch(pid, epoch, 0, b"x"), None)[0] != 0
    assert wire.produce(unique_topic, 0, txn_batch(pid, epoch, 0, b"x"), tid + "-x")[0] != 0
    assert wire.produce(unique_topic, 0, txn_batch(pid, epoch, 0, b"ok"), tid) == (0, 0)
    # a newer producer instance takes over: the old epoch is stale
    assert wire.init_pid(tid, retry=False)[0] == CONCURRENT_TRANSACTIONS  # aborts first
    assert wire.init_pid(tid) == (0, pid, epoch + 2)
    code, _ = wire.produce(unique_topic, 0, txn_batch(pid, epoch, 1, b"late"), tid)
    assert code in (INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE)
    stored = wire.read_all(unique_topic)
    assert [r.value for r in stored if not r.control] == [b"ok"]
    assert wire.list_offset(unique_topic, 0, READ_COMMITTED) == 2  # aborted by the fence
    assert wire.read_all(unique_topic, 1) == []


def test_txn_offset_commit_bad_input(wire, unique_topic, unique_group, name_factory) -> None:
    wire.create_topic(unique_topic)
    tid = name_factory("tid")
    tp = (unique_topic, 0)
    assert wire.txn_offset_commit(tid, unique_group, 1, 0, {tp: 5}) == {
        tp: INVALID_PRODUCER_ID_MAPPING
    }
    _, pid, epoch = wire.init_pid(tid)
    # AddOffsetsToTxn first
    assert wire.txn_offset_commit(tid, unique_group, pid, epoch, {tp: 5}) == {tp: INVALID_TXN_STATE}
    assert wire.add_offsets(tid, pid, epoch, unique_group) == 0
    assert wire.txn_offset_commit(tid, unique_group, pid + 1, epoch, {tp: 5}) == {
        tp: INVALID_PRODUCER_ID_MAPPING
    }
    # Kafka's transaction check answers a fenced producer so at every version
    assert wire.txn_offset_commit(tid, unique_group, pid, epoch + 1, {tp: 5}) == {
        tp: INVALID_PRODUCER_EPOCH
    }
    assert wire.txn_offset_commit(tid, unique_group, pid, epoch + 1, {tp: 5}, version=2) == {
        tp: INVALID_PRODUCER_EPOCH
    }
    missing = ("no-such-topic-" + unique_topic, 0)
    assert wire.txn_offset_commit(tid, unique_group, pid, epoch, {missing: 1, tp: 4}) == {
        missing: UNKNOWN_TOPIC_OR_PARTITION,
        tp: 0,
    }
    assert wire.end_txn(tid, pid, epoch, commit=True) == 0
    assert wire.offset_fetch(unique_group, [tp], require_stable=True) == {tp: (4, 0)}
    # after the commit the partition is no longer in the transaction
    assert wire.txn_offset_commit(tid, unique_group, pid, epoch, {tp: 9}) == {tp: INVALID_TXN_STATE}
    assert wire.offset_fetch(unique_group, [tp], require_stable=True) == {tp: (4, 0)}


def test_describe_and_list_bad_input(wire, unique_topic, name_factory) -> None:
    state = wire.describe_transaction(name_factory("unknown"))
    assert state.error_code == TRANSACTIONAL_ID_NOT_FOUND
    r = wire.call(
        LIST_TRANSACTIONS,
        1,
        {
            "state_filters": ["Ongoing", "Bogus"],
            "producer_id_filters": [-77],
            "duration_filter": -1,
        },
    )
    assert r.error_code == 0 and list(r.unknown_state_filters) == ["Bogus"]
    assert list(r.transaction_states) == []
    r = wire.call(
        DESCRIBE_PRODUCERS,
        0,
        {"topics": [{"name": "no-such-topic-" + unique_topic, "partition_indexes": [0, 3]}]},
    )
    assert [p.error_code for p in r.topics[0].partitions] == [UNKNOWN_TOPIC_OR_PARTITION] * 2


def test_write_txn_markers_and_add_partitions_junk(wire, unique_topic) -> None:
    wire.create_topic(unique_topic)
    r = wire.call(
        WRITE_TXN_MARKERS,
        1,
        {
            "markers": [
                {
                    "producer_id": 123456789,
                    "producer_epoch": 0,
                    "transaction_result": True,
                    "topics": [
                        {"name": "no-such-topic-" + unique_topic, "partition_indexes": [0]},
                        {"name": "__consumer_offsets", "partition_indexes": [999]},
                    ],
                    "coordinator_epoch": 0,
                }
            ]
        },
    )
    codes = [p.error_code for t in r.markers[0].topics for p in t.partitions]
    assert codes == [UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_OR_PARTITION]
    # an empty AddPartitionsToTxn, an empty transactional id
    r = wire.call(
        ADD_PARTITIONS,
        3,
        {
            "v3_and_below_transactional_id": "",
            "v3_and_below_producer_id": 1,
            "v3_and_below_producer_epoch": 0,
            "v3_and_below_topics": [{"name": unique_topic, "partitions": [0]}],
        },
    )
    codes = [
        p.partition_error_code
        for t in r.results_by_topic_v3_and_below
        for p in t.results_by_partition
    ]
    assert codes and all(c != 0 for c in codes)
    assert wire.init_pid(None)[0] == 0  # still serving


def test_idle_transactional_ids_expire(broker_factory, unique_topic, name_factory) -> None:
    broker = broker_factory(
        {
            "transactional.id.expiration.ms": 1500,
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": 300,
        }
    )
    idle, busy = name_factory("idle"), name_factory("busy")
    with Wire(broker.bootstrap) as w:
        w.create_topic(unique_topic)
        _, pid, epoch = w.init_pid(idle)
        assert w.add_partitions(idle, pid, epoch, [(unique_topic, 0)]) == {(unique_topic, 0): 0}
        assert w.end_txn(idle, pid, epoch, commit=True) == 0
        _, busy_pid, busy_epoch = w.init_pid(busy, timeout_ms=60000)
        assert w.add_partitions(busy, busy_pid, busy_epoch, [(unique_topic, 0)]) == {
            (unique_topic, 0): 0
        }
        deadline = time.monotonic() + 15
        while w.describe_transaction(idle).error_code != TRANSACTIONAL_ID_NOT_FOUND:
            assert time.monotonic() < deadline, "the idle transactional id never expired"
            time.sleep(0.3)
        # an open transaction does not expire
        assert w.describe_transaction(busy).transaction_state == "Ongoing"
        # the expired id starts over with a new producer id; the old one is refused
        code, new_pid, new_epoch = w.init_pid(idle)
        assert code == 0 and new_pid != pid and new_epoch == 0
        assert w.add_partitions(idle, pid, epoch, [(unique_topic, 0)]) == {
            (unique_topic, 0): INVALID_PRODUCER_ID_MAPPING
        }
        assert w.end_txn(busy, busy_pid, busy_epoch, commit=True) == 0
    broker.restart(hard=True)  # the expiry (a tombstone) survives a crash
    with Wire(broker.bootstrap) as w:
        state = w.describe_transaction(idle)  # (may have expired again meanwhile)
        assert state.error_code == TRANSACTIONAL_ID_NOT_FOUND or state.producer_id == new_pid


def test_epoch_exhaustion_rotates_the_producer_id(broker, unique_topic, name_factory) -> None:
    """At epoch 32766 (Short.MAX_VALUE - 1) the next InitProducerId hands out a new
    producer id with epoch 0; a KIP-360 retry of that rotation gets the same answer, and
    an open transaction at the last epoch is still fenced and aborted."""
    kip360, ongoing = name_factory("kip360"), name_factory("ongoing")
    with Wire(broker.bootstrap) as w:
        w.create_topic(unique_topic)
        for tid in (kip360, ongoing):
            _, pid, epoch = w.init_pid(tid)
            while epoch < 32766:  # pipelined, to be quick
                batch = min(1000, 32766 - epoch)
                sent = [
                    w.client.request_bytes(
                        INIT_PRODUCER_ID,
                        4,
                        {
                            "transactional_id": tid,
                            "transaction_timeout": 60000,
                            "producer_id": -1,
                            "producer_epoch": -1,
                        },
                    )
                    for _ in range(batch)
                ]
                w.client.send_raw(b"".join(data for _, data in sent))
                for correlation, _ in sent:
                    r = w.client.read_response(INIT_PRODUCER_ID, 4, correlation)
                    assert r.error_code == 0 and r.producer_id == pid
                    epoch = r.producer_epoch
            assert epoch == 32766
        # the producer itself, expecting its current epoch: new producer id, and a retry
        # of that request (its answer lost) gets the same one
        old = w.describe_transaction(kip360).producer_id
        code, rotated, epoch = w.init_pid(kip360, producer_id=old, epoch=32766)
        assert code == 0 and rotated != old and epoch == 0
        assert w.init_pid(kip360, producer_id=old, epoch=32766) == (0, rotated, 0)
        assert w.init_pid(kip360, producer_id=old, epoch=32765)[0] == PRODUCER_FENCED
        # an open transaction at epoch 32766: a new instance fences it (epoch 32767),
        # aborts it, and then gets a new producer id with epoch 0
        state = w.describe_transaction(ongoing)
        pid, tp = state.producer_id, (unique_topic, 0)
        assert w.add_partitions(ongoing, pid, 32766, [tp]) == {tp: 0}
        assert w.produce(unique_topic, 0, txn_batch(pid, 32766, 0, b"doomed"), ongoing) == (0, 0)
        code, fresh, epoch = w.init_pid(ongoing)
        assert code == 0 and fresh not in (pid, rotated) and epoch == 0
        assert w.end_txn(ongoing, pid, 32766, commit=True) == INVALID_PRODUCER_ID_MAPPING
        assert w.list_offset(unique_topic, 0, READ_COMMITTED) == 2
        code, _ = w.produce(unique_topic, 0, txn_batch(pid, 32766, 1, b"late"), ongoing)
        assert code != 0
        assert [r.value for r in w.read_all(unique_topic) if not r.control] == [b"doomed"]
