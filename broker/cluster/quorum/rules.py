"""The rules a KRaft voter follows, as pure functions of what it knows.

- Epochs only grow. A request from an older epoch is refused; one from a newer epoch
  moves the voter to it (with no leader and no vote yet).
- A voter grants one vote per epoch, to a candidate whose log is at least as complete
  as its own: the last record's epoch first, then the log's end offset.
- A record is committed once a majority of the voters hold it and it was written in
  the leader's own epoch (the leader writes one record as it takes office, so that
  everything before it commits with it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import NamedTuple

NONE = -1


@dataclass(frozen=True)
class Election:
    """What a voter has settled in its current epoch: the leader it knows, the
    candidate it voted for (NONE: neither yet)."""

    epoch: int = 0
    leader_id: int = NONE
    voted_id: int = NONE

    def moved_to(self, epoch: int) -> Election:
        """The same voter in a newer epoch, which has no leader and no vote yet."""
        return self if epoch == self.epoch else Election(epoch)


class LogEnd(NamedTuple):
    """Where a log ends: the epoch of its last record and the offset after it."""

    epoch: int
    offset: int


def log_is_complete(candidate: LogEnd, mine: LogEnd) -> bool:
    return (candidate.epoch, candidate.offset) >= (mine.epoch, mine.offset)


def decide_vote(
    state: Election, candidate_id: int, candidate_epoch: int, candidate: LogEnd, mine: LogEnd
) -> tuple[bool, Election]:
    """Whether to grant `candidate_id` its vote, and the voter's state afterwards."""
    if candidate_epoch < state.epoch:
        return False, state
    state = state.moved_to(candidate_epoch)
    if state.leader_id != NONE:
        return False, state  # this epoch has its leader already
    if state.voted_id != NONE:
        return state.voted_id == candidate_id, state
    if not log_is_complete(candidate, mine):
        return False, state
    return True, replace(state, voted_id=candidate_id)


def majority(voter_count: int) -> int:
    return voter_count // 2 + 1


def committed_end(ends: Iterable[int], voter_count: int, epoch_start: int) -> int | None:
    """The high watermark a leader may announce: the log end a majority of the voters
    have reached (`ends`, one per voter heard from), if that reaches past the record
    the leader wrote as it took office at `epoch_start`; else None."""
    ranked = sorted(ends, reverse=True)
    needed = majority(voter_count)
    if len(ranked) < needed:
        return None
    end = ranked[needed - 1]
    return end if end > epoch_start else None


def divergence(
    fetch_offset: int, last_fetched_epoch: int, leader_end_for_epoch: tuple[int, int]
) -> LogEnd | None:
    """A follower's log ends at `fetch_offset` with a record of `last_fetched_epoch`;
    the leader's log has that epoch end at `leader_end_for_epoch` (epoch, end offset;
    the epoch is the largest the leader has at or below the follower's). None: the
    follower's log is a prefix of the leader's; else where it must cut it back to."""
    if last_fetched_epoch < 0 or fetch_offset <= 0:
        return None
    epoch, end = leader_end_for_epoch
    if epoch == last_fetched_epoch and end >= fetch_offset:
        return None
    return LogEnd(epoch, min(end, fetch_offset))
