"""One share-partition: the records of one topic-partition as one share group sees them.

Offsets below `start` are done (acknowledged or archived). Every offset in
[start, end) has a state, kept as runs of neighbouring offsets that share it:

    AVAILABLE     may be handed out (delivery count 0: never delivered yet)
    ACQUIRED      handed to one member, under a lock that runs out
    ACKNOWLEDGED  accepted by its member: done
    ARCHIVED      rejected, past the delivery limit, a transaction marker or an
                  aborted record: done

Offsets at `end` and later have never been looked at. Acquisition counts a delivery;
a release, a run-out lock or a member leaving makes a record AVAILABLE again, or
ARCHIVED once its delivery count has reached the limit. `start` moves past the
leading done offsets.

Changes that must survive a restart come out of the `plan_*` methods as a `Delta`
(runs with their new state), which `apply` makes real: the shard writes the delta
as a record first and applies it on replay, so loading rebuilds the same state.
Acquisitions are not written: after a restart an acquired record is AVAILABLE again.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = 0, 1, 2, 4
STATE_NAMES = {AVAILABLE: "Available", ACQUIRED: "Acquired", 2: "Acknowledged", 4: "Archived"}

# acknowledge types on the wire
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4


@dataclass(slots=True)
class Run:
    first: int
    last: int
    state: int
    delivery_count: int
    member: str = ""  # the holder while ACQUIRED
    lock: int = 0  # the acquisition (its lock timer) while ACQUIRED

    def same_as(self, other: Run) -> bool:
        return (self.state, self.delivery_count, self.member, self.lock) == (
            other.state,
            other.delivery_count,
            other.member,
            other.lock,
        )


@dataclass(frozen=True, slots=True)
class StateBatch:
    """A persisted run: ACQUIRED is written as AVAILABLE."""

    first_offset: int
    last_offset: int
    state: int
    delivery_count: int


@dataclass(frozen=True)
class Delta:
    start_offset: int
    batches: tuple[StateBatch, ...] = ()


@dataclass(frozen=True, slots=True)
class FetchedBatch:
    """A stored record batch as acquisition sees it; `skip` batches (transaction
    markers, aborted records under read_committed) are archived, never handed out."""

    base_offset: int
    last_offset: int
    skip: bool = False


class AcknowledgeError(Exception):
    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


INVALID_REQUEST = 42
INVALID_RECORD_STATE = 121


@dataclass
class SharePartition:
    start: int
    end: int = -1
    runs: list[Run] = field(default_factory=list)
    state_epoch: int = 0
    leader_epoch: int = 0
    next_lock: int = 1

    def __post_init__(self) -> None:
        if self.end < self.start:
            self.end = self.start

    # -- reading -----------------------------------------------------------------------

    def next_fetch_offset(self) -> int:
        for run in self.runs:
            if run.state == AVAILABLE:
                return run.first
        return self.end

    def acquirable_below(self, max_in_flight: int) -> int:
        """An offset below which lies everything an acquisition could take now: what
        is in flight, and the new offsets the in-flight cap still allows (a batch that
        starts below it is taken whole)."""
        return self.end + max(0, max_in_flight - self.in_flight())

    def in_flight(self) -> int:
        return self.end - self.start

    def state_batches(self) -> tuple[StateBatch, ...]:
        return tuple(
            StateBatch(
                r.first, r.last, AVAILABLE if r.state == ACQUIRED else r.state, r.delivery_count
            )
            for r in self.runs
        )

    def held_by(self, member: str) -> list[Run]:
        return [r for r in self.runs if r.state == ACQUIRED and r.member == member]

    # -- acquisition (in memory only) ----------------------------------------------------

    def acquire(
        self,
        member: str,
        batches: list[FetchedBatch],
        max_records: int,
        max_in_flight: int,
        *,
        record_limit: bool = False,
        batch_size: int = 0,
    ) -> list[tuple[int, int, int, int]]:
        """Hand what is AVAILABLE in `batches` to `member` until `max_records` are
        acquired; new offsets only while fewer than `max_in_flight` are in flight.

        By default whole stored batches are taken (the limit may be passed up to a
        batch's end), and new records are cut into pieces of at least `batch_size`
        records at stored-batch boundaries, each piece under a lock of its own. With
        `record_limit` no more than `max_records` are taken, a stored batch cut where
        the limit falls (its rest is in flight, AVAILABLE). Records delivered before
        and new ones are under different locks, as Kafka's in-flight batches are.
        Returns [(first, last, delivery count, lock)]."""
        acquired: list[tuple[int, int, int, int]] = []
        budget = max_records
        again = self._new_lock()  # the lock of records acquired again
        lock = 0  # the lock of the piece of new records being taken
        piece_first = -1  # the first new offset under `lock`
        for batch in batches:
            if budget <= 0:
                break
            if batch.last_offset < self.start:
                continue
            low = max(batch.base_offset, self.start)
            if low < self.end:
                top = min(batch.last_offset, self.end - 1)
                for run in self._take(low, top, AVAILABLE):
                    if budget <= 0:
                        break
                    if record_limit and run.last - run.first + 1 > budget:
                        self._split_at(run.first + budget)
                    run.state, run.member, run.lock = ACQUIRED, member, again
                    run.delivery_count += 1
                    acquired.append((run.first, run.last, run.delivery_count, again))
                    budget -= run.last - run.first + 1
            if batch.last_offset < self.end or budget <= 0:
                continue
            if self.in_flight() >= max_in_flight:
                break
            if batch.base_offset > self.end:  # offsets the log no longer has
                self._extend(Run(self.end, batch.base_offset - 1, ARCHIVED, 0))
            first = self.end
            if batch.skip:
                self._extend(Run(first, batch.last_offset, ARCHIVED, 0))
                continue
            last = min(batch.last_offset, first + budget - 1) if record_limit else batch.last_offset
            if piece_first < 0 or 0 < batch_size <= first - piece_first:
                lock, piece_first = self._new_lock(), first
            self._extend(Run(first, last, ACQUIRED, 1, member, lock))
            acquired.append((first, last, 1, lock))
            budget -= last - first + 1
            if last < batch.last_offset:
                self._extend(Run(last + 1, batch.last_offset, AVAILABLE, 0))
        self._merge()
        self._advance()
        return _coalesce(acquired)

    def _new_lock(self) -> int:
        self.next_lock += 1
        return self.next_lock - 1

    def _extend(self, run: Run) -> None:
        self.runs.append(run)
        self.end = run.last + 1

    # -- planned changes (written first, then applied) -----------------------------------

    def plan_acknowledge(
        self,
        member: str,
        acknowledgements: list[tuple[int, int, tuple[int, ...]]],
        delivery_limit: int,
    ) -> tuple[Delta, list[tuple[int, int]]]:
        """Check every acknowledgement first (all or nothing); raises AcknowledgeError.
        Returns the delta and the (first, last) ranges whose locks are renewed.

        As on Kafka, offsets below the start are done already and pass unremarked;
        offsets past what is in flight are a bad request."""
        changes: list[StateBatch] = []
        renewed: list[tuple[int, int]] = []
        for first, last, types in acknowledgements:
            if last < first or not types or (len(types) != 1 and len(types) != last - first + 1):
                raise AcknowledgeError(INVALID_REQUEST, None)
            if any(kind not in (GAP, ACCEPT, RELEASE, REJECT, RENEW) for kind in types):
                raise AcknowledgeError(INVALID_REQUEST, None)
            if last < self.start:
                continue
            self._check_in_flight(first, last)
            for offset_first, offset_last, kind in _spans(first, last, types):
                if offset_last < self.start:
                    continue
                for run in self._held(member, max(offset_first, self.start), offset_last):
                    if kind == RENEW:
                        renewed.append((run[0], run[1]))
                        continue
                    changes.append(_after(run, kind, delivery_limit))
        return Delta(self.start, tuple(changes)), renewed

    def plan_release(self, member: str | None, lock: int | None, delivery_limit: int) -> Delta:
        """Give back what `member` holds (or what the acquisition `lock` still holds)."""
        changes = [
            _after((r.first, r.last, r.delivery_count), RELEASE, delivery_limit)
            for r in self.runs
            if r.state == ACQUIRED
            and (member is None or r.member == member)
            and (lock is None or r.lock == lock)
        ]
        return Delta(self.start, tuple(changes))

    def _check_in_flight(self, first: int, last: int) -> None:
        """[first, last] (not all below the start) must lie within what is in flight."""
        if not self.runs:
            raise AcknowledgeError(
                INVALID_RECORD_STATE,
                "Batch record not found. The request batch offsets are not found in the cache.",
            )
        if first >= self.end:
            raise AcknowledgeError(
                INVALID_REQUEST,
                "Batch record not found. The first offset in request is past acquired records.",
            )
        if last >= self.end:
            raise AcknowledgeError(
                INVALID_REQUEST,
                "Batch record not found. The last offset in request is past acquired records.",
            )

    def _held(self, member: str, first: int, last: int) -> list[tuple[int, int, int]]:
        """(first, last, delivery count) pieces of [first, last]: every offset must be
        ACQUIRED by `member`."""
        pieces = []
        for run in self._overlapping(first, last):
            if run.state != ACQUIRED:
                raise AcknowledgeError(
                    INVALID_RECORD_STATE,
                    "The batch cannot be acknowledged. The batch is not in the acquired state.",
                )
            if run.member != member:
                raise AcknowledgeError(
                    INVALID_RECORD_STATE, "Member is not the owner of batch record"
                )
            pieces.append((max(run.first, first), min(run.last, last), run.delivery_count))
        return pieces

    # -- applying persisted changes -------------------------------------------------------

    def apply(self, delta: Delta) -> bool:
        """Make a written delta real. True when a record became AVAILABLE or the start
        moved on (room for more in-flight records)."""
        released = False
        start_before = self.start
        for batch in delta.batches:
            if batch.last_offset < max(self.start, delta.start_offset):
                continue
            if batch.first_offset >= self.end:
                if batch.first_offset > self.end:
                    self._extend(Run(self.end, batch.first_offset - 1, AVAILABLE, 0))
                self._extend(
                    Run(batch.first_offset, batch.last_offset, batch.state, batch.delivery_count)
                )
            else:
                if batch.last_offset >= self.end:
                    self._extend(Run(self.end, batch.last_offset, AVAILABLE, 0))
                low = max(batch.first_offset, self.start)
                for run in self._take(low, batch.last_offset, None):
                    run.state, run.delivery_count = batch.state, batch.delivery_count
                    run.member, run.lock = "", 0
            released |= batch.state == AVAILABLE
        self.move_start(delta.start_offset)
        self._merge()
        self._advance()
        return released or self.start > start_before

    def move_start(self, offset: int) -> None:
        if offset <= self.start:
            return
        self.start = offset
        self.runs = [r for r in self.runs if r.last >= offset]
        if self.runs and self.runs[0].first < offset:
            self.runs[0].first = offset
        if self.end < offset:
            self.end = offset
            self.runs = []

    def restore(self, start: int, batches: tuple[StateBatch, ...], state_epoch: int) -> None:
        """Replace everything with a snapshot (loading, or the offsets set anew)."""
        self.start = self.end = start
        self.runs = []
        self.state_epoch = state_epoch
        self.apply(Delta(start, batches))

    # -- runs ------------------------------------------------------------------------

    def _overlapping(self, first: int, last: int) -> list[Run]:
        index = max(0, bisect.bisect_right(self.runs, first, key=_first) - 1)
        found = []
        for run in self.runs[index:]:
            if run.first > last:
                break
            if run.last >= first:
                found.append(run)
        return found

    def _split_at(self, offset: int) -> None:
        """Make `offset` the first offset of a run (if it lies inside one)."""
        index = bisect.bisect_right(self.runs, offset, key=_first) - 1
        if index < 0:
            return
        run = self.runs[index]
        if run.first < offset <= run.last:
            tail = Run(offset, run.last, run.state, run.delivery_count, run.member, run.lock)
            run.last = offset - 1
            self.runs.insert(index + 1, tail)

    def _take(self, first: int, last: int, state: int | None) -> list[Run]:
        """The runs covering exactly [first, last] (split as needed), of `state` only
        when given."""
        self._split_at(first)
        self._split_at(last + 1)
        return [r for r in self._overlapping(first, last) if state is None or r.state == state]

    def _merge(self) -> None:
        merged: list[Run] = []
        for run in self.runs:
            if merged and merged[-1].same_as(run) and merged[-1].last + 1 == run.first:
                merged[-1].last = run.last
            else:
                merged.append(run)
        self.runs = merged

    def _advance(self) -> None:
        done = 0
        for run in self.runs:
            if run.state not in (ACKNOWLEDGED, ARCHIVED):
                break
            done += 1
        if done:
            self.start = self.runs[done - 1].last + 1
            del self.runs[:done]


def _first(run: Run) -> int:
    return run.first


def _after(piece: tuple[int, int, int], kind: int, delivery_limit: int) -> StateBatch:
    first, last, count = piece
    if kind == ACCEPT:
        state = ACKNOWLEDGED
    elif kind == RELEASE:
        state = ARCHIVED if count >= delivery_limit else AVAILABLE
    else:  # REJECT, GAP
        state = ARCHIVED
    return StateBatch(first, last, state, count)


def _spans(first: int, last: int, types: tuple[int, ...]) -> list[tuple[int, int, int]]:
    """(first, last, type) ranges of one acknowledgement batch."""
    if len(types) == 1:
        return [(first, last, types[0])]
    spans: list[tuple[int, int, int]] = []
    for offset, kind in zip(range(first, last + 1), types, strict=True):
        if spans and spans[-1][2] == kind and spans[-1][1] + 1 == offset:
            spans[-1] = (spans[-1][0], offset, kind)
        else:
            spans.append((offset, offset, kind))
    return spans


def _coalesce(ranges: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int, int]]:
    """Neighbouring ranges of one lock and one delivery count as one."""
    out: list[tuple[int, int, int, int]] = []
    for first, last, count, lock in sorted(ranges):
        if out and out[-1][1] + 1 == first and out[-1][2:] == (count, lock):
            out[-1] = (out[-1][0], last, count, lock)
        else:
            out.append((first, last, count, lock))
    return out
