"""Scenarios of KIP-848 consumer groups: ConsumerGroupHeartbeat (68) until members
are assigned, server assignors, regular expressions, leaving (dynamic and static
members), and ConsumerGroupDescribe (69) of groups that are not consumer groups.

Kafka 4.4 computes a group's target assignment off the request path, so its
epochs move on more often than Odradek's (see the README's differences): these
scenarios heartbeat until each member owns its share, then record what is the same
on any broker (the assignments, states, subscriptions), not the epochs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from conformance.harness import Run, scenario
from conformance.scenarios_groups import join, ready
from conformance.scenarios_topics import quietly_create

HEARTBEAT, DESCRIBE = 68, 69
METADATA = 3


def topic_names(run: Run, *names: str) -> dict[Any, str]:
    """Topic id -> name (heartbeats name topics by id)."""
    body = {"topics": [{"name": n} for n in names], "allow_auto_topic_creation": False}
    answer = run.quiet(METADATA, 12, body)
    return {t.topic_id: t.name for t in answer.topics}


@dataclass
class Member:
    """A KIP-848 member that heartbeats like a client: it acknowledges what it was
    given by sending it back as owned."""

    run: Run
    group: str
    name: str
    fields: dict[str, Any]
    epoch: int = 0
    member_id: str = ""
    owned: list[dict[str, Any]] = field(default_factory=list)
    tell: bool = False  # whether the next heartbeat tells what is owned now
    last: Any = None

    def body(self, epoch: int | None = None, **changes: Any) -> dict[str, Any]:
        told = self.owned if self.epoch == 0 or self.tell else None
        return {
            "group_id": self.group,
            "member_id": self.member_id or self.run.name(self.name),
            "member_epoch": self.epoch if epoch is None else epoch,
            "instance_id": None,
            "rack_id": None,
            "rebalance_timeout": 30000,
            "subscribed_topic_names": None,
            "subscribed_topic_regex": None,
            "server_assignor": None,
            "topic_partitions": told,
            **(self.fields if self.epoch == 0 else {}),
            **changes,
        }

    def beat(self, **changes: Any) -> Any:
        answer = self.run.quiet(HEARTBEAT, 1, self.body(**changes))
        self.last = answer
        self.tell = False
        if answer.error_code == 0:
            self.member_id = answer.member_id
            self.epoch = int(answer.member_epoch)
            if answer.assignment is not None:
                self.owned = [
                    {"topic_id": t.topic_id, "partitions": list(t.partitions)}
                    for t in answer.assignment.topic_partitions
                ]
                self.tell = True
        return answer

    def partitions(self, names: dict[Any, str]) -> list[tuple[str, int]]:
        return sorted(
            (names.get(t["topic_id"], "?"), p) for t in self.owned for p in t["partitions"]
        )


def settle(members: list[Member], total: int, timeout: float = 20) -> None:
    """Heartbeat every member until together they own `total` partitions, each once,
    and their group is stable: every member owns its target assignment."""
    run, group = members[0].run, members[0].group
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for member in members:
            member.beat()
        owned = [(t["topic_id"], p) for m in members for t in m.owned for p in t["partitions"]]
        state = described(run, group)
        if (
            len(owned) == total == len(set(owned))
            and state["state"] == "Stable"
            and len(state["members"]) == len(members)
            and all(m["assignment"] == m["target"] for m in state["members"])
        ):
            return
        time.sleep(0.1)
    raise AssertionError(f"the members did not settle: {[m.last for m in members]}")


def described(run: Run, group: str) -> dict[str, Any]:
    """ConsumerGroupDescribe, without what moves with Kafka's extra epochs."""
    answer = run.quiet(DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False})
    g = answer.groups[0]

    def assigned(assignment: Any) -> list[tuple[str, list[int]]]:
        return sorted((t.topic_name, sorted(t.partitions)) for t in assignment.topic_partitions)

    members = [
        {
            "instance_id": m.instance_id,
            "subscribed": sorted(m.subscribed_topic_names),
            "regex": m.subscribed_topic_regex,
            "assignment": assigned(m.assignment),
            "target": assigned(m.target_assignment),
            "member_type": m.member_type,
        }
        for m in g.members
    ]
    return {
        "error_code": g.error_code,
        "error_message": g.error_message,
        "state": g.group_state,
        "assignor": g.assignor_name,
        "members": sorted(members, key=repr),
    }


