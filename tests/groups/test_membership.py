"""SPEC §8 group scenarios with real Java consumers: members that crash, close,
restart statically, are fenced, and topics that grow."""

from __future__ import annotations

import time

import pytest
from helpers import java
from helpers.broker import Broker
from helpers.topics import create_topic

from groups.members import (
    RANGE,
    Members,
    all_partitions,
    wait_settled,
)

pytestmark = pytest.mark.timeout(120)

SESSION_MS = 10000  # long enough that a close on a busy machine ends well before it


def test_closed_member_moves_at_once_killed_after_session_timeout(
    shared_broker: Broker, unique_topic: str, unique_group: str
) -> None:
    create_topic(shared_broker.bootstrap, unique_topic, 6)
    everything = all_partitions({unique_topic: 6})
    props = {"partition.assignment.strategy": RANGE, "session.timeout.ms": SESSION_MS}
    with Members(shared_broker.bootstrap, unique_group) as members:
        c0, c1, c2 = (members.start(c, [unique_topic], props) for c in ("C0", "C1", "C2"))
        wait_settled([c0, c1, c2], everything)

        # close(): LeaveGroup, the others take over well inside the session timeout
        generation = c0.generation()
        started = time.monotonic()
        c2.close()
        wait_settled(
            [c0, c1],
            everything,
            timeout=SESSION_MS / 1000,
            extra=lambda _: c0.generation() > generation,
        )
        closed_after = time.monotonic() - started
        assert closed_after < SESSION_MS / 2000, f"partitions moved after {closed_after:.1f}s"

        # SIGKILL: nothing moves until the broker expires the session
        generation = c0.generation()
        before = c0.assignment()
        started = time.monotonic()
        c1.kill()
        time.sleep(SESSION_MS / 2000)
        assert c0.assignment() == before and c0.generation() == generation
        got = wait_settled([c0], everything, timeout=SESSION_MS / 1000 + 20)
        killed_after = time.monotonic() - started
    assert got["C0"] == everything
    assert SESSION_MS / 1000 - 1.0 <= killed_after <= SESSION_MS / 1000 + 6.0, killed_after


def test_added_partitions_are_assigned(
    shared_broker: Broker, unique_topic: str, unique_group: str
) -> None:
    create_topic(shared_broker.bootstrap, unique_topic, 2)
    props = {"partition.assignment.strategy": RANGE, "metadata.max.age.ms": 1000}
    with Members(shared_broker.bootstrap, unique_group) as members:
        c0, c1 = (members.start(c, [unique_topic], props) for c in ("C0", "C1"))
        first = wait_settled([c0, c1], all_partitions({unique_topic: 2}))
        assert first == {"C0": {f"{unique_topic}:0"}, "C1": {f"{unique_topic}:1"}}
        java.admin(
            shared_broker.bootstrap, "create-partitions", "--topic", unique_topic, "--total", "4"
        )
        got = wait_settled([c0, c1], all_partitions({unique_topic: 4}), timeout=30)
    assert got == {
        "C0": {f"{unique_topic}:0", f"{unique_topic}:1"},
        "C1": {f"{unique_topic}:2", f"{unique_topic}:3"},
    }


