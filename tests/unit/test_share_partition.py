"""The share-partition state machine: acquisition, acknowledgement, locks, limits."""

from __future__ import annotations

import pytest

from odradek.coordinator.share.partition import (
    ACCEPT,
    ACKNOWLEDGED,
    ACQUIRED,
    ARCHIVED,
    AVAILABLE,
    GAP,
    INVALID_RECORD_STATE,
    REJECT,
    RELEASE,
    AcknowledgeError,
    FetchedBatch,
    SharePartition,
)

LIMIT = 5


def batches(*spans: tuple[int, int]) -> list[FetchedBatch]:
    return [FetchedBatch(first, last) for first, last in spans]


def ranges(acquired: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int]]:
    """What a ShareFetch answer lists: (first, last, delivery count), locks left out."""
    return [(first, last, count) for first, last, count, _lock in acquired]


def ack(sp: SharePartition, member: str, first: int, last: int, *types: int) -> None:
    delta, _ = sp.plan_acknowledge(member, [(first, last, types)], LIMIT)
    sp.apply(delta)


def test_acquire_hands_out_whole_batches_once() -> None:
    sp = SharePartition(0)
    got = ranges(sp.acquire("a", batches((0, 4), (5, 9)), max_records=3, max_in_flight=100))
    assert got == [(0, 4, 1)]  # the whole first batch, then the budget is spent
    got = ranges(sp.acquire("b", batches((0, 4), (5, 9)), max_records=100, max_in_flight=100))
    assert got == [(5, 9, 1)]
    assert sp.next_fetch_offset() == 10
    assert sp.in_flight() == 10


def test_accept_moves_the_start_and_reject_archives() -> None:
    sp = SharePartition(0)
    sp.acquire("a", batches((0, 9)), 100, 100)
    ack(sp, "a", 0, 3, ACCEPT)
    assert sp.start == 4
    ack(sp, "a", 5, 5, REJECT)
    assert sp.start == 4  # offset 4 is still held
    ack(sp, "a", 4, 4, ACCEPT)
    assert sp.start == 6
    assert [(r.first, r.last, r.state) for r in sp.runs] == [(6, 9, ACQUIRED)]


def test_release_makes_records_available_with_their_count() -> None:
    sp = SharePartition(0)
    sp.acquire("a", batches((0, 4)), 100, 100)
    ack(sp, "a", 0, 4, RELEASE, RELEASE, ACCEPT, RELEASE, RELEASE)
    assert sp.start == 0
    assert sp.next_fetch_offset() == 0
    got = ranges(sp.acquire("b", batches((0, 4)), 100, 100))
    assert got == [(0, 1, 2), (3, 4, 2)]


def test_delivery_limit_archives() -> None:
    sp = SharePartition(0)
    for delivery in range(1, LIMIT + 1):
        acquired = sp.acquire("a", batches((0, 0)), 100, 100)
        lock = acquired[0][3]
        assert ranges(acquired) == [(0, 0, delivery)]
        sp.apply(sp.plan_release(None, lock, LIMIT))
    assert sp.start == 1 and sp.runs == []


def test_acknowledging_what_one_does_not_hold_changes_nothing() -> None:
    sp = SharePartition(0)
    sp.acquire("a", batches((0, 4)), 100, 100)
    with pytest.raises(AcknowledgeError) as err:
        sp.plan_acknowledge("b", [(0, 1, (ACCEPT,))], LIMIT)
    assert err.value.code == INVALID_RECORD_STATE
    with pytest.raises(AcknowledgeError):
        sp.plan_acknowledge("a", [(3, 7, (ACCEPT,))], LIMIT)  # 5-7 never acquired
    with pytest.raises(AcknowledgeError):  # all or nothing: the valid first batch stays held
        sp.plan_acknowledge("a", [(0, 0, (ACCEPT,)), (9, 9, (ACCEPT,))], LIMIT)
    assert [(r.first, r.last, r.state, r.member) for r in sp.runs] == [(0, 4, ACQUIRED, "a")]


def test_skipped_batches_are_archived_and_gaps_filled() -> None:
    sp = SharePartition(0)
    fetched = [FetchedBatch(0, 2), FetchedBatch(3, 3, skip=True), FetchedBatch(6, 7)]
    got = ranges(sp.acquire("a", fetched, 100, 100))
    assert got == [(0, 2, 1), (6, 7, 1)]
    ack(sp, "a", 0, 2, ACCEPT)
    assert sp.start == 6  # the marker at 3 and the missing 4-5 are done
    ack(sp, "a", 6, 7, GAP, ACCEPT)
    assert sp.start == 8


