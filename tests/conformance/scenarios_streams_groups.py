"""Scenarios of streams groups (KIP-1071): StreamsGroupHeartbeat and
StreamsGroupDescribe, a member's join with its topology, the statuses it is told, and
the errors bad input gets."""

from __future__ import annotations

import dataclasses
from typing import Any

from conformance.harness import Run, scenario
from conformance.scenarios_classic_groups import join_body
from conformance.scenarios_configs import GROUP, SET, incremental, until_group_has
from conformance.scenarios_group_admin import (
    commit_partitions,
    fetch_groups,
    listed,
    offset_delete,
)
from conformance.scenarios_groups import ready
from conformance.scenarios_new_groups import consumer_heartbeat, share_heartbeat
from conformance.scenarios_topics import incremental_body, quietly_create
from odradek.coordinator.partitioning import partition_for

STREAMS_HEARTBEAT, STREAMS_DESCRIBE = 88, 89


def topology(source: str, changelog: str, epoch: int = 0, **extra: Any) -> dict[str, Any]:
    """One stateful subtopology reading `source`, with one changelog topic."""
    sub = {
        "subtopology_id": "0",
        "source_topics": [source],
        "source_topic_regex": [],
        "state_changelog_topics": [
            {"name": changelog, "partitions": 0, "replication_factor": 0, "topic_configs": []}
        ],
        "repartition_sink_topics": [],
        "repartition_source_topics": [],
        "copartition_groups": [],
        **extra,
    }
    return {"epoch": epoch, "subtopologies": [sub]}


def heartbeat_body(group: str, member: str, epoch: int, **fields: Any) -> dict[str, Any]:
    """A StreamsGroupHeartbeat request: a member with nothing to report but `fields`."""
    return {
        "group_id": group,
        "member_id": member,
        "member_epoch": epoch,
        "endpoint_information_epoch": 0,
        "rebalance_timeout": 30000,
        "active_tasks": None,
        "standby_tasks": None,
        "warmup_tasks": None,
        "client_tags": None,
        "task_offsets": None,
        "task_end_offsets": None,
        **fields,
    }


def heartbeat(
    run: Run, group: str, member: str, epoch: int, version: int = 0, **fields: Any
) -> Any:
    return run.call(STREAMS_HEARTBEAT, version, heartbeat_body(group, member, epoch, **fields))


def joining(shape: dict[str, Any]) -> dict[str, Any]:
    return {
        "topology": shape,
        "process_id": "process",
        "active_tasks": [],
        "standby_tasks": [],
        "warmup_tasks": [],
        "client_tags": [],
    }


@scenario("streams-group-heartbeat.errors", "a join with a topology, then bad input of each kind")
def _streams_heartbeat(run: Run) -> None:
    group, source = group_reading(run, 2)
    changelog = f"{group}-counts-changelog"
    member = run.name("member")
    shape = topology(source, changelog)
    joined = heartbeat(run, group, member, 0, **joining(shape))
    epoch = int(joined.member_epoch)
    heartbeat(run, group, member, epoch + 3)  # a greater epoch
    heartbeat(run, group, run.name("stranger"), 1)  # an unknown member
    heartbeat(run, run.name("nobody"), member, 1)  # an unknown group
    heartbeat(run, group, member, epoch, topology=shape)  # a topology when not joining
    heartbeat(run, group, member, 0, **{**joining(shape), "topology": None})
    heartbeat(run, group, member, 0, **{**joining(shape), "active_tasks": None})
    heartbeat(run, group, member, 0, **joining(shape), rebalance_timeout=-1)
    heartbeat(run, group, member, -3)
    heartbeat(run, group, "", 0, **joining(shape))
    heartbeat(run, group, member, epoch, active_tasks=[])  # one task kind but not all
    changed = topology(source, f"{group}-other-changelog")
    heartbeat(run, group, run.name("second"), 0, **joining(changed))
    heartbeat(
        run, group, member, 0, **joining(topology(source, changelog, source_topic_regex=["x.*"]))
    )
    bad_changelog = topology(source, changelog)
    bad_changelog["subtopologies"][0]["state_changelog_topics"][0]["partitions"] = 3
    heartbeat(run, group, member, 0, **joining(bad_changelog))
    heartbeat(run, group, member, 0, **joining(topology("__consumer_offsets", changelog)))
    heartbeat(run, group, member, 0, **joining(topology("bad name!", changelog)))
    heartbeat(run, group, member, -1, instance_id=run.name("instance"))
    heartbeat(run, group, member, -1)
    heartbeat(run, group, member, -1)  # no longer a member
    run.call(STREAMS_DESCRIBE, 0, {"group_ids": [group], "include_authorized_operations": False})


