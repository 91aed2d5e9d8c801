"""The orders application (Kafka Streams 4.4, exactly_once_v2) on the streams group
protocol (KIP-1071, group.protocol=streams), against Odradek and Apache Kafka 4.4
(`either_broker`): the broker assigns the tasks, creates the internal topics, moves
tasks between instances; the committed output must be exactly what the input makes.
The Admin client's streams-group calls are checked on the same groups, and a broker
killed under a running application keeps the group."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AdminClient,
)
from helpers import streams_app
from helpers.group_configs import set_group_configs
from helpers.names import unique_name
from helpers.streams_app import CLASSES, LIB, Orders, StreamsInstance

from streams.conftest import KillableBroker
from streams.scenarios import check, kill_one_of_two

pytestmark = pytest.mark.timeout(600)
# the orders topology: the re-keying subtopology, and the one that joins and aggregates
SUBTOPOLOGIES = 2
TASKS = SUBTOPOLOGIES * streams_app.PARTITIONS


def instance(
    bootstrap: str, prefix: str, tmp_path: Path, name: str, **kw: object
) -> StreamsInstance:
    return StreamsInstance(
        bootstrap,
        f"{prefix}-app",
        prefix,
        tmp_path / name,
        protocol="streams",
        **kw,  # type: ignore[arg-type]
    )


def setup(bootstrap: str, count: int) -> tuple[str, Orders]:
    prefix = unique_name("sorders")
    streams_app.create_topics(bootstrap, prefix)
    return prefix, Orders(count)


def group_admin(bootstrap: str, *args: str) -> list[str]:
    """One call of dev.odradek.streams.GroupAdmin (the Admin client): its output lines."""
    java = streams_app.require()
    command = [java, "-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp", f"{CLASSES}:{LIB}/*"]
    command += ["-Dorg.slf4j.simpleLogger.defaultLogLevel=error", "dev.odradek.streams.GroupAdmin"]
    done = subprocess.run([*command, bootstrap, *args], capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


@dataclass
class Member:
    member_id: str
    process: str
    epoch: int
    active: set[str]
    standby: set[str]
    target_active: set[str]

    @property
    def reconciled(self) -> bool:
        return self.active == self.target_active


@dataclass
class Described:
    state: str
    epoch: int
    target: int
    subtopologies: int
    members: list[Member]


def _tasks(text: str) -> set[str]:
    return set() if text == "-" else set(text.split(","))


def describe(bootstrap: str, group: str) -> Described | str:
    """The group as describeStreamsGroups gives it, or the error line."""
    lines = group_admin(bootstrap, "describe", group)
    if lines[0].startswith("ERROR"):
        return lines[0]
    head = dict(field.split("=", 1) for field in lines[0].split()[2:])
    members = []
    for line in lines[1:]:
        f = dict(field.split("=", 1) for field in line.split()[1:])
        members.append(
            Member(
                f["id"],
                f["process"],
                int(f["epoch"]),
                _tasks(f["active"]),
                _tasks(f["standby"]),
                _tasks(f["target-active"]),
            )  # fmt: skip
        )
    return Described(
        head["state"], int(head["epoch"]), int(head["target"]), int(head["subtopologies"]), members
    )


def settled(bootstrap: str, group: str, members: int, timeout: float = 120) -> Described:
    """Until the group is Stable with `members` members, each holding its target."""
    deadline = time.monotonic() + timeout
    while True:
        found = describe(bootstrap, group)
        if (
            isinstance(found, Described)
            and found.state == "Stable"
            and len(found.members) == members
            and all(m.reconciled and m.epoch == found.target for m in found.members)
        ):
            return found
        assert time.monotonic() < deadline, f"not settled with {members} members: {found}"
        time.sleep(1)


def assert_every_task_once(group: Described) -> None:
    active = [t for m in group.members for t in m.active]
    assert len(active) == len(set(active)) == TASKS, active
    assert group.subtopologies == SUBTOPOLOGIES


def test_one_instance(either_broker: str, tmp_path: Path) -> None:
    prefix, orders = setup(either_broker, 3000)
    streams_app.produce(either_broker, prefix, orders, 0, 1500)
    app = instance(either_broker, prefix, tmp_path, "a", threads=2).start()
    try:
        app.wait_state("RUNNING")
        streams_app.produce(either_broker, prefix, orders, 1500, 3000)
        check(streams_app.read_output(either_broker, prefix, orders.expected()), orders)
        group = settled(either_broker, f"{prefix}-app", members=2)
        assert_every_task_once(group)
        assert len({m.process for m in group.members}) == 1  # two threads, one process
        assert app.errors() == []
    finally:
        app.stop()


def test_three_instances_started_one_after_another(either_broker: str, tmp_path: Path) -> None:
    """Each new instance takes tasks from the others (revoked first, then assigned); one
    standby of every stateful task, set as the group's config, on another process."""
    prefix, orders = setup(either_broker, 3000)
    set_group_configs(either_broker, f"{prefix}-app", {"streams.num.standby.replicas": 1})
    apps = []
    try:
        for n, name in enumerate("abc"):
            app = instance(either_broker, prefix, tmp_path, name).start()
            apps.append(app)
            streams_app.produce(either_broker, prefix, orders, n * 1000, (n + 1) * 1000)
            app.wait_state("RUNNING")
        check(streams_app.read_output(either_broker, prefix, orders.expected()), orders)
        group = settled(either_broker, f"{prefix}-app", members=3)
        assert_every_task_once(group)
        assert len({m.process for m in group.members}) == 3
        assert all(m.active for m in group.members), "an instance was left without tasks"
        standbys = [(t, m.process) for m in group.members for t in m.standby]
        assert standbys, "no standby task assigned"
        owner = {t: m.process for m in group.members for t in m.active}
        assert all(owner[t] != process for t, process in standbys), standbys
        assert all(app.alive() for app in apps)
        assert [app.errors() for app in apps] == [[], [], []]
    finally:
        for app in apps:
            app.stop()