def start(run: Run, topics: dict[str, int]) -> str:
    for name, partitions in topics.items():
        quietly_create(run, run.name(name), partitions)
    group = run.name("g")
    ready(run, 0, group)
    return group


@scenario("consumer-group-heartbeat.assigned", "one member gets every partition, then leaves")
def _assigned(run: Run) -> None:
    group = start(run, {"t": 3})
    topic = run.name("t")
    member = Member(run, group, "m", {"subscribed_topic_names": [topic], "topic_partitions": []})
    settle([member], 3)
    run.record("owned", member.partitions(topic_names(run, topic)))
    run.record("described", described(run, group))
    run.call(HEARTBEAT, 1, member.body(epoch=-1))  # leaves: answered with epoch -1
    run.record("after leaving", described(run, group))


@scenario("consumer-group-heartbeat.range-and-uniform", "two members under each server assignor")
def _assignors(run: Run) -> None:
    group = start(run, {"a": 2, "b": 2})
    topics = [run.name("a"), run.name("b")]
    names = topic_names(run, *topics)
    for assignor in ("range", "uniform"):
        group_name = f"{group}-{assignor}"
        ready(run, 0, group_name)
        fields = {"subscribed_topic_names": topics, "server_assignor": assignor}
        first = Member(run, group_name, "one", {**fields, "topic_partitions": []})
        second = Member(run, group_name, "two", {**fields, "topic_partitions": []})
        settle([first], 4)
        settle([first, second], 4)
        shares = sorted([first.partitions(names), second.partitions(names)])
        if assignor == "range":
            run.record("range: each member's partitions", shares)
        run.record(f"{assignor}: partitions each", sorted(len(s) for s in shares))
        run.record(f"{assignor}: described", described(run, group_name))


@scenario("consumer-group-heartbeat.regex", "a regular expression subscription; a bad one")
def _regex(run: Run) -> None:
    group = start(run, {"ra": 1, "rb": 2, "other": 1})
    pattern = f"{run.prefix}-r.*"
    member = Member(run, group, "m", {"subscribed_topic_regex": pattern, "topic_partitions": []})
    settle([member], 3)
    names = topic_names(run, run.name("ra"), run.name("rb"), run.name("other"))
    run.record("owned", member.partitions(names))
    run.record("described", described(run, group))
    stranger = Member(run, group, "bad", {})
    body = stranger.body(subscribed_topic_regex="[unclosed", topic_partitions=[])
    run.call(HEARTBEAT, 1, body)


@scenario("consumer-group-heartbeat.assignor-names", "an unknown server assignor, on joining")
def _assignor_names(run: Run) -> None:
    group = start(run, {"t": 1})
    member = Member(run, group, "m", {})
    for assignor in ("no-such-assignor", "", "Range"):
        body = member.body(
            subscribed_topic_names=[run.name("t")], server_assignor=assignor, topic_partitions=[]
        )
        run.call(HEARTBEAT, 1, body)


@scenario("consumer-group-heartbeat.static-members", "a static member leaves (-2) and comes back")
def _static(run: Run) -> None:
    group = start(run, {"t": 2})
    topic = run.name("t")
    fields = {"subscribed_topic_names": [topic], "topic_partitions": [], "instance_id": "static-1"}
    member = Member(run, group, "m", fields)
    settle([member], 2)
    names = topic_names(run, topic)
    # another member claiming the same instance id while it is in the group
    rival = Member(run, group, "rival", fields)
    run.call(HEARTBEAT, 1, rival.body())
    run.call(HEARTBEAT, 1, {**member.body(epoch=-2), "instance_id": "static-1"})
    run.record("after a static leave", described(run, group))
    back = Member(run, group, "back", fields)
    settle([back], 2)
    run.record("back with", back.partitions(names))
    run.record("described", described(run, group))


@scenario("consumer-group-describe.not-consumer-groups", "unknown, classic and empty group ids")
def _describe(run: Run) -> None:
    classic = run.name("classic")
    ready(run, 0, classic)
    first = join(run, classic)
    join(run, classic, first.member_id)
    body = {"include_authorized_operations": False}
    run.call(DESCRIBE, 1, {**body, "group_ids": [run.name("none")]})
    run.call(DESCRIBE, 1, {**body, "group_ids": [classic]})
    run.call(DESCRIBE, 1, {**body, "group_ids": [""]})
    run.call(DESCRIBE, 0, {**body, "group_ids": [classic]})
