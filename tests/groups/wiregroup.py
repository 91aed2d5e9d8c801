"""Raw group-protocol calls through helpers.wire.WireClient (one connection per member:
a parked JoinGroup holds back later answers on its connection)."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from typing import Any

from helpers.wire import WireClient

from groups.members import wait_until

JOIN, HEARTBEAT, LEAVE, SYNC = 11, 12, 13, 14
COMMIT, FETCH, DESCRIBE, LIST, DELETE, OFFSET_DELETE = 8, 9, 15, 16, 42, 47

NONE = 0
OFFSET_METADATA_TOO_LARGE = 12
COORDINATOR_NOT_AVAILABLE = 15
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
UNKNOWN_TOPIC_OR_PARTITION = 3
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
MEMBER_ID_REQUIRED = 79
FENCED_INSTANCE_ID = 82
GROUP_SUBSCRIBED_TO_TOPIC = 86


def subscription(topics: Iterable[str]) -> bytes:
    """ConsumerProtocolSubscription v0 (no user data)."""
    names = list(topics)
    out = struct.pack(">hi", 0, len(names))
    for t in names:
        raw = t.encode()
        out += struct.pack(">h", len(raw)) + raw
    return out + struct.pack(">i", -1)


def assignment(parts: Mapping[str, list[int]]) -> bytes:
    """ConsumerProtocolAssignment v0."""
    out = struct.pack(">hi", 0, len(parts))
    for t, ps in parts.items():
        raw = t.encode()
        out += struct.pack(">h", len(raw)) + raw + struct.pack(">i", len(ps))
        out += b"".join(struct.pack(">i", p) for p in ps)
    return out + struct.pack(">i", -1)


def join(
    c: WireClient,
    group: str,
    member_id: str = "",
    *,
    topics: Iterable[str] = ("t",),
    instance: str | None = None,
    session: int = 6000,
    rebalance: int = 6000,
    protocol_type: str = "consumer",
    protocols: list[tuple[str, bytes]] | None = None,
    version: int = 5,
) -> Any:
    if protocols is None:
        protocols = [("range", subscription(topics))]
    body = {
        "group_id": group,
        "session_timeout": session,
        "rebalance_timeout": rebalance,
        "member_id": member_id,
        "group_instance_id": instance,
        "protocol_type": protocol_type,
        "protocols": [{"name": n, "metadata": m} for n, m in protocols],
    }
    return c.call(JOIN, version, body)


def join_full(c: WireClient, group: str, **kw: Any) -> Any:
    """JoinGroup, repeating once with the id from MEMBER_ID_REQUIRED."""
    resp = join(c, group, **kw)
    if resp.error_code == MEMBER_ID_REQUIRED:
        kw = {k: v for k, v in kw.items() if k != "member_id"}
        resp = join(c, group, member_id=resp.member_id, **kw)
    return resp


def sync(
    c: WireClient,
    group: str,
    generation: int,
    member_id: str,
    assignments: Mapping[str, bytes] | None = None,
    instance: str | None = None,
    version: int = 3,
) -> Any:
    body = {
        "group_id": group,
        "generation_id": generation,
        "member_id": member_id,
        "group_instance_id": instance,
        "assignments": [{"member_id": m, "assignment": a} for m, a in (assignments or {}).items()],
    }
    return c.call(SYNC, version, body)


def join_and_sync(c: WireClient, group: str, topic: str, **kw: Any) -> tuple[str, int]:
    """A lone member: join, sync (as leader, taking every partition 0..3); returns
    (member id, generation)."""
    resp = join_full(c, group, topics=[topic], **kw)
    assert resp.error_code == NONE, resp
    assigned = {resp.member_id: assignment({topic: [0]})}
    s = sync(c, group, resp.generation_id, resp.member_id, assigned, instance=kw.get("instance"))
    assert s.error_code == NONE, s
    return resp.member_id, resp.generation_id


def heartbeat(
    c: WireClient,
    group: str,
    generation: int,
    member_id: str,
    instance: str | None = None,
    version: int = 3,
) -> int:
    body = {
        "group_id": group,
        "generation_id": generation,
        "member_id": member_id,
        "group_instance_id": instance,
    }
    return int(c.call(HEARTBEAT, version, body).error_code)


def leave(
    c: WireClient, group: str, members: list[tuple[str, str | None]], version: int = 3
) -> Any:
    body = {
        "group_id": group,
        "members": [{"member_id": m, "group_instance_id": i} for m, i in members],
    }
    return c.call(LEAVE, version, body)


def commit(
    c: WireClient,
    group: str,
    offsets: Mapping[tuple[str, int], int | tuple[int, str]],
    generation: int = -1,
    member_id: str = "",
    instance: str | None = None,
    version: int = 8,
) -> dict[tuple[str, int], int]:
    """OffsetCommit; returns {(topic, partition): error code}."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (t, p), value in offsets.items():
        offset, metadata = value if isinstance(value, tuple) else (value, "")
        by_topic.setdefault(t, []).append(
            {
                "partition_index": p,
                "committed_offset": offset,
                "committed_leader_epoch": -1,
                "committed_metadata": metadata,
            }
        )
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": generation,
        "member_id": member_id,
        "group_instance_id": instance,
        "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
    }
    resp = c.call(COMMIT, version, body)
    return {
        (t.name, p.partition_index): int(p.error_code) for t in resp.topics for p in t.partitions
    }


def fetch(
    c: WireClient, group: str, parts: Iterable[tuple[str, int]] | None = None, version: int = 7
) -> dict[tuple[str, int], tuple[int, str, int]]:
    """OffsetFetch; returns {(topic, partition): (offset, metadata, error code)}."""
    topics = None
    if parts is not None:
        by_topic: dict[str, list[int]] = {}
        for t, p in parts:
            by_topic.setdefault(t, []).append(p)
        topics = [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
    resp = c.call(FETCH, version, {"group_id": group, "topics": topics, "require_stable": False})
    assert resp.error_code == NONE, resp
    return {
        (t.name, p.partition_index): (int(p.committed_offset), p.metadata, int(p.error_code))
        for t in resp.topics
        for p in t.partitions
    }


def describe(c: WireClient, group: str, version: int = 5) -> Any:
    resp = c.call(DESCRIBE, version, {"groups": [group], "include_authorized_operations": False})
    return resp.groups[0]


def until_state(bootstrap: str, group: str, state: str, timeout: float = 30.0) -> None:
    """Until DescribeGroups, on a connection of its own, shows the group in `state`."""
    with WireClient(bootstrap) as c:
        wait_until(
            lambda: describe(c, group).group_state == state,
            timeout,
            f"{group} in {state}",
            interval=0.05,
        )
