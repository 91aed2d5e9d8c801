"""SPEC §6 assignment vectors through real Java consumers (KafkaTool group-member).

Client ids C0, C1, C2 make the broker's member ids (``clientId-UUID``) sort in that
order, which is the order Kafka's assignors hand partitions out in."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from helpers.broker import Broker
from helpers.topics import create_topic

from groups.members import (
    COOPERATIVE,
    RANGE,
    ROUNDROBIN,
    STICKY,
    JavaMember,
    Members,
    all_partitions,
    wait_settled,
)

pytestmark = pytest.mark.timeout(120)


def make_topics(b: Broker, name_factory: Callable[[str], str], sizes: list[int]) -> list[str]:
    base = name_factory("vec")
    names = [f"{base}-t{i}" for i in range(len(sizes))]
    for name, size in zip(names, sizes, strict=True):
        create_topic(b.bootstrap, name, size)
    return names


def short(assignment: dict[str, set[str]], names: list[str]) -> dict[str, list[str]]:
    """{"C0": {"<base>-t0:1"}} -> {"C0": ["t0p1"]}, sorted the way SPEC §6 writes them."""
    index = {name: f"t{i}" for i, name in enumerate(names)}
    out = {}
    for client, parts in assignment.items():
        items = []
        for item in parts:
            topic, _, p = item.rpartition(":")
            items.append((index[topic], int(p)))
        out[client] = [f"{t}p{p}" for t, p in sorted(items)]
    return out


def run_group(
    members: Members, names: list[str], sizes: list[int], subs: dict[str, list[int]], strategy: str
) -> tuple[list[JavaMember], dict[str, list[str]]]:
    started = [
        members.start(
            client, [names[i] for i in topics], {"partition.assignment.strategy": strategy}
        )
        for client, topics in subs.items()
    ]
    wanted = all_partitions({names[i]: sizes[i] for i in set().union(*subs.values())})
    got = wait_settled(started, wanted)
    return started, short(got, names)


def assert_balanced(assignment: dict[str, list[str]], subs: dict[str, list[int]]) -> None:
    """Sticky balance: no member has 2+ more partitions than another member that could
    take one of them (is subscribed to its topic)."""
    for a, parts_a in assignment.items():
        for b, parts_b in assignment.items():
            if len(parts_a) > len(parts_b) + 1:
                movable = [x for x in parts_a if int(x[1 : x.index("p")]) in subs[b]]
                assert not movable, f"unbalanced: {a}={parts_a} vs {b}={parts_b}"


@pytest.mark.parametrize(
    ("case", "strategy", "sizes", "subs", "expected"),
    [
        (
            "R1",
            RANGE,
            [4, 4],
            {"C0": [0, 1], "C1": [0, 1]},
            {"C0": ["t0p0", "t0p1", "t1p0", "t1p1"], "C1": ["t0p2", "t0p3", "t1p2", "t1p3"]},
        ),
        (
            "R2",
            RANGE,
            [3, 3],
            {"C0": [0, 1], "C1": [0, 1]},
            {"C0": ["t0p0", "t0p1", "t1p0", "t1p1"], "C1": ["t0p2", "t1p2"]},
        ),
        (
            "RR1",
            ROUNDROBIN,
            [3, 3],
            {"C0": [0, 1], "C1": [0, 1]},
            {"C0": ["t0p0", "t0p2", "t1p1"], "C1": ["t0p1", "t1p0", "t1p2"]},
        ),
        (
            "RR2",
            ROUNDROBIN,
            [1, 2, 3],
            {"C0": [0], "C1": [0, 1], "C2": [0, 1, 2]},
            {"C0": ["t0p0"], "C1": ["t1p0"], "C2": ["t1p1", "t2p0", "t2p1", "t2p2"]},
        ),
        (
            "RR4",
            ROUNDROBIN,
            [2, 2, 2, 2],
            {"C0": [0, 1, 2, 3], "C1": [0, 1, 2, 3], "C2": [0, 1, 2, 3]},
            {
                "C0": ["t0p0", "t1p1", "t3p0"],
                "C1": ["t0p1", "t2p0", "t3p1"],
                "C2": ["t1p0", "t2p1"],
            },
        ),
    ],
)
def test_exact_vectors(
    shared_broker: Broker,
    name_factory: Callable[[str], str],
    unique_group: str,
    case: str,
    strategy: str,
    sizes: list[int],
    subs: dict[str, list[int]],
    expected: dict[str, list[str]],
) -> None:
    names = make_topics(shared_broker, name_factory, sizes)
    with Members(shared_broker.bootstrap, unique_group) as members:
        _, got = run_group(members, names, sizes, subs, strategy)
    assert got == expected, case


def test_sticky_s2_member_leaves(
    shared_broker: Broker, name_factory: Callable[[str], str], unique_group: str
) -> None:
    """S2: RR4's input with the sticky assignor, then C1 leaves: C0 and C2 keep
    everything they had and end with 4 partitions each."""
    sizes = [2, 2, 2, 2]
    subs = {c: [0, 1, 2, 3] for c in ("C0", "C1", "C2")}
    names = make_topics(shared_broker, name_factory, sizes)
    with Members(shared_broker.bootstrap, unique_group) as members:
        started, before = run_group(members, names, sizes, subs, STICKY)
        assert sorted(len(v) for v in before.values()) == [2, 3, 3]
        generation = started[0].generation()
        started[1].close()
        rest = [started[0], started[2]]
        got = wait_settled(
            rest,
            all_partitions(dict(zip(names, sizes, strict=True))),
            extra=lambda _: all(m.generation() > generation for m in rest),
        )
        after = short(got, names)
    for client in ("C0", "C2"):
        assert set(before[client]) <= set(after[client]), (before, after)
    assert [len(after["C0"]), len(after["C2"])] == [4, 4]


def test_sticky_s3_s4(
    shared_broker: Broker, name_factory: Callable[[str], str], unique_group: str
) -> None:
    """S3: RR2's input with the sticky assignor is balanced (C0: t0p0, C1: t1p0 t1p1,
    C2: t2p*); S4: when C0 leaves, C1 and C2 keep theirs and t0p0 goes to C1."""
    sizes = [1, 2, 3]
    subs = {"C0": [0], "C1": [0, 1], "C2": [0, 1, 2]}
    names = make_topics(shared_broker, name_factory, sizes)
    with Members(shared_broker.bootstrap, unique_group) as members:
        started, s3 = run_group(members, names, sizes, subs, STICKY)
        assert_balanced(s3, subs)
        for client, topics in subs.items():
            assert all(int(x[1 : x.index("p")]) in topics for x in s3[client])
        assert s3 == {"C0": ["t0p0"], "C1": ["t1p0", "t1p1"], "C2": ["t2p0", "t2p1", "t2p2"]}
        generation = started[0].generation()
        started[0].close()
        rest = started[1:]
        got = wait_settled(
            rest,
            all_partitions(dict(zip(names, sizes, strict=True))),
            extra=lambda _: all(m.generation() > generation for m in rest),
        )
        s4 = short(got, names)
    assert set(s3["C1"]) <= set(s4["C1"]) and set(s3["C2"]) <= set(s4["C2"])
    assert s4 == {"C1": ["t0p0", "t1p0", "t1p1"], "C2": ["t2p0", "t2p1", "t2p2"]}


def test_cooperative_sticky_revokes_only_moved(
    shared_broker: Broker, name_factory: Callable[[str], str], unique_group: str
) -> None:
    """Cooperative-sticky: when C2 joins, C0 and C1 revoke only what moves to C2 (never
    everything), keep the rest, and the result is balanced 2/2/2; when C1 leaves, the
    others revoke nothing."""
    sizes = [6]
    names = make_topics(shared_broker, name_factory, sizes)
    everything = all_partitions({names[0]: 6})
    with Members(shared_broker.bootstrap, unique_group) as members:
        c0, c1 = (
            members.start(c, names, {"partition.assignment.strategy": COOPERATIVE})
            for c in ("C0", "C1")
        )
        first = wait_settled([c0, c1], everything)
        assert sorted(len(v) for v in first.values()) == [3, 3]
        marks = {m.client_id: len(m.snapshot()) for m in (c0, c1)}
        c2 = members.start("C2", names, {"partition.assignment.strategy": COOPERATIVE})
        trio = [c0, c1, c2]
        second = wait_settled(trio, everything, extra=lambda got: len(got["C2"]) == 2)
        assert sorted(len(v) for v in second.values()) == [2, 2, 2]
        for m in (c0, c1):
            assert second[m.client_id] <= first[m.client_id]
            revoked: set[str] = set()
            for e in m.snapshot()[marks[m.client_id] :]:
                if e.get("event") == "revoked":
                    revoked |= set(e["partitions"])
                assert e.get("event") != "lost", m.describe()
            assert revoked == first[m.client_id] - second[m.client_id], m.describe()
        marks = {m.client_id: len(m.snapshot()) for m in (c0, c2)}
        generation = c0.generation()
        c1.close()
        third = wait_settled([c0, c2], everything, extra=lambda _: c0.generation() > generation)
        assert sorted(len(v) for v in third.values()) == [3, 3]
        for m in (c0, c2):
            assert second[m.client_id] <= third[m.client_id]
            assert not [
                e
                for e in m.snapshot()[marks[m.client_id] :]
                if e.get("event") in ("revoked", "lost")
            ], m.describe()
