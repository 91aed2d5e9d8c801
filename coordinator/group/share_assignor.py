"""The share groups' server-side assignor ("simple").

Members of a share group may share partitions, so every partition of a subscribed
topic goes to at least one member, and no member is left idle while a topic has
partitions:

- a topic with at least as many partitions as subscribed members spreads them over
  the members, each getting floor or ceil of partitions / members;
- a topic with fewer partitions than members gives each member one partition, every
  partition going to floor or ceil of members / partitions members.

Within those bounds a member keeps what it had (so records in flight stay with the
member that holds them), and the first member to take each topic moves with the topic,
so several single-partition topics do not all land on one member.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

TopicPartitions = dict[uuid.UUID, frozenset[int]]


def assign(
    subscriptions: Mapping[str, frozenset[uuid.UUID]],
    partitions: Mapping[uuid.UUID, int],
    previous: Mapping[str, TopicPartitions],
) -> dict[str, TopicPartitions]:
    """member id -> {topic id -> partitions}; `subscriptions` names each member's topics
    (those that exist), `partitions` the partition count of each topic."""
    result: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in subscriptions}
    for turn, topic in enumerate(sorted(partitions)):
        members = sorted(m for m, topics in subscriptions.items() if topic in topics)
        count = partitions[topic]
        if not members or count <= 0:
            continue
        # rotate so that each topic starts with another member
        start = turn % len(members)
        members = members[start:] + members[:start]
        had = {m: previous.get(m, {}).get(topic, frozenset()) for m in members}
        if len(members) <= count:
            taken = _spread(members, count, had)
        else:
            taken = _share(members, count, had)
        for member, parts in taken.items():
            if parts:
                result[member][topic] = set(parts)
    return {
        member: {topic: frozenset(parts) for topic, parts in topics.items()}
        for member, topics in result.items()
    }


def _spread(
    members: list[str], count: int, had: Mapping[str, frozenset[int]]
) -> dict[str, list[int]]:
    """Each partition to one member; members get floor/ceil of count / len(members)."""
    base, extra = divmod(count, len(members))
    quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(members)}
    taken: dict[str, list[int]] = {m: [] for m in members}
    free = set(range(count))
    for member in members:
        for partition in sorted(had[member]):
            if partition in free and len(taken[member]) < quota[member]:
                taken[member].append(partition)
                free.discard(partition)
    remaining = sorted(free)
    for member in members:
        while len(taken[member]) < quota[member] and remaining:
            taken[member].append(remaining.pop(0))
    return taken


def _share(
    members: list[str], count: int, had: Mapping[str, frozenset[int]]
) -> dict[str, list[int]]:
    """One partition to each member; partitions get floor/ceil of len(members) / count."""
    base, extra = divmod(len(members), count)
    capacity = {p: base + (1 if p < extra else 0) for p in range(count)}
    taken: dict[str, list[int]] = {}
    for member in members:
        kept = [p for p in sorted(had[member]) if p < count and capacity[p] > 0]
        if kept:
            taken[member] = [kept[0]]
            capacity[kept[0]] -= 1
    for member in members:
        if member not in taken:
            partition = max(range(count), key=lambda p: (capacity[p], -p))
            taken[member] = [partition]
            capacity[partition] -= 1
    return taken
