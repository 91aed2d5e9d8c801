"""A classic consumer group: its members, where it stands in a rebalance, its record
(GroupMetadata: the generation, protocol, leader, members and assignments) and how
that replays into the shard's classic groups (classic_groups.py).

    Empty -> PreparingRebalance -> CompletingRebalance -> Stable
    (any) -> Dead when deleted

Protocol metadata and assignments are opaque bytes passed between members.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from odradek.coordinator.group import records as rec
from odradek.coordinator.group.context import now_ms
from odradek.coordinator.group.record_codecs import GROUP_KEY, GroupKey
from odradek.coordinator.registry import RecordType, into_part
from odradek.coordinator.runtime import Record

if TYPE_CHECKING:
    from odradek.coordinator.group.classic_groups import ClassicGroups
    from odradek.coordinator.group.shard import GroupShard

EMPTY = "Empty"
PREPARING_REBALANCE = "PreparingRebalance"
COMPLETING_REBALANCE = "CompletingRebalance"
STABLE = "Stable"
DEAD = "Dead"


@dataclass(slots=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]  # (name, metadata) in the member's preference order
    assignment: bytes = b""
    join_future: asyncio.Future[dict[str, Any]] | None = None
    sync_future: asyncio.Future[dict[str, Any]] | None = None

    def metadata_for(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    @property
    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]


@dataclass(slots=True)
class ClassicGroup:
    group_id: str
    state: str = EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    state_timestamp: int = -1
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    pending_members: set[str] = field(default_factory=set)  # told MEMBER_ID_REQUIRED
    # Joins arriving while a new group waits out group.initial.rebalance.delay.ms
    initial_delay_until: float = 0.0

    def is_empty(self) -> bool:
        return not self.members

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader is None:
            self.leader = member.member_id

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if (
            member.group_instance_id is not None
            and self.static_members.get(member.group_instance_id) == member_id
        ):
            del self.static_members[member.group_instance_id]
        if self.leader == member_id:
            self.leader = next(iter(self.members), None)
        if not self.members:
            self.protocol_type = None if self.state != STABLE else self.protocol_type
        return member

    def supports(self, protocol_type: str, protocols: list[str]) -> bool:
        """Can a member with these protocols join? (INCONSISTENT_GROUP_PROTOCOL if not.)"""
        if not protocol_type or not protocols:
            return False
        if not self.members:
            return True
        if protocol_type != self.protocol_type:
            return False
        common = set(protocols)
        for member in self.members.values():
            common &= set(member.protocol_names)
        return bool(common)

    def select_protocol(self) -> str | None:
        """Every member votes for its most preferred protocol that all members support."""
        candidates = None
        for member in self.members.values():
            names = set(member.protocol_names)
            candidates = names if candidates is None else candidates & names
        if not candidates:
            return None
        votes: Counter[str] = Counter()
        for member in self.members.values():
            votes[next(n for n in member.protocol_names if n in candidates)] += 1
        # ties go to the protocol named first by the most members' lists, then by name
        best = max(votes.values())
        winners = sorted(name for name, count in votes.items() if count == best)
        return winners[0]

    def all_joined(self) -> bool:
        return not self.pending_members and all(
            m.join_future is not None for m in self.members.values()
        )

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to (consumer protocol), None if unknown."""
        if self.protocol_type != "consumer" or self.protocol is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            parsed = parse_subscription(member.metadata_for(self.protocol))
            if parsed is None:
                return None
            topics |= parsed
        return topics


def parse_subscription(metadata: bytes) -> set[str] | None:
    """Topic names from a ConsumerProtocolSubscription (any version)."""
    import struct

    try:
        (count,) = struct.unpack_from(">i", metadata, 2)
        position = 6
        topics = set()
        for _ in range(count):
            (length,) = struct.unpack_from(">h", metadata, position)
            position += 2
            topics.add(metadata[position : position + length].decode())
            position += length
        return topics
    except (struct.error, UnicodeDecodeError):
        return None


def tombstone(group_id: str) -> Record:
    """The record that deletes the group."""
    return GROUP_METADATA.tombstone(GroupKey(group_id))


def group_record(group: ClassicGroup) -> Record:
    """The group's metadata record: its generation, protocol, leader and members."""
    value = rec.GroupValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation,
        protocol=group.protocol,
        leader=group.leader,
        state_timestamp=now_ms(),
        members=[
            rec.MemberValue(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                m.metadata_for(group.protocol),
                m.assignment,
            )
            for m in group.members.values()
        ],
    )
    return GROUP_METADATA.record(GroupKey(group.group_id), value)


def described(group: ClassicGroup) -> dict[str, Any]:
    """The group as DescribeGroups gives it: as Kafka, the protocol, metadata and
    assignments only once the group is stable."""
    stable = group.state == STABLE
    return {
        "group_id": group.group_id,
        "group_state": group.state,
        "protocol_type": group.protocol_type or "",
        "protocol_data": (group.protocol or "") if stable else "",
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "member_metadata": m.metadata_for(group.protocol) if stable else b"",
                "member_assignment": m.assignment if stable else b"",
            }
            for m in group.members.values()
        ],
    }


def _classic_groups(shard: GroupShard) -> ClassicGroups:
    return shard.classic


def _apply_metadata(part: ClassicGroups, key: GroupKey, value: rec.GroupValue | None) -> None:
    group_id = key.group
    if value is None:
        gone = part.groups.pop(group_id, None)
        if gone is not None:
            gone.state = DEAD
        return
    group = part.groups.get(group_id)
    if group is None:
        group = ClassicGroup(group_id)
        part.groups[group_id] = group
    group.generation = value.generation
    group.protocol_type = value.protocol_type or None
    group.protocol = value.protocol
    group.leader = value.leader
    group.state_timestamp = value.state_timestamp
    persisted = {m.member_id for m in value.members}
    for m in value.members:
        member = group.members.get(m.member_id)
        if member is None:
            member = Member(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout,
                m.session_timeout,
                value.protocol_type,
                [(value.protocol or "", m.subscription)],
            )
            group.add(member)
        member.assignment = m.assignment
    if part.context.loading:
        # loading: the record is the whole truth about the group
        for member_id in [mid for mid in group.members if mid not in persisted]:
            group.remove(member_id)
        group.leader = value.leader
        group.state = STABLE if group.members else EMPTY


GROUP_METADATA = RecordType(
    2, "GroupMetadata", GROUP_KEY, rec.GROUP_VALUE, _apply_metadata, into_part(_classic_groups)
)