def test_static_member_restart_keeps_partitions(
    shared_broker: Broker, unique_topic: str, unique_group: str
) -> None:
    """A static member (group.instance.id) that comes back within the session timeout
    gets its partitions again and the group does not rebalance: the other member sees
    no revoke and no new generation."""
    create_topic(shared_broker.bootstrap, unique_topic, 4)
    everything = all_partitions({unique_topic: 4})

    def props(instance: str) -> dict[str, object]:
        return {
            "partition.assignment.strategy": RANGE,
            "group.instance.id": instance,
            "session.timeout.ms": 20000,
        }

    with Members(shared_broker.bootstrap, unique_group) as members:
        c0 = members.start("C0", [unique_topic], props("i0"))
        c1 = members.start("C1", [unique_topic], props("i1"))
        first = wait_settled([c0, c1], everything)
        generation = c0.generation()
        mark = len(c0.snapshot())
        c1.kill()
        c1b = members.start("C1", [unique_topic], props("i1"))
        c1b.wait_event("assigned", timeout=30)
        assert c1b.assignment() == first["C1"]
        assert c1b.generation() == generation
        time.sleep(2.0)  # several heartbeats: a rebalance would show up now
        late = [
            e for e in c0.snapshot()[mark:] if e.get("event") in ("revoked", "assigned", "lost")
        ]
        assert late == [], late
        assert c0.assignment() == first["C0"] and c0.generation() == generation
        described = java.admin(
            shared_broker.bootstrap, "describe-groups", "--group", unique_group
        ).records[0]
    assert described["state"].lower() == "stable"
    assert sorted(m["group_instance_id"] for m in described["members"]) == ["i0", "i1"]
    assert len({m["member_id"] for m in described["members"]}) == 2


def test_duplicate_static_instance_is_fenced(
    shared_broker: Broker, unique_topic: str, unique_group: str
) -> None:
    """Two live consumers with one group.instance.id: the newer takes the place, the
    older is told FENCED_INSTANCE_ID and fails with FencedInstanceIdException."""
    create_topic(shared_broker.bootstrap, unique_topic, 2)
    props = {"partition.assignment.strategy": RANGE, "group.instance.id": "dup"}
    with Members(shared_broker.bootstrap, unique_group) as members:
        first = members.start("C0", [unique_topic], props)
        wait_settled([first], all_partitions({unique_topic: 2}))
        second = members.start("C1", [unique_topic], props)
        second.wait_event("assigned", timeout=30)
        deadline = time.monotonic() + 20
        while not first.errors() and time.monotonic() < deadline:
            time.sleep(0.1)
        errors = first.errors()
        assert errors, first.describe()
        assert errors[0]["type"].endswith("FencedInstanceIdException"), errors
        assert second.assignment() == all_partitions({unique_topic: 2})
        assert not second.errors()


def test_absent_static_member_keeps_place_through_rebalance(
    shared_broker: Broker, unique_topic: str, unique_group: str
) -> None:
    """KIP-345: a rebalance that completes while a static member is down (not yet past
    its session timeout) keeps that member and its share; when it comes back it gets
    that share at once, without another rebalance."""
    create_topic(shared_broker.bootstrap, unique_topic, 6)
    p = [f"{unique_topic}:{i}" for i in range(6)]
    common = {
        "partition.assignment.strategy": RANGE,
        "session.timeout.ms": 30000,
        "max.poll.interval.ms": 6000,
    }

    with Members(shared_broker.bootstrap, unique_group) as members:
        c0 = members.start("C0", [unique_topic], {**common, "group.instance.id": "i0"})
        c1 = members.start("C1", [unique_topic], {**common, "group.instance.id": "i1"})
        wait_settled([c0, c1], set(p))
        c1.kill()
        generation = c0.generation()
        c2 = members.start("C2", [unique_topic], common)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (
            c0.generation() > generation
            and c2.generation() == c0.generation()
            and c0.assignment()
            and c2.assignment()
        ):
            time.sleep(0.1)
        # range over i0, i1 (absent), then the dynamic member
        assert c0.assignment() == set(p[0:2]), c0.describe()
        assert c2.assignment() == set(p[4:6]), c2.describe()
        generation = c0.generation()
        mark = len(c0.snapshot())
        c1b = members.start("C1", [unique_topic], {**common, "group.instance.id": "i1"})
        c1b.wait_event("assigned", timeout=30)
        assert c1b.assignment() == set(p[2:4])
        assert c1b.generation() == generation
        time.sleep(1.5)
        assert not [e for e in c0.snapshot()[mark:] if e.get("event") in ("revoked", "assigned")]