@scenario(
    "streams-group-describe.groups", "a streams group, an unknown one and one of another kind"
)
def _streams_describe(run: Run) -> None:
    group, source = group_reading(run, 3)
    heartbeat(
        run, group, run.name("member"), 0, **joining(topology(source, f"{group}-c-changelog"))
    )
    share = run.name("share")
    ready(run, 0, share)
    run.quiet(
        76,
        1,
        {
            "group_id": share,
            "member_id": run.name("sharer"),
            "member_epoch": 0,
            "rack_id": None,
            "subscribed_topic_names": [source],
        },
    )
    for described in (group, run.name("nobody"), share):  # one a call: Kafka orders by shard
        body = {"group_ids": [described], "include_authorized_operations": False}
        run.call(STREAMS_DESCRIBE, 0, body)


def stateless(source: str) -> dict[str, Any]:
    """One subtopology reading `source`, without state: no internal topic to wait for."""
    sub = {
        "subtopology_id": "0",
        "source_topics": [source],
        "source_topic_regex": [],
        "state_changelog_topics": [],
        "repartition_sink_topics": [],
        "repartition_source_topics": [],
        "copartition_groups": [],
    }
    return {"epoch": 0, "subtopologies": [sub]}


MISSING_SOURCE_TOPICS = 1
OFFSETS_PARTITIONS = 50  # Kafka's offsets.topic.num.partitions, the reference's default


def sources_seen(run: Run, group: str, *sources: str) -> None:
    """Until the coordinator shard of `group` knows the new topics `sources`: Kafka's
    group coordinator learns a topic from the metadata image a moment after Metadata
    shows it. A probe member of another group on the same shard joins reading them
    until no MISSING_SOURCE_TOPICS status comes back, then leaves and is deleted."""
    wanted = partition_for(group, OFFSETS_PARTITIONS)
    probe = next(
        name
        for n in range(10_000)
        if partition_for(name := f"{group}-probe{n}", OFFSETS_PARTITIONS) == wanted
    )
    ready(run, 0, probe)
    for source in sources:
        body = heartbeat_body(probe, run.name("prober"), 0, **joining(stateless(source)))
        run.until(
            lambda body=body: run.quiet(STREAMS_HEARTBEAT, 0, body),
            lambda answer: all(s.status_code != MISSING_SOURCE_TOPICS for s in answer.status or ()),
            timeout=30,
        )
        leave = {**body, "member_epoch": -1, "topology": None, "process_id": None}
        for field in ("active_tasks", "standby_tasks", "warmup_tasks", "client_tags"):
            leave[field] = None
        run.quiet(STREAMS_HEARTBEAT, 0, leave)
    # gone, so that listings see the scenario's own groups only (the probe's name
    # differs between the brokers: the run's prefix does)
    run.until(
        lambda: run.quiet(42, 2, {"groups_names": [probe]}),
        lambda answer: answer.results[0].error_code == 0,
        timeout=30,
    )


