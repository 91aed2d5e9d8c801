"""Streams-group configs of Kafka 4.4 (streams.num.warmup.replicas,
streams.task.offset.interval.ms, streams.acceptable.recovery.lag,
streams.rack.aware.assignment.tags, streams.assignor.name) through the Admin clients,
and what a running Kafka Streams application shows of them in describeStreamsGroups:
the task offsets and task end offsets its members report, its standbys, and no warm-up
task (Kafka 4.4's assignment refiner hands none out). On Odradek and Apache Kafka 4.4
(`either_broker`)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from helpers import streams_app
from helpers.broker import Broker
from helpers.group_configs import describe_group_configs, set_group_configs
from helpers.names import unique_name
from helpers.wire import WireClient

from streams.test_streams_bad_input import HEARTBEAT, body, described, prepared
from streams.test_streams_protocol import group_admin, instance, setup

pytestmark = pytest.mark.timeout(600)


def members(bootstrap: str, group: str) -> list[dict[str, str]]:
    """Each member's fields as describeStreamsGroups gives them (GroupAdmin's MEMBER lines)."""
    lines = group_admin(bootstrap, "describe", group)
    assert lines and lines[0].startswith("DESCRIBED"), lines
    return [dict(f.split("=", 1) for f in line.split()[1:]) for line in lines[1:]]


def tasks(text: str) -> set[str]:
    return set() if text == "-" else {t.split(":")[0] for t in text.split(",")}


def alter_group(bootstrap: str, group: str, name: str, value: str) -> str | None:
    """The error message of an IncrementalAlterConfigs SET (None: accepted)."""
    try:
        set_group_configs(bootstrap, group, {name: value})
    except KafkaException as exc:
        return str(exc.args[0].str())
    return None


def test_streams_group_configs_through_the_admin_client(either_broker: str) -> None:
    group = unique_name("sconfigs")
    defaults = describe_group_configs(either_broker, group)
    assert defaults["streams.assignor.name"].value == "sticky"
    assert defaults["streams.rack.aware.assignment.tags"].value == ""
    # internal configs of Kafka 4.4: not listed while the group has none of its own
    for internal in ("streams.num.warmup.replicas", "streams.acceptable.recovery.lag"):
        assert internal not in defaults
    assert alter_group(either_broker, group, "streams.rack.aware.assignment.tags", "zone,zone") == (
        "streams.rack.aware.assignment.tags must not contain duplicate tag keys."
    )
    assert alter_group(either_broker, group, "streams.num.warmup.replicas", "21") == (
        "streams.num.warmup.replicas must be less than or equal to 20"
    )
    assert alter_group(either_broker, group, "streams.assignor.name", "fancy") == (
        "streams.assignor.name 'fancy' is not a registered task assignor. "
        "Registered assignors are: [sticky]."
    )
    assert alter_group(either_broker, group, "streams.num.warmup.replicas", "4") is None
    assert alter_group(either_broker, group, "streams.rack.aware.assignment.tags", "zone") is None
    deadline = time.monotonic() + 15
    while True:  # Kafka applies a group config a moment after answering
        described = describe_group_configs(either_broker, group)
        tags = described["streams.rack.aware.assignment.tags"].value
        if "streams.num.warmup.replicas" in described and tags == "zone":
            break
        assert time.monotonic() < deadline, described
        time.sleep(0.2)
    assert described["streams.num.warmup.replicas"].value == "4"
    assert described["streams.rack.aware.assignment.tags"].value == "zone"


def test_task_offsets_standbys_and_no_warmup_tasks(either_broker: str, tmp_path: Path) -> None:
    """Two instances with a standby of each stateful task and up to three warm-ups: the
    members report their changelog offsets every 15 s, describe shows them per member;
    no member is given a warm-up task."""
    prefix, orders = setup(either_broker, 2000)
    group = f"{prefix}-app"
    for name, value in (
        ("streams.num.standby.replicas", 1),
        ("streams.num.warmup.replicas", 3),
        ("streams.task.offset.interval.ms", 15000),
    ):  # one at a time, as an operator would
        set_group_configs(either_broker, group, {name: value})
    apps = []
    try:
        for n, name in enumerate("ab"):
            app = instance(either_broker, prefix, tmp_path, name).start()
            apps.append(app)
            streams_app.produce(either_broker, prefix, orders, n * 1000, (n + 1) * 1000)
            app.wait_state("RUNNING")
        deadline = time.monotonic() + 150
        while True:
            found = members(either_broker, group)
            if (
                len(found) == 2
                and all(m["task-offsets"] != "-" for m in found)
                and any(m["task-end-offsets"] != "-" for m in found)
                and any(m["standby"] != "-" for m in found)
            ):
                break
            assert time.monotonic() < deadline, found
            time.sleep(2)
        for member in found:
            assert member["warmup"] == member["target-warmup"] == "-", member
            held = tasks(member["active"]) | tasks(member["standby"])
            # a member reports the tasks it keeps state of (it may still hold the
            # state of one it gave up), with offsets of its own
            assert tasks(member["task-offsets"]) & held, member
            for entry in member["task-offsets"].split(","):
                task, offset = entry.split(":")
                assert "_" in task and int(offset) >= -2, member
        assert [app.errors() for app in apps] == [[], []]
    finally:
        for app in apps:
            app.stop()


def test_task_offsets_are_kept_in_memory_only(broker: Broker) -> None:
    """As Kafka 4.4 keeps them (a map beside the group, not a record): the member and its
    tasks come back after a restart, the offsets it reported do not until it reports
    again. The heartbeat tells the group's task offset interval."""
    offsets = [{"subtopology_id": "0", "partition": 0, "offset": 42}]
    with WireClient(broker.bootstrap) as client:
        group, _source, member, epoch = prepared(client)
        answer = client.call(
            HEARTBEAT, 0, body(group, member, epoch, task_offsets=offsets, task_end_offsets=offsets)
        )
        assert answer.error_code == 0, answer
        assert answer.task_offset_interval.total_seconds() == 60  # the broker default
        reported = described(client, group).members[0]
        assert [(o.partition, o.offset) for o in reported.task_offsets] == [(0, 42)]
        assert [(o.partition, o.offset) for o in reported.task_end_offsets] == [(0, 42)]
    broker.restart(hard=True)
    with WireClient(broker.bootstrap) as client:
        after = described(client, group)
        assert [m.member_id for m in after.members] == [member]
        assert after.members[0].task_offsets == after.members[0].task_end_offsets == ()
