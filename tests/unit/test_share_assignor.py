"""The share groups' assignor: every partition to some member, balanced, sticky."""

from __future__ import annotations

import uuid
from collections import Counter

from odradek.coordinator.group.share_assignor import assign

T1, T2, T3 = (uuid.UUID(int=i) for i in (1, 2, 3))


def test_more_partitions_than_members_spreads_them() -> None:
    result = assign({"a": frozenset({T1}), "b": frozenset({T1})}, {T1: 5}, {})
    assert sorted(result["a"][T1] | result["b"][T1]) == [0, 1, 2, 3, 4]
    assert not result["a"][T1] & result["b"][T1]
    assert sorted(len(r[T1]) for r in result.values()) == [2, 3]


def test_more_members_than_partitions_share_them() -> None:
    members = {m: frozenset({T1}) for m in "abcde"}
    result = assign(members, {T1: 2}, {})
    assert all(len(r[T1]) == 1 for r in result.values())
    owners = Counter(p for r in result.values() for p in r[T1])
    assert sorted(owners.values()) == [2, 3]


def test_three_members_one_partition_all_read_it() -> None:
    result = assign({m: frozenset({T1}) for m in "abc"}, {T1: 1}, {})
    assert all(r == {T1: frozenset({0})} for r in result.values())


def test_members_keep_what_they_had() -> None:
    first = assign({"a": frozenset({T1}), "b": frozenset({T1})}, {T1: 4}, {})
    second = assign({m: frozenset({T1}) for m in "abc"}, {T1: 4}, first)
    for member in "ab":
        kept = first[member][T1] & second[member][T1]
        assert len(kept) >= 1
    assert sorted(p for r in second.values() for p in r.get(T1, ())) == [0, 1, 2, 3]


def test_single_partition_topics_spread_over_members() -> None:
    topics = frozenset({T1, T2, T3})
    result = assign({m: topics for m in "abc"}, {T1: 1, T2: 1, T3: 1}, {})
    # each topic's partition goes to every member (3 members > 1 partition)
    assert all(len(r) == 3 for r in result.values())


def test_only_subscribers_get_a_topic() -> None:
    result = assign({"a": frozenset({T1}), "b": frozenset({T2})}, {T1: 2, T2: 2}, {})
    assert result == {"a": {T1: frozenset({0, 1})}, "b": {T2: frozenset({0, 1})}}
