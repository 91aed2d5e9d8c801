"""Scenarios of streams groups (KIP-1071): StreamsGroupHeartbeat and
StreamsGroupDescribe, a member's join with its topology, the statuses it is told, and
the errors bad input gets."""

from __future__ import annotations

from typing import Any

from conformance.harness import Run, scenario
from conformance.scenarios_groups import ready
from conformance.scenarios_topics import quietly_create

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


def heartbeat(run: Run, group: str, member: str, epoch: int, **fields: Any) -> Any:
    body = {
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
    return run.call(STREAMS_HEARTBEAT, 0, body)


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
    group, source = run.name("app"), run.name("orders")
    changelog = f"{group}-counts-changelog"
    quietly_create(run, source, 2)
    ready(run, 0, group)
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
    group, source = run.name("app"), run.name("orders")
    quietly_create(run, source, 3)
    ready(run, 0, group)
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