def at_once(run: Run, group: str) -> None:
    """Group configs: no initial rebalance delay and no assignment interval, so that the
    scenario does not depend on timing; a heartbeat interval of the group's own, which
    every answer tells."""
    configs: list[tuple[str, int, str | None]] = [
        ("streams.initial.rebalance.delay.ms", SET, "0"),
        ("streams.assignment.interval.ms", SET, "0"),
        ("streams.heartbeat.interval.ms", SET, "6000"),
    ]
    answer = run.quiet(44, 1, incremental_body([(GROUP, group, configs)]))
    assert answer.responses[0].error_code == 0, answer
    until_group_has(run, group, "streams.heartbeat.interval.ms", "6000")


def assigning_group(run: Run, partitions: int) -> tuple[str, str]:
    """A new streams group's id and its source topic of `partitions`, known to the
    group's coordinator, the group set to assign at once (`at_once`)."""
    group, source = group_reading(run, partitions)
    at_once(run, group)
    return group, source


def group_reading(run: Run, partitions: int) -> tuple[str, str]:
    """A new streams group's id and its source topic of `partitions`, created and known
    to the group's coordinator."""
    group, source = run.name("app"), run.name("orders")
    quietly_create(run, source, partitions)
    ready(run, 0, group)
    sources_seen(run, group, source)
    return group, source


def by_process(answer: Any) -> Any:
    """The answer with each group's members in the order of their process ids (Kafka
    lists them in the order of its member map, which depends on the member ids)."""
    groups = [
        dataclasses.replace(g, members=tuple(sorted(g.members, key=lambda m: m.process_id)))
        for g in answer.groups
    ]
    return dataclasses.replace(answer, groups=tuple(groups))


def tasks(*partitions: int) -> list[dict[str, Any]]:
    return [{"subtopology_id": "0", "partitions": list(partitions)}] if partitions else []


def owning(*partitions: int) -> dict[str, Any]:
    return {"active_tasks": tasks(*partitions), "standby_tasks": [], "warmup_tasks": []}


@scenario(
    "streams-group-heartbeat.reconciliation",
    "a second member: tasks revoked by the first before the second gets them; endpoints",
)
def _reconciliation(run: Run) -> None:
    group, source = assigning_group(run, 4)
    first, second = run.name("a"), run.name("b")
    shape = stateless(source)
    joined = heartbeat(
        run, group, first, 0, **joining(shape),
        user_endpoint={"host": "a.example", "port": 7001},
    )  # fmt: skip
    epoch = int(joined.member_epoch)
    heartbeat(
        run, group, second, 0, **{**joining(shape), "process_id": "other"},
        user_endpoint={"host": "b.example", "port": 7002},
    )  # fmt: skip
    revoking = heartbeat(run, group, first, epoch, **owning(0, 1, 2, 3))
    kept = sorted(revoking.active_tasks[0].partitions)
    heartbeat(run, group, first, epoch, **owning(0, 1, 2, 3))  # still owns them all
    done = heartbeat(run, group, first, epoch, **owning(*kept))
    heartbeat(run, group, second, int(done.member_epoch), **owning(), endpoint_information_epoch=0)
    heartbeat(run, group, first, int(done.member_epoch) - 1, **owning(0, 1, 2, 3))  # stale
    heartbeat(run, group, first, int(done.member_epoch), **{**owning(), "active_tasks": tasks(7)})
    body = {"group_ids": [group], "include_authorized_operations": False}
    run.call(STREAMS_DESCRIBE, 0, body, view=by_process)


