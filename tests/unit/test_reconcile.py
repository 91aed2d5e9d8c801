"""Reconciliation of consumer-protocol members: revoke first, assign once released."""

from __future__ import annotations

import uuid

from odradek.coordinator.group.consumer import (
    STABLE,
    UNRELEASED_PARTITIONS,
    UNREVOKED_PARTITIONS,
    ConsumerGroup,
    ConsumerMember,
    reconcile,
)

T = uuid.UUID(int=7)


def parts(*numbers: int) -> dict[uuid.UUID, frozenset[int]]:
    return {T: frozenset(numbers)} if numbers else {}


def test_a_partition_moves_between_members_without_two_owners() -> None:
    group = ConsumerGroup("g")
    group.members["a"] = ConsumerMember("a", member_epoch=1, assigned=parts(0, 1, 2, 3))
    group.members["b"] = ConsumerMember("b")

    def held_by_another(member: str):  # type: ignore[no-untyped-def]
        def check(topic_id: uuid.UUID, partition: int) -> bool:
            others = [m for m in group.members.values() if m.member_id != member]
            return any(
                partition
                in m.assigned.get(topic_id, ()) | m.pending_revocation.get(topic_id, frozenset())
                for m in others
            )

        return check

    # epoch 2: a keeps 0 and 1, b should get 2 and 3
    a = reconcile(group.members["a"], 2, parts(0, 1), parts(0, 1, 2, 3), held_by_another("a"))
    assert (a.state, a.member_epoch, a.assigned, a.pending_revocation) == (
        UNREVOKED_PARTITIONS,
        1,
        parts(0, 1),
        parts(2, 3),
    )
    group.members["a"] = a
    b = reconcile(group.members["b"], 2, parts(2, 3), parts(), held_by_another("b"))
    assert (b.state, b.member_epoch, b.assigned) == (UNRELEASED_PARTITIONS, 2, {})
    group.members["b"] = b
    # a still reports 2: nothing changes; then it lets go
    assert reconcile(a, 2, parts(0, 1), parts(0, 1, 2), held_by_another("a")) is a
    a = reconcile(a, 2, parts(0, 1), parts(0, 1), held_by_another("a"))
    assert (a.state, a.member_epoch, a.assigned, a.pending_revocation) == (
        STABLE,
        2,
        parts(0, 1),
        {},
    )
    assert a.previous_member_epoch == 1
    group.members["a"] = a
    b = reconcile(b, 2, parts(2, 3), parts(), held_by_another("b"))
    assert (b.state, b.member_epoch, b.assigned) == (STABLE, 2, parts(2, 3))


def test_a_new_member_takes_free_partitions_at_once() -> None:
    joined = reconcile(ConsumerMember("m"), 3, parts(0, 1), None, lambda t, p: False)
    assert (joined.state, joined.member_epoch, joined.assigned) == (STABLE, 3, parts(0, 1))


def test_a_stable_member_at_the_target_epoch_is_left_alone() -> None:
    member = ConsumerMember("m", member_epoch=4, assigned=parts(1))
    assert reconcile(member, 4, parts(1, 2), parts(1), lambda t, p: False) is member


def test_revocation_without_a_report_waits() -> None:
    member = ConsumerMember("m", member_epoch=1, assigned=parts(0, 1))
    moved = reconcile(member, 2, parts(0), None, lambda t, p: False)
    assert (moved.state, moved.pending_revocation) == (UNREVOKED_PARTITIONS, parts(1))
    assert reconcile(moved, 2, parts(0), None, lambda t, p: False) is moved


def test_group_state_follows_epochs() -> None:
    group = ConsumerGroup("g")
    assert group.state == "Empty"
    group.members["m"] = ConsumerMember("m")
    group.group_epoch = 1
    assert group.state == "Assigning"
    group.assignment_epoch = 1
    assert group.state == "Reconciling"
    group.members["m"].member_epoch = 1
    assert group.state == "Stable"
