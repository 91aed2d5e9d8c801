"""Scenarios of the KIP-1331 versions of the streams-group APIs: StreamsGroupHeartbeat
v1, StreamsGroupDescribe v1 and StreamsGroupTopologyDescriptionUpdate v0, on brokers
without a topology-description plugin (Kafka 4.4's default)."""

from __future__ import annotations

import struct
from typing import Any

from conformance.harness import Run, scenario
from conformance.scenarios_acls import GROUP, binding, create_acls, login
from conformance.scenarios_configs import GROUP as GROUP_CONFIGS
from conformance.scenarios_configs import SET, incremental, until_group_has
from conformance.scenarios_streams_groups import (
    STREAMS_DESCRIBE,
    assigning_group,
    heartbeat,
    joining,
    stateless,
)

DESCRIPTION_UPDATE = 93
GROUP_AUTHORIZATION_FAILED = 30


def heartbeat_at(run: Run, version: int, group: str, member: str, epoch: int, **fields: Any) -> Any:
    return heartbeat(run, group, member, epoch, version, **fields)


def describe_v1(run: Run, group: str, include_description: bool) -> Any:
    body = {
        "group_ids": [group],
        "include_authorized_operations": False,
        "include_topology_description": include_description,
    }
    return run.call(STREAMS_DESCRIBE, 1, body)


def streams_group(run: Run) -> tuple[str, str, str, int]:
    """A streams group with one member, assigned at once: (group, source, member, epoch)."""
    group, source = assigning_group(run, 2)
    member = run.name("member")
    joined = heartbeat_at(run, 1, group, member, 0, **joining(stateless(source)))
    return group, source, member, int(joined.member_epoch)


@scenario(
    "streams-group-heartbeat.v1",
    "v1: the int64 recovery lag and topologyDescriptionRequired; v0 beside it; refusals",
)
def _heartbeat_v1(run: Run) -> None:
    group, source, member, epoch = streams_group(run)
    heartbeat_at(run, 1, group, member, epoch)
    heartbeat_at(run, 0, group, member, epoch)  # the same member at v0: the int32 lag is 0
    heartbeat_at(run, 1, group, run.name("stranger"), 1)  # unknown member
    heartbeat_at(run, 1, group, member, epoch + 3)  # fenced epoch
    heartbeat_at(run, 1, run.name("nobody"), member, 1)  # unknown group
    heartbeat_at(run, 1, group, member, 0, **{**joining(stateless(source)), "topology": None})
    heartbeat_at(run, 1, group, member, -1)


@scenario(
    "streams-group-describe.v1",
    "v1: the assignor, and the topology description asked for or not; unknown and empty ids",
)
def _describe_v1(run: Run) -> None:
    group, _source, _member, _epoch = streams_group(run)
    for described in (group, run.name("nobody"), ""):  # one a call: Kafka orders by shard
        describe_v1(run, described, False)
        describe_v1(run, described, True)


def description(topic: str) -> dict[str, Any]:
    source = {
        "name": "KSTREAM-SOURCE-0000000000",
        "node_type": 1,
        "source_topics": [topic],
        "sink_topic": None,
        "stores": [],
        "successors": ["KSTREAM-PEEK-0000000001"],
    }
    peek = {
        "name": "KSTREAM-PEEK-0000000001",
        "node_type": 2,
        "source_topics": [],
        "sink_topic": None,
        "stores": [],
        "successors": [],
    }
    return {
        "subtopologies": [{"subtopology_id": "0", "nodes": [source, peek]}],
        "global_stores": [],
    }


def _closed_after(run: Run, label: str, frame: bytes) -> None:
    """Send a hand-made frame on a connection of its own; record whether the broker
    closed it without an answer."""
    client = run.client()
    client.send_raw(frame)
    run.record(label, "closed" if client.is_closed_by_peer() else "answered")


@scenario(
    "streams-group-topology-description-update.no-plugin",
    "a push for a known member and epoch, a wrong epoch, unknown ids, empty ids, bad frames",
)
def _description_update(run: Run) -> None:
    group, source, member, epoch = streams_group(run)

    def push(group_id: str, member_id: str, topology_epoch: int) -> Any:
        body = {
            "group_id": group_id,
            "member_id": member_id,
            "topology_epoch": topology_epoch,
            "topology_description": description(source),
        }
        return run.call(DESCRIPTION_UPDATE, 0, body)

    push(group, member, 0)  # the member's own topology epoch
    push(group, member, 7)
    push(group, run.name("stranger"), 0)
    push(run.name("nobody"), member, 0)
    push(group, "", 0)
    push("", member, 0)
    heartbeat_at(run, 1, group, member, epoch)  # still no description asked for
    body = {
        "group_id": group,
        "member_id": member,
        "topology_epoch": 0,
        "topology_description": description(source),
    }
    _, whole = run.client().request_bytes(DESCRIPTION_UPDATE, 0, body)
    message = whole[4:]
    truncated = message[: len(message) - 5]
    _closed_after(run, "truncated", struct.pack(">i", len(truncated)) + truncated)
    # the subtopologies array (a compact array: count + 1) claims 126 entries
    at = message.index(b"\x02\x020")
    oversized = message[:at] + b"\x7f" + message[at + 1 :]
    _closed_after(run, "oversized array", struct.pack(">i", len(oversized)) + oversized)
    describe_v1(run, group, True)


@scenario(
    "streams-group-heartbeat.client-tags",
    "rack-aware assignment tags a member lacks: told at v1 (MISSING_CLIENT_TAGS), not at v0",
)
def _client_tags(run: Run) -> None:
    group, source = assigning_group(run, 2)
    incremental(
        run, [(GROUP_CONFIGS, group, [("streams.rack.aware.assignment.tags", SET, "zone,rack")])]
    )
    until_group_has(run, group, "streams.rack.aware.assignment.tags", "zone,rack")
    shape = stateless(source)

    def tags(*keys: str) -> list[dict[str, str]]:
        return [{"key": key, "value": "x"} for key in keys]

    first, second, third = run.name("a"), run.name("b"), run.name("c")

    def join(version: int, member: str, *keys: str) -> Any:
        return heartbeat_at(
            run, version, group, member, 0, **joining(shape) | {"client_tags": tags(*keys)}
        )

    first_in = join(1, first)
    second_in = join(0, second, "zone")
    join(1, third, "rack", "zone")
    # still lacking zone; then the v0 member, unchanged, heartbeating at v1
    heartbeat_at(run, 1, group, first, int(first_in.member_epoch), client_tags=tags("rack"))
    heartbeat_at(run, 1, group, second, int(second_in.member_epoch))


@scenario(
    "streams-group-topology-description-update.acls",
    "a push and a v1 describe without READ or DESCRIBE on the group, then a push with READ",
    secure=True,
)
def _description_update_acls(run: Run) -> None:
    group = run.name("app")
    alice = login(run)
    body = {
        "group_id": group,
        "member_id": run.name("member"),
        "topology_epoch": 0,
        "topology_description": description(run.name("orders")),
    }
    run.call(DESCRIPTION_UPDATE, 0, body, alice)
    described = {
        "group_ids": [group],
        "include_authorized_operations": False,
        "include_topology_description": True,
    }
    run.call(STREAMS_DESCRIBE, 1, described, alice)
    create_acls(run, binding(GROUP, group))
    run.until(  # until the ACL reaches the broker's authorizer
        lambda: run.quiet(DESCRIPTION_UPDATE, 0, body, alice),
        lambda answer: answer.error_code != GROUP_AUTHORIZATION_FAILED,
    )
    run.call(DESCRIPTION_UPDATE, 0, body, alice)
