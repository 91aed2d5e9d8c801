"""The consumer protocol's server-side assignors against hand-checked vectors."""

from __future__ import annotations

from odradek.coordinator.group.assignors import AssignmentSpec, range_assign, uniform_assign

T0, T1 = "topic-0", "topic-1"


def spec(
    subscriptions: dict[str, set[str]],
    partitions: dict[str, int],
    current: dict[str, dict[str, set[int]]] | None = None,
) -> AssignmentSpec:
    return AssignmentSpec(
        {m: frozenset(t) for m, t in subscriptions.items()}, partitions, current or {}
    )


def test_range_gives_contiguous_ranges_per_topic() -> None:
    both = {T0, T1}
    assert range_assign(spec({"a": both, "b": both}, {T0: 4, T1: 3})) == {
        "a": {T0: {0, 1}, T1: {0, 1}},
        "b": {T0: {2, 3}, T1: {2}},
    }


def test_range_only_among_subscribers() -> None:
    assert range_assign(spec({"a": {T0}, "b": {T0, T1}}, {T0: 2, T1: 2})) == {
        "a": {T0: {0}},
        "b": {T0: {1}, T1: {0, 1}},
    }


def test_uniform_spreads_a_new_group_in_partition_order() -> None:
    both = {T0, T1}
    assert uniform_assign(spec({"a": both, "b": both, "c": both}, {T0: 4, T1: 2})) == {
        "a": {T0: {0, 3}},
        "b": {T0: {1}, T1: {0}},
        "c": {T0: {2}, T1: {1}},
    }


def test_uniform_keeps_partitions_when_a_member_leaves() -> None:
    both = {T0, T1}
    before = {"a": {T0: {0, 3}}, "b": {T0: {1}, T1: {0}}, "c": {T0: {2}, T1: {1}}}
    after = uniform_assign(spec({"a": both, "b": both}, {T0: 4, T1: 2}, before))
    assert after == {"a": {T0: {0, 2, 3}}, "b": {T0: {1}, T1: {0, 1}}}


def test_uniform_moves_only_what_balance_needs_when_a_member_joins() -> None:
    both = {T0, T1}
    before = {"a": {T0: {0, 3}}, "b": {T0: {1}, T1: {0}}, "c": {T0: {2}, T1: {1}}}
    after = uniform_assign(
        spec({"a": both, "b": both, "c": both, "d": both}, {T0: 4, T1: 2}, before)
    )
    # 6 partitions for 4 members: two may keep two (a and b, who hold two already);
    # c gives its highest partition to d
    assert after == {
        "a": {T0: {0, 3}},
        "b": {T0: {1}, T1: {0}},
        "c": {T0: {2}},
        "d": {T1: {1}},
    }


def test_uniform_balances_different_subscriptions() -> None:
    after = uniform_assign(spec({"a": {T0}, "b": {T0, T1}}, {T0: 2, T1: 2}))
    assert after == {"a": {T0: {0, 1}}, "b": {T1: {0, 1}}}


def test_uniform_drops_partitions_of_topics_no_longer_subscribed_or_gone() -> None:
    before = {"a": {T0: {0, 1}, T1: {0}}, "b": {T0: {2}}}
    after = uniform_assign(spec({"a": {T0}, "b": {T0}}, {T0: 2}, before))
    assert after == {"a": {T0: {0}}, "b": {T0: {1}}}


def test_uniform_properties_for_a_hundred_members() -> None:
    members = {f"m{i:03d}": {T0, T1} for i in range(100)}
    first = uniform_assign(spec(members, {T0: 150, T1: 100}))
    counts = [sum(len(p) for p in owned.values()) for owned in first.values()]
    assert sum(counts) == 250 and max(counts) - min(counts) <= 1
    owners = [(t, p) for owned in first.values() for t, parts in owned.items() for p in parts]
    assert len(owners) == len(set(owners)) == 250
    # one member leaves: only its partitions move
    del members["m050"]
    second = uniform_assign(spec(members, {T0: 150, T1: 100}, first))
    for member, owned in second.items():
        for topic, parts in first[member].items():
            assert parts <= owned.get(topic, set()), member