@scenario("streams-group-heartbeat.static-members", "instance ids: taken, fenced, left and back")
def _static_members(run: Run) -> None:
    group, source = assigning_group(run, 2)
    first, second, shape = run.name("a"), run.name("b"), stateless(source)
    joined = heartbeat(run, group, first, 0, **joining(shape), instance_id="one")
    epoch = int(joined.member_epoch)
    heartbeat(run, group, second, 0, **joining(shape), instance_id="one")  # still taken
    heartbeat(run, group, first, epoch, instance_id="two")  # unknown instance
    heartbeat(run, group, second, epoch, instance_id="one")  # fenced by the first
    heartbeat(run, group, first, -2, instance_id="one")  # leaves for a while
    run.call(STREAMS_DESCRIBE, 0, {"group_ids": [group], "include_authorized_operations": False})
    heartbeat(run, group, second, 0, **joining(shape), instance_id="one")  # takes its place
    heartbeat(run, group, first, -1, instance_id="one")  # no longer the instance's member
    heartbeat(run, group, second, -2)  # a temporary leave needs the instance id
    run.call(STREAMS_DESCRIBE, 0, {"group_ids": [group], "include_authorized_operations": False})
    heartbeat(run, group, second, -1, instance_id="one")
    run.call(STREAMS_DESCRIBE, 0, {"group_ids": [group], "include_authorized_operations": False})


@scenario("streams-group.other-apis", "ListGroups, DescribeGroups, offsets and DeleteGroups")
def _other_apis(run: Run) -> None:
    group, source, other = run.name("app"), run.name("orders"), run.name("other")
    quietly_create(run, source, 2)
    quietly_create(run, other, 1)
    ready(run, 0, group)
    sources_seen(run, group, source, other)
    at_once(run, group)
    member = run.name("member")
    joined = heartbeat(run, group, member, 0, **joining(stateless(source)))
    epoch = int(joined.member_epoch)
    listed(run, 5, {"states_filter": [], "types_filter": ["streams"]})
    listed(run, 5, {"states_filter": ["Stable"], "types_filter": ["Streams"]})
    run.call(15, 5, {"groups": [group], "include_authorized_operations": False})
    commit = {"group_id": group, "member_id": member, "group_instance_id": None}
    for version, member_epoch in ((8, epoch), (8, epoch + 1), (8, -1)):
        body = {**commit, "generation_id_or_member_epoch": member_epoch}
        body["topics"] = [
            {
                "name": source,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 3,
                        "committed_leader_epoch": -1,
                        "committed_metadata": None,
                    }
                ],
            }
        ]
        run.call(8, version, body)
    commit_partitions(run, run.name("stranger-group"), {other: [(0, None)]})
    fetch_groups(
        run, (group, {source: [0]}), version=9, member={"member_id": member, "member_epoch": epoch}
    )
    fetch_groups(
        run,
        (group, {source: [0]}),
        version=9,
        member={"member_id": member, "member_epoch": epoch + 5},
    )
    fetch_groups(
        run,
        (group, {source: [0]}),
        version=9,
        member={"member_id": run.name("x"), "member_epoch": 1},
    )
    offset_delete(run, group, {source: [0], other: [0]})
    run.call(42, 2, {"groups_names": [group]})
    heartbeat(run, group, member, -1)
    listed(run, 5, {"states_filter": ["empty"], "types_filter": ["streams"]})
    run.call(42, 2, {"groups_names": [group]})
    run.call(STREAMS_DESCRIBE, 0, {"group_ids": [group], "include_authorized_operations": False})


@scenario(
    "streams-group.other-protocols",
    "JoinGroup, consumer and share heartbeats and describes on a streams group's id",
)
def _other_protocols(run: Run) -> None:
    group, source = group_reading(run, 1)
    heartbeat(run, group, run.name("member"), 0, **joining(stateless(source)))
    run.call(11, 9, join_body(group))
    consumer_heartbeat(run, group, run.name("c"), 0, subscribed_topic_names=[source],
                       topic_partitions=[])  # fmt: skip
    share_heartbeat(run, group, run.name("s"), 0, subscribed_topic_names=[source])
    run.call(69, 0, {"group_ids": [group], "include_authorized_operations": False})
    run.call(77, 1, {"group_ids": [group], "include_authorized_operations": False})
    # and a streams heartbeat on a consumer group's id
    consumer = run.name("consumer")
    ready(run, 0, consumer)
    run.quiet(  # (Kafka 4.4 assigns a consumer group's first member off the request path)
        68,
        0,
        {
            "group_id": consumer,
            "member_id": run.name("c"),
            "member_epoch": 0,
            "instance_id": None,
            "rack_id": None,
            "rebalance_timeout": 30000,
            "subscribed_topic_names": [source],
            "server_assignor": None,
            "topic_partitions": [],
        },
    )
    heartbeat(run, consumer, run.name("member"), 0, **joining(stateless(source)))
    run.call(STREAMS_DESCRIBE, 0, {"group_ids": [consumer], "include_authorized_operations": False})