def test_in_flight_cap_stops_new_offsets_but_not_redeliveries() -> None:
    sp = SharePartition(0)
    sp.acquire("a", batches((0, 4)), 100, max_in_flight=5)
    got = ranges(sp.acquire("b", batches((5, 9)), 100, max_in_flight=5))
    assert got == []
    sp.apply(sp.plan_release("a", None, LIMIT))
    got = ranges(sp.acquire("b", batches((0, 4), (5, 9)), 100, max_in_flight=5))
    assert got == [(0, 4, 2)]


def test_member_release_and_snapshot_restore() -> None:
    sp = SharePartition(10)
    sp.acquire("a", batches((10, 14)), 100, 100)
    sp.acquire("b", batches((15, 19)), 100, 100)
    ack(sp, "b", 15, 16, ACCEPT)
    sp.apply(sp.plan_release("a", None, LIMIT))
    assert [(r.first, r.last, r.state, r.delivery_count) for r in sp.runs] == [
        (10, 14, AVAILABLE, 1),
        (15, 16, ACKNOWLEDGED, 1),
        (17, 19, ACQUIRED, 1),
    ]
    restored = SharePartition(0)
    restored.restore(sp.start, sp.state_batches(), 1)
    assert [(r.first, r.last, r.state, r.delivery_count) for r in restored.runs] == [
        (10, 14, AVAILABLE, 1),
        (15, 16, ACKNOWLEDGED, 1),
        (17, 19, AVAILABLE, 1),  # acquisitions are not kept
    ]
    assert restored.end == 20


def test_apply_past_the_end_fills_never_delivered_offsets() -> None:
    sp = SharePartition(0)
    sp.restore(0, (), 0)
    from odradek.coordinator.share.partition import Delta, StateBatch

    sp.apply(Delta(0, (StateBatch(5, 6, ACKNOWLEDGED, 1),)))
    assert [(r.first, r.last, r.state, r.delivery_count) for r in sp.runs] == [
        (0, 4, AVAILABLE, 0),
        (5, 6, ACKNOWLEDGED, 1),
    ]
    got = ranges(sp.acquire("a", batches((0, 9)), 100, 100))
    assert got == [(0, 4, 1), (7, 9, 1)]
    assert ARCHIVED != ACKNOWLEDGED


def test_record_limit_mode_cuts_stored_batches_at_the_limit() -> None:
    sp = SharePartition(0)
    got = ranges(sp.acquire("a", batches((0, 9)), 3, 100, record_limit=True))
    assert got == [(0, 2, 1)]
    # the rest of the stored batch is taken where the last acquisition stopped
    got = ranges(sp.acquire("b", batches((0, 9)), 4, 100, record_limit=True))
    assert got == [(3, 6, 1)]
    ack(sp, "a", 0, 2, RELEASE)
    # released records go first, and are cut at the limit too
    got = ranges(sp.acquire("c", batches((0, 9)), 2, 100, record_limit=True))
    assert got == [(0, 1, 2)]
    assert [(r.first, r.last, r.state) for r in sp.runs[:2]] == [
        (0, 1, ACQUIRED),
        (2, 2, AVAILABLE),
    ]
    # the rest of a cut stored batch is in flight, AVAILABLE, never delivered
    assert (sp.runs[-1].first, sp.runs[-1].last, sp.runs[-1].state) == (7, 9, AVAILABLE)
    assert sp.runs[-1].delivery_count == 0
    # the batch-optimized default passes the limit up to a stored batch's end
    got = ranges(sp.acquire("d", batches((0, 9)), 2, 100))
    assert got == [(2, 2, 2), (7, 9, 1)]
    # a cut batch's rest and a new batch are separate ranges, as on Kafka
    sp = SharePartition(0)
    assert ranges(sp.acquire("a", batches((0, 3), (4, 7)), 3, 100, record_limit=True)) == [
        (0, 2, 1)
    ]
    got = ranges(sp.acquire("b", batches((0, 3), (4, 7)), 2, 100, record_limit=True))
    assert got == [(3, 3, 1), (4, 4, 1)]


def test_batch_size_puts_new_records_under_separate_locks_at_batch_boundaries() -> None:
    sp = SharePartition(0)
    stored = batches((0, 2), (3, 5), (6, 8), (9, 9), (10, 14))
    acquired = sp.acquire("a", stored, 100, 100, batch_size=5)
    # a new piece starts at the first stored batch at least 5 records after the last
    assert [(first, last) for first, last, _, _ in acquired] == [(0, 5), (6, 14)]
    locks = {lock for *_, lock in acquired}
    assert len(locks) == 2
    # a lock running out gives back only its own piece
    sp.apply(sp.plan_release(None, acquired[0][3], LIMIT))
    assert [(r.first, r.last, r.state) for r in sp.runs] == [
        (0, 5, AVAILABLE),
        (6, 14, ACQUIRED),
    ]
    # without a batch size everything new is under one lock
    sp = SharePartition(0)
    acquired = sp.acquire("a", stored, 100, 100)
    assert [(first, last) for first, last, _, _ in acquired] == [(0, 14)]
