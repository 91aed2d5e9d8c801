"""The pure parts of streams groups: the order Kafka's messages list topics in, the
topology set against topics, the sticky task assignor and a member's reconciliation."""

from __future__ import annotations

from odradek.coordinator.group import streams_records as sr
from odradek.coordinator.group.streams import (
    STABLE,
    UNRELEASED_TASKS,
    UNREVOKED_TASKS,
    Owners,
    StreamsMember,
)
from odradek.coordinator.group.streams_assignor import MemberSpec, SubtopologySpec, assign
from odradek.coordinator.group.streams_heartbeat import MISSING_CLIENT_TAGS, missing_client_tags
from odradek.coordinator.group.streams_reconcile import reconcile
from odradek.coordinator.group.streams_topics import (
    INCORRECTLY_PARTITIONED_TOPICS,
    MISSING_INTERNAL_TOPICS,
    MISSING_SOURCE_TOPICS,
    configure,
    java_hash_order,
)


def test_java_hash_order_is_kafkas() -> None:
    """Orders Kafka 4.4 answered "Internal topics are missing: ..." with (probed)."""
    for prefix, repartition_first in (
        ("q944550", False),
        ("q957741", True),
        ("q969642", True),
        ("q984483", True),
        ("pr1795683977", False),
    ):
        names = [f"{prefix}-app-by-customer-repartition", f"{prefix}-app-regions-changelog"]
        expected = names if repartition_first else names[::-1]
        assert java_hash_order(names) == expected  # names in the order Kafka inserts them


def orders_topology() -> sr.Topology:
    repartition = sr.TopicInfo("app-by-customer-repartition", 0, 0, (("cleanup.policy", "delete"),))
    return sr.Topology(
        0,
        (
            sr.Subtopology("0", ("orders",), repartition_sink_topics=(repartition.name,)),
            sr.Subtopology(
                "1",
                ("customers",),
                state_changelog_topics=(sr.TopicInfo("app-totals-changelog"),),
                repartition_source_topics=(repartition,),
                copartition_groups=(sr.CopartitionGroup((0,), (), (0,)),),
            ),
        ),
    )


def test_the_topology_against_the_topics() -> None:
    topology = orders_topology()
    missing = configure(topology, {"orders": 4}, 1)
    assert missing.problem == (MISSING_SOURCE_TOPICS, "Source topics customers are missing.")
    first = configure(topology, {"orders": 4, "customers": 4}, 1)
    assert first.problem is not None and first.problem[0] == MISSING_INTERNAL_TOPICS
    assert {(t.name, t.partitions) for t in first.to_create} == {
        ("app-by-customer-repartition", 4),
        ("app-totals-changelog", 4),
    }
    ready = configure(
        topology,
        {"orders": 4, "customers": 4, "app-by-customer-repartition": 4, "app-totals-changelog": 4},
        2,
    )
    assert ready.ready and ready.subtopologies is not None
    assert {k: s.tasks for k, s in ready.subtopologies.items()} == {"0": 4, "1": 4}
    # a copartitioned repartition topic follows the source it is joined with
    fewer = configure(topology, {"orders": 4, "customers": 3}, 3)
    assert {(t.name, t.partitions) for t in fewer.to_create} == {
        ("app-by-customer-repartition", 3),
        ("app-totals-changelog", 3),
    }
    existing = {"orders": 4, "customers": 4, "app-totals-changelog": 4}
    skewed = configure(topology, {**existing, "app-by-customer-repartition": 2}, 4)
    assert skewed.problem == (
        INCORRECTLY_PARTITIONED_TOPICS,
        "Existing topic app-by-customer-repartition has different number of partitions: "
        "expected 4, found 2",
    )


def test_the_assignor_balances_sticks_and_places_standbys_elsewhere() -> None:
    subtopologies = {"0": SubtopologySpec(4, False), "1": SubtopologySpec(4, True)}
    alone = assign({"a": MemberSpec("p1", {}, {})}, subtopologies, 1)
    assert alone["a"].active == {"0": frozenset(range(4)), "1": frozenset(range(4))}
    assert alone["a"].standby == {}  # no other process for a standby
    members = {
        "a": MemberSpec("p1", alone["a"].active, {}),
        "b": MemberSpec("p2", {}, {}),
        "c": MemberSpec("p3", {}, {}),
    }
    three = assign(members, subtopologies, 1)
    counts = sorted(sum(len(p) for p in t.active.values()) for t in three.values())
    assert counts == [2, 3, 3]
    active = [(s, p) for t in three.values() for s, ps in t.active.items() for p in ps]
    assert len(active) == len(set(active)) == 8
    kept = {(s, p) for s, ps in three["a"].active.items() for p in ps}
    assert kept <= {(s, p) for s, ps in alone["a"].active.items() for p in ps}
    for member, target in three.items():
        mine = {(s, p) for s, ps in target.active.items() for p in ps}
        standby = {(s, p) for s, ps in target.standby.items() for p in ps}
        assert not mine & standby, member
        assert all(s == "1" for s, _ in standby)  # only the stateful subtopology
    assert sum(len(p) for t in three.values() for p in t.standby.values()) == 4


def test_a_task_moves_only_once_revoked() -> None:
    owned = sr.AssignedTasks({"0": {0: 2, 1: 2}})
    first = StreamsMember("a", member_epoch=2, previous_member_epoch=1, process_id="p1",
                          assigned=owned)  # fmt: skip
    second = StreamsMember("b", member_epoch=0, process_id="p2")
    owners = Owners(active={("0", 0): "p1", ("0", 1): "p1"})
    target_a = sr.TargetTasks({"0": frozenset({0})})
    target_b = sr.TargetTasks({"0": frozenset({1})})
    waiting = reconcile(second, 3, target_b, owners, sr.AssignedTasks())
    assert (waiting.state, waiting.member_epoch, waiting.assigned.active) == (
        UNRELEASED_TASKS,
        3,
        {},
    )
    revoking = reconcile(first, 3, target_a, owners, owned)
    assert (revoking.state, revoking.member_epoch) == (UNREVOKED_TASKS, 2)
    assert revoking.pending_revocation.active == {"0": {1: 2}}
    still = reconcile(revoking, 3, target_a, owners, owned)
    assert still == revoking  # it has not let the task go
    released = reconcile(revoking, 3, target_a, owners, sr.AssignedTasks({"0": {0: 2}}))
    assert (released.state, released.member_epoch, released.assigned.active) == (
        STABLE,
        3,
        {"0": {0: 2}},
    )
    freed = Owners(active={("0", 0): "p1"})
    taken = reconcile(waiting, 3, target_b, freed, sr.AssignedTasks())
    assert (taken.state, taken.assigned.active) == (STABLE, {"0": {1: 3}})


def test_missing_client_tags_are_told_from_v1_on() -> None:
    member = StreamsMember("m", client_tags=(("zone", "a"),))
    assert missing_client_tags(("zone",), member, 1) is None
    assert missing_client_tags((), member, 1) is None
    assert missing_client_tags(("rack", "zone", "az"), member, 0) is None  # v0 does not know it
    assert missing_client_tags(("rack", "zone", "az"), member, 1) == (
        MISSING_CLIENT_TAGS,
        "Missing required client tags for rack-aware standby assignment: [rack, az]. "
        "Configure them via 'client.tag.<tagKey>' in your Streams config.",
    )