def test_an_instance_killed_and_started_again(either_broker: str, tmp_path: Path) -> None:
    """kill -9 of one of two instances while input arrives: its member is fenced when its
    session runs out, its tasks move, its open transaction is aborted."""
    prefix, _ = setup(either_broker, 0)

    def every_task_once() -> None:
        assert_every_task_once(settled(either_broker, f"{prefix}-app", members=2))

    kill_one_of_two(
        either_broker,
        prefix,
        lambda name: instance(either_broker, prefix, tmp_path, name),
        then=every_task_once,
    )


def test_the_broker_killed_under_a_running_application(
    killable_broker: KillableBroker, tmp_path: Path
) -> None:
    """kill -9 of the broker while the application runs: the group comes back from its
    records with the same members at the same epochs, and the output is exactly once."""
    broker = killable_broker
    prefix, orders = setup(broker.bootstrap, 3000)
    streams_app.produce(broker.bootstrap, prefix, orders, 0, 1500)
    app = instance(broker.bootstrap, prefix, tmp_path, "a", threads=2).start()
    try:
        app.wait_state("RUNNING")
        before = settled(broker.bootstrap, f"{prefix}-app", members=2)
        broker.crash_and_restart()
        after = describe(broker.bootstrap, f"{prefix}-app")
        assert isinstance(after, Described), after
        assert (after.epoch, after.target) == (before.epoch, before.target)
        assert sorted((m.member_id, m.epoch, tuple(sorted(m.active))) for m in after.members) == (
            sorted((m.member_id, m.epoch, tuple(sorted(m.active))) for m in before.members)
        )
        streams_app.produce(broker.bootstrap, prefix, orders, 1500, 3000)
        check(streams_app.read_output(broker.bootstrap, prefix, orders.expected()), orders)
        assert app.alive(), app.log_tail()
        assert settled(broker.bootstrap, f"{prefix}-app", members=2).members
    finally:
        app.stop()


def test_admin_client_streams_group_calls(either_broker: str, tmp_path: Path) -> None:
    """listGroups (streams), describeStreamsGroups, listStreamsGroupOffsets,
    alterStreamsGroupOffsets, deleteStreamsGroupOffsets and deleteStreamsGroups, on a
    running group and after its instance left."""
    prefix, orders = setup(either_broker, 600)
    group = f"{prefix}-app"
    streams_app.produce(either_broker, prefix, orders, 0, 600)
    app = instance(either_broker, prefix, tmp_path, "a", leave=True).start()
    try:
        app.wait_state("RUNNING")
        check(streams_app.read_output(either_broker, prefix, orders.expected()), orders)
        settled(either_broker, group, members=1)
        assert f"GROUP {group} Streams Stable" in group_admin(either_broker, "list")
        nobody = f"{prefix}-nobody"
        assert describe(either_broker, nobody) == (
            f"ERROR {nobody} GroupIdNotFoundException Group {nobody} not found."
        )
        offsets = group_admin(either_broker, "offsets", group)
        committed = {line.split()[1] for line in offsets}
        assert committed == {
            f"{prefix}-orders",
            f"{prefix}-customers",
            f"{group}-by-customer-repartition",
        }
        running = group_admin(either_broker, "alter-offsets", group, f"{prefix}-orders:0:0")
        assert running[0].startswith("ERROR"), running
    finally:
        app.stop()
    deadline = time.monotonic() + 60
    while (
        (found := describe(either_broker, group)) and isinstance(found, Described) and found.members
    ):
        assert time.monotonic() < deadline, found
        time.sleep(1)
    assert isinstance(found, Described) and found.state == "Empty"
    assert f"GROUP {group} Streams Empty" in group_admin(either_broker, "list")
    assert group_admin(either_broker, "alter-offsets", group, f"{prefix}-orders:0:0") == ["OK"]
    assert f"OFFSET {prefix}-orders 0 0" in group_admin(either_broker, "offsets", group)
    assert group_admin(either_broker, "delete-offsets", group, f"{prefix}-orders:0") == ["OK"]
    assert f"OFFSET {prefix}-orders 0" not in " ".join(group_admin(either_broker, "offsets", group))
    assert group_admin(either_broker, "delete", group) == [f"OK {group}"]
    assert describe(either_broker, group) == (
        f"ERROR {group} GroupIdNotFoundException Group {group} not found."
    )


def test_an_at_least_once_application_commits_its_offsets(
    either_broker: str, tmp_path: Path
) -> None:
    """Without transactions a streams member commits with OffsetCommit, which Kafka
    takes from such a member only at version 9 or later."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    prefix, orders = setup(either_broker, 1000)
    streams_app.produce(either_broker, prefix, orders, 0, 1000)
    app = instance(
        either_broker,
        prefix,
        tmp_path,
        "a",
        configs={"processing.guarantee": "at_least_once", "commit.interval.ms": "200"},
    ).start()
    try:
        app.wait_state("RUNNING")
        check(streams_app.read_output(either_broker, prefix, orders.expected()), orders)
        admin = AdminClient({"bootstrap.servers": either_broker})
        asked = [TopicPartition(f"{prefix}-orders", p) for p in range(streams_app.PARTITIONS)]
        deadline = time.monotonic() + 60
        while True:
            future = admin.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(f"{prefix}-app", asked)]
            )[f"{prefix}-app"]
            committed = {tp.partition: tp.offset for tp in future.result(15).topic_partitions}
            if sum(committed.values()) == orders.count or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert sum(committed.values()) == orders.count, committed
        assert app.errors() == []
    finally:
        app.stop()