@scenario(
    "streams-group-heartbeat.statuses",
    "a member with an older topology epoch, and a member asking the application to shut down",
)
def _statuses(run: Run) -> None:
    group, source = assigning_group(run, 2)
    first, second = run.name("a"), run.name("b")
    newer = stateless(source)
    newer["epoch"] = 1
    joined = heartbeat(run, group, first, 0, **joining(newer))
    older = heartbeat(run, group, second, 0, **joining(stateless(source)))
    heartbeat(run, group, first, int(joined.member_epoch), shutdown_application=True)
    heartbeat(run, group, second, int(older.member_epoch))
    heartbeat(run, group, first, -1)
    heartbeat(run, group, second, -1)
    run.call(STREAMS_DESCRIBE, 0, {"group_ids": [group], "include_authorized_operations": False})


def _offsets(*entries: tuple[int, int]) -> list[dict[str, Any]]:
    return [{"subtopology_id": "0", "partition": p, "offset": o} for p, o in entries]


@scenario(
    "group-configs.streams-applied",
    "a streams group's configs in its heartbeats; task offsets and end offsets described",
)
def _streams_group_configs_applied(run: Run) -> None:
    group, source = group_reading(run, 2)
    settings = [
        ("streams.initial.rebalance.delay.ms", SET, "0"),
        ("streams.assignment.interval.ms", SET, "0"),
        ("streams.task.offset.interval.ms", SET, "20000"),
        ("streams.acceptable.recovery.lag", SET, "500"),
        ("streams.num.warmup.replicas", SET, "1"),
        ("streams.num.standby.replicas", SET, "1"),
    ]
    incremental(run, [(GROUP, group, settings)])
    until_group_has(run, group, "streams.num.standby.replicas", "1")
    shape = topology(source, f"{group}-counts-changelog")
    first = run.name("a")
    joined = heartbeat(run, group, first, 0, **joining(shape))
    epoch = int(joined.member_epoch)

    def beat() -> Any:
        # (Kafka creates the changelog topic after answering; the group is ready after)
        nonlocal epoch
        body = heartbeat_body(group, first, epoch)
        answer = run.quiet(STREAMS_HEARTBEAT, 0, body)
        epoch = int(answer.member_epoch)
        return answer

    run.until(beat, lambda a: not a.status and a.active_tasks)
    reported = {
        "task_offsets": _offsets((1, 40), (0, 75)),
        "task_end_offsets": _offsets((0, 100), (1, 90)),
    }
    heartbeat(run, group, first, epoch, **reported)
    describe_body = {"group_ids": [group], "include_authorized_operations": False}
    run.call(STREAMS_DESCRIBE, 0, describe_body, view=by_process)
    # a report of one kind replaces that kind only
    heartbeat(run, group, first, epoch, task_end_offsets=_offsets((0, 120)))
    run.call(STREAMS_DESCRIBE, 0, describe_body, view=by_process)
    heartbeat(run, group, first, epoch, task_offsets=_offsets((0, 1), (0, 2)))
    heartbeat(run, group, first, epoch, task_end_offsets=_offsets((1, 1), (1, 2)))
    run.call(STREAMS_DESCRIBE, 0, describe_body, view=by_process)
