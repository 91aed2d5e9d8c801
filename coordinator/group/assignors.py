"""Server-side assignors of the consumer group protocol (KIP-848): pure functions from
the members' subscriptions, the topics and the current target assignment to the next
target assignment.

- ``uniform`` (the default): every partition of the subscribed topics goes to one
  subscribed member; counts differ by at most one between members with the same
  subscription; a partition stays where it is unless balance needs it elsewhere.
- ``range``: per topic, the members subscribed to it (ordered by member id) take
  contiguous ranges, the first ones one partition more when it does not divide.

Topics are named by id; an assignment maps member id to topic id to a set of
partitions.
"""

from __future__ import annotations

import heapq
import uuid
from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass

Assignment = dict[str, dict[uuid.UUID, set[int]]]
Partition = tuple[uuid.UUID, int]


@dataclass(frozen=True)
class AssignmentSpec:
    """What an assignor sees: each member's subscribed topic ids, each topic's partition
    count, and the target assignment it may keep."""

    subscriptions: Mapping[str, frozenset[uuid.UUID]]
    partitions: Mapping[uuid.UUID, int]
    current: Mapping[str, Mapping[uuid.UUID, Set[int]]]


def _empty(members: Mapping[str, frozenset[uuid.UUID]]) -> Assignment:
    return {member: {} for member in members}


def _give(assignment: Assignment, member: str, partition: Partition) -> None:
    assignment[member].setdefault(partition[0], set()).add(partition[1])


def range_assign(spec: AssignmentSpec) -> Assignment:
    assignment = _empty(spec.subscriptions)
    for topic in sorted(spec.partitions):
        members = sorted(m for m, topics in spec.subscriptions.items() if topic in topics)
        if not members:
            continue
        count = spec.partitions[topic]
        share, extra = divmod(count, len(members))
        start = 0
        for index, member in enumerate(members):
            size = share + (1 if index < extra else 0)
            for partition in range(start, start + size):
                _give(assignment, member, (topic, partition))
            start += size
    return assignment


def uniform_assign(spec: AssignmentSpec) -> Assignment:
    members = sorted(spec.subscriptions)
    subscriptions = set(spec.subscriptions.values())
    if len(subscriptions) == 1:
        return _uniform_same_topics(members, next(iter(subscriptions)), spec)
    return _uniform_different_topics(members, spec)


def _uniform_same_topics(
    members: list[str], topics: frozenset[uuid.UUID], spec: AssignmentSpec
) -> Assignment:
    """Every member subscribes to the same topics: counts differ by at most one, the
    extra partitions go to members that hold more already, and the rest is dealt out in
    partition order to the members with the fewest."""
    partitions = [
        (t, p) for t in sorted(topics & set(spec.partitions)) for p in range(spec.partitions[t])
    ]
    valid = set(partitions)
    owner: dict[Partition, str] = {}
    held: dict[str, list[Partition]] = {}
    for member in members:
        held[member] = []
        for topic, parts in sorted(spec.current.get(member, {}).items()):
            for partition in sorted(parts):
                tp = (topic, partition)
                if tp in valid and tp not in owner:
                    owner[tp] = member
                    held[member].append(tp)
    base, extra = divmod(len(partitions), len(members))
    by_holdings = sorted(members, key=lambda m: (-len(held[m]), m))
    quota = {m: base + (1 if rank < extra else 0) for rank, m in enumerate(by_holdings)}
    _give_back(owner, held, quota)
    waiting = [(len(held[m]), m) for m in members if len(held[m]) < quota[m]]
    heapq.heapify(waiting)
    for tp in partitions:
        if tp in owner:
            continue
        count, member = heapq.heappop(waiting)
        owner[tp] = member
        held[member].append(tp)
        if count + 1 < quota[member]:
            heapq.heappush(waiting, (count + 1, member))
    assignment = _empty(spec.subscriptions)
    for tp, member in owner.items():
        _give(assignment, member, tp)
    return assignment


def _give_back(
    owner: dict[Partition, str], held: dict[str, list[Partition]], quotas: dict[str, int]
) -> None:
    """A member above its quota gives back its highest partitions."""
    for member, partitions in held.items():
        excess = len(partitions) - quotas[member]
        if excess > 0:
            partitions.sort()
            for tp in partitions[-excess:]:
                del owner[tp]
            del partitions[-excess:]


def _uniform_different_topics(members: list[str], spec: AssignmentSpec) -> Assignment:
    eligible: dict[Partition, list[str]] = {}
    for topic in sorted(spec.partitions):
        subscribers = [m for m in members if topic in spec.subscriptions[m]]
        if subscribers:
            for partition in range(spec.partitions[topic]):
                eligible[(topic, partition)] = subscribers
    owner: dict[Partition, str] = {}
    held: dict[str, list[Partition]] = {m: [] for m in members}
    # keep what members still may and do own
    for member in members:
        for topic, parts in sorted(spec.current.get(member, {}).items()):
            for partition in sorted(parts):
                tp = (topic, partition)
                if member in eligible.get(tp, ()) and tp not in owner:
                    owner[tp] = member
                    held[member].append(tp)
    quotas = _quotas(members, eligible)
    _give_back(owner, held, quotas)
    for tp, takers in eligible.items():
        if tp not in owner:
            taker = min(takers, key=lambda m: (len(held[m]), m))
            owner[tp] = taker
            held[taker].append(tp)
    _balance(owner, held, eligible)
    assignment = _empty(spec.subscriptions)
    for tp, member in owner.items():
        _give(assignment, member, tp)
    return assignment


def _quotas(members: list[str], eligible: Mapping[Partition, list[str]]) -> dict[str, int]:
    """The most partitions each member should hold: the partitions it could take shared
    evenly among all members that could take them (exact for identical subscriptions)."""
    could: dict[str, int] = {m: 0 for m in members}
    sharers: dict[str, set[str]] = {m: set() for m in members}
    for takers in eligible.values():
        for member in takers:
            could[member] += 1
            sharers[member].update(takers)
    return {m: -(-could[m] // len(sharers[m])) if could[m] else 0 for m in members}


def _balance(
    owner: dict[Partition, str],
    held: dict[str, list[Partition]],
    eligible: Mapping[Partition, list[str]],
) -> None:
    """Move partitions from fuller to emptier members while that narrows the gap by two
    or more (different subscriptions can leave greedy placement uneven)."""
    moved = True
    while moved:
        moved = False
        for tp, takers in eligible.items():
            current = owner[tp]
            target = min(takers, key=lambda m: (len(held[m]), m))
            if len(held[current]) - len(held[target]) >= 2:
                held[current].remove(tp)
                held[target].append(tp)
                owner[tp] = target
                moved = True


ASSIGNORS: dict[str, Callable[[AssignmentSpec], Assignment]] = {
    "uniform": uniform_assign,
    "range": range_assign,
}
DEFAULT_ASSIGNOR = "uniform"
