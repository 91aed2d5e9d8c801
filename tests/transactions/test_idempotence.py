"""Idempotent producer checks through the raw protocol (SPEC §4): duplicates, gaps, stale
and new epochs, and deduplication of a retry after a broker restart."""

from __future__ import annotations

import time

import pytest
from txn_helpers import (
    INVALID_PRODUCER_EPOCH,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    Wire,
)

from odradek.protocol.batch import build_batch

pytestmark = pytest.mark.timeout(120)


def batch(pid: int, epoch: int, seq: int, values: list[bytes]) -> bytes:
    return build_batch(
        [(None, v) for v in values],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        timestamp=int(time.time() * 1000),
    )


def values(w: Wire, topic: str) -> list[bytes | None]:
    return [r.value for r in w.read_all(topic)]


def test_duplicate_is_answered_with_the_original_offset(shared_broker, unique_topic) -> None:
    with Wire(shared_broker.bootstrap) as w:
        w.create_topic(unique_topic)
        code, pid, epoch = w.init_pid()
        assert code == 0 and pid >= 0 and epoch == 0
        first = batch(pid, 0, 0, [b"a", b"b", b"c"])
        assert w.produce(unique_topic, 0, first) == (0, 0)
        assert w.produce(unique_topic, 0, batch(pid, 0, 3, [b"d"])) == (0, 3)
        # the same batches again: success, original offsets, nothing new stored
        assert w.produce(unique_topic, 0, first) == (0, 0)
        assert w.produce(unique_topic, 0, batch(pid, 0, 3, [b"d"])) == (0, 3)
        assert values(w, unique_topic) == [b"a", b"b", b"c", b"d"]
        assert w.produce(unique_topic, 0, batch(pid, 0, 4, [b"e"])) == (0, 4)


def test_duplicate_of_any_of_the_last_five_batches(shared_broker, unique_topic) -> None:
    with Wire(shared_broker.bootstrap) as w:
        w.create_topic(unique_topic)
        _, pid, _ = w.init_pid()
        for i in range(6):
            assert w.produce(unique_topic, 0, batch(pid, 0, i, [b"%d" % i])) == (0, i)
        for i in range(1, 6):  # the five cached batches
            assert w.produce(unique_topic, 0, batch(pid, 0, i, [b"%d" % i])) == (0, i)
        # the sixth-latest is no longer cached: not appended again
        code, _ = w.produce(unique_topic, 0, batch(pid, 0, 0, [b"0"]))
        assert code == OUT_OF_ORDER_SEQUENCE_NUMBER
        assert len(values(w, unique_topic)) == 6


def test_sequence_gap_is_out_of_order(shared_broker, unique_topic) -> None:
    with Wire(shared_broker.bootstrap) as w:
        w.create_topic(unique_topic)
        _, pid, _ = w.init_pid()
        assert w.produce(unique_topic, 0, batch(pid, 0, 0, [b"a", b"b"]))[0] == 0
        code, _ = w.produce(unique_topic, 0, batch(pid, 0, 5, [b"x"]))
        assert code == OUT_OF_ORDER_SEQUENCE_NUMBER
        # overlapping but not identical to the cached batch: also not appended
        code, _ = w.produce(unique_topic, 0, batch(pid, 0, 1, [b"b", b"c"]))
        assert code == OUT_OF_ORDER_SEQUENCE_NUMBER
        assert w.produce(unique_topic, 0, batch(pid, 0, 2, [b"c"])) == (0, 2)
        assert values(w, unique_topic) == [b"a", b"b", b"c"]


def test_stale_epoch_and_new_epoch_rules(shared_broker, unique_topic) -> None:
    with Wire(shared_broker.bootstrap) as w:
        w.create_topic(unique_topic)
        _, pid, _ = w.init_pid()
        assert w.produce(unique_topic, 0, batch(pid, 0, 0, [b"a"]))[0] == 0
        # a new epoch must start at sequence 0
        code, _ = w.produce(unique_topic, 0, batch(pid, 1, 7, [b"x"]))
        assert code == OUT_OF_ORDER_SEQUENCE_NUMBER
        assert w.produce(unique_topic, 0, batch(pid, 1, 0, [b"b"])) == (0, 1)
        # the old epoch is now stale
        code, _ = w.produce(unique_topic, 0, batch(pid, 0, 1, [b"y"]))
        assert code == INVALID_PRODUCER_EPOCH
        assert w.produce(unique_topic, 0, batch(pid, 1, 1, [b"c"])) == (0, 2)
        assert values(w, unique_topic) == [b"a", b"b", b"c"]


def test_producers_and_partitions_are_independent(shared_broker, unique_topic) -> None:
    with Wire(shared_broker.bootstrap) as w:
        w.create_topic(unique_topic, partitions=2)
        _, p1, _ = w.init_pid()
        _, p2, _ = w.init_pid()
        assert p1 != p2
        assert w.produce(unique_topic, 0, batch(p1, 0, 0, [b"a"])) == (0, 0)
        assert w.produce(unique_topic, 0, batch(p2, 0, 0, [b"b"])) == (0, 1)
        assert w.produce(unique_topic, 1, batch(p1, 0, 0, [b"c"])) == (0, 0)
        assert w.produce(unique_topic, 0, batch(p1, 0, 0, [b"a"])) == (0, 0)  # duplicate


@pytest.mark.parametrize("hard", [True, False], ids=["kill9", "clean"])
def test_retry_after_restart_is_deduplicated(broker, unique_topic, hard: bool) -> None:
    with Wire(broker.bootstrap) as w:
        w.create_topic(unique_topic)
        _, pid, _ = w.init_pid()
        for i in range(3):
            assert w.produce(unique_topic, 0, batch(pid, 0, i * 2, [b"%d" % i, b"x"]))[0] == 0
    broker.restart(hard=hard)
    with Wire(broker.bootstrap) as w:
        # the last batch, retried because its answer was lost in the crash
        assert w.produce(unique_topic, 0, batch(pid, 0, 4, [b"2", b"x"])) == (0, 4)
        assert w.produce(unique_topic, 0, batch(pid, 0, 2, [b"1", b"x"])) == (0, 2)
        code, _ = w.produce(unique_topic, 0, batch(pid, 0, 9, [b"gap"]))
        assert code == OUT_OF_ORDER_SEQUENCE_NUMBER
        assert w.produce(unique_topic, 0, batch(pid, 0, 6, [b"3"])) == (0, 6)
        assert values(w, unique_topic) == [b"0", b"x", b"1", b"x", b"2", b"x", b"3"]
        # producer ids issued now are new ones
        _, pid2, _ = w.init_pid()
        assert pid2 > pid
