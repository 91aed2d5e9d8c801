"""A consumer-protocol group (KIP-848), its record types and how each changes it, and
the reconciliation of one member towards its target assignment, as pure state.

The group epoch counts changes of membership, subscriptions and subscribed topics;
the target assignment is computed for a group epoch; each member's epoch reaches the
target epoch only once it owns nothing another member must get. A member first gives
up what moves away (UNREVOKED_PARTITIONS, at its old epoch), then takes what is free;
what another member still holds it gets later (UNRELEASED_PARTITIONS). So no partition
ever has two owners.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from odradek.coordinator.group import consumer_records as cr
from odradek.coordinator.group.consumer_records import ClassicMetadata, TopicMetadata
from odradek.coordinator.group.modern import (
    ModernGroup,
    ModernRecords,
    apply_current,
    apply_member,
    apply_target,
    apply_target_epoch,
    replay_in,
    value_of,
)
from odradek.coordinator.group.record_codecs import (
    EPOCH_VALUE,
    GROUP_KEY,
    MEMBER_KEY,
    TARGET_VALUE,
    GroupKey,
    MemberKey,
    TopicPartitions,
)
from odradek.coordinator.registry import RecordType
from odradek.coordinator.runtime import Record

STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS = 0, 1, 2
MEMBER_STATES = {STABLE: "Stable", UNREVOKED_PARTITIONS: "UnrevokedPartitions",
                 UNRELEASED_PARTITIONS: "UnreleasedPartitions"}  # fmt: skip

# group states as DescribeGroups / ListGroups / ConsumerGroupDescribe name them
EMPTY, ASSIGNING, RECONCILING, GROUP_STABLE = "Empty", "Assigning", "Reconciling", "Stable"


@dataclass
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = 300000
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: int = STABLE
    assigned: TopicPartitions = field(default_factory=dict)
    pending_revocation: TopicPartitions = field(default_factory=dict)
    # set for a member that joined with JoinGroup (the classic protocol)
    classic: ClassicMetadata | None = None


@dataclass
class ConsumerGroup(ModernGroup[ConsumerMember, TopicPartitions]):
    # the subscribed topics as of the group epoch: a change means a new epoch
    topics: list[TopicMetadata] = field(default_factory=list)

    @property
    def state(self) -> str:
        if not self.members:
            return EMPTY
        if self.assignment_epoch != self.group_epoch:
            return ASSIGNING
        if any(
            m.member_epoch != self.assignment_epoch or m.state != STABLE
            for m in self.members.values()
        ):
            return RECONCILING
        return GROUP_STABLE

    def new_member(self, member_id: str) -> ConsumerMember:
        return ConsumerMember(member_id)

    def unassigned(self, member: ConsumerMember) -> ConsumerMember:
        return dataclasses.replace(member, member_epoch=0, assigned={}, pending_revocation={})

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        for member in self.members.values():
            if member.instance_id == instance_id:
                return member
        return None

    def classic_members(self) -> list[ConsumerMember]:
        return [m for m in self.members.values() if m.classic is not None]

    def supports_classic(self, protocol_type: str, protocols: list[str]) -> bool:
        """May a classic member with these protocols join? Its protocol type must be
        "consumer" and one of its protocols shared by every classic member."""
        if protocol_type != "consumer" or not protocols:
            return False
        for member in self.classic_members():
            assert member.classic is not None
            offered = {name for name, _ in member.classic.protocols}
            protocols = [p for p in protocols if p in offered]
        return bool(protocols)

    def waiting_on_unreleased(self, member: ConsumerMember) -> bool:
        """Does another member still hold a partition of ``member``'s target?"""
        target = self.target.get(member.member_id, {})
        for other in self.members.values():
            if other.member_id == member.member_id:
                continue
            for held in (other.assigned, other.pending_revocation):
                for topic_id, parts in held.items():
                    if parts & target.get(topic_id, frozenset()):
                        return True
        return False


def owns_any(owned: Mapping[uuid.UUID, frozenset[int]] | None, wanted: TopicPartitions) -> bool:
    """Does the member's reported ownership include any of ``wanted``? Unknown (None)
    counts as yes: the member has not said it let go."""
    if owned is None:
        return True
    return any(owned.get(t, frozenset()) & parts for t, parts in wanted.items())


def reconcile(
    member: ConsumerMember,
    target_epoch: int,
    target: TopicPartitions,
    owned: Mapping[uuid.UUID, frozenset[int]] | None,
    held_by_another: Callable[[uuid.UUID, int], bool],
) -> ConsumerMember:
    """The member's next state towards ``target`` (of ``target_epoch``), given what it
    reported owning in this heartbeat (None when it did not say)."""
    epoch = member.member_epoch
    if member.state == STABLE and epoch == target_epoch:
        return member
    if member.state == UNREVOKED_PARTITIONS:
        if owns_any(owned, member.pending_revocation):
            return member
        epoch += 1
    keep: TopicPartitions = {}
    revoke: TopicPartitions = {}
    take: TopicPartitions = {}
    unreleased = False
    for topic_id in set(target) | set(member.assigned):
        wanted = target.get(topic_id, frozenset())
        current = member.assigned.get(topic_id, frozenset())
        if current & wanted:
            keep[topic_id] = current & wanted
        if current - wanted:
            revoke[topic_id] = current - wanted
        free = frozenset(p for p in wanted - current if not held_by_another(topic_id, p))
        unreleased = unreleased or len(free) < len(wanted - current)
        if free:
            take[topic_id] = free
    if revoke and owns_any(owned, revoke):
        return _moved(member, epoch, UNREVOKED_PARTITIONS, keep, revoke)
    for topic_id, parts in take.items():
        keep[topic_id] = keep.get(topic_id, frozenset()) | parts
    state = UNRELEASED_PARTITIONS if unreleased else STABLE
    return _moved(member, target_epoch, state, keep, {})


def _moved(
    member: ConsumerMember,
    epoch: int,
    state: int,
    assigned: TopicPartitions,
    pending_revocation: TopicPartitions,
) -> ConsumerMember:
    return dataclasses.replace(
        member,
        member_epoch=epoch,
        previous_member_epoch=member.member_epoch,
        state=state,
        assigned=assigned,
        pending_revocation=pending_revocation,
    )


# -- the records that describe a member ------------------------------------------------


def member_metadata(member: ConsumerMember) -> cr.MemberMetadata:
    """What the member metadata record holds of a member."""
    return value_of(cr.MemberMetadata, member)


def member_record(group_id: str, member: ConsumerMember) -> Record:
    return MEMBER_METADATA.record(MemberKey(group_id, member.member_id), member_metadata(member))


def current_record(group_id: str, member: ConsumerMember) -> Record:
    value = value_of(cr.CurrentAssignment, member)
    return CURRENT_ASSIGNMENT.record(MemberKey(group_id, member.member_id), value)


def target_record(group_id: str, member_id: str, target: TopicPartitions) -> Record:
    return TARGET_MEMBER.record(MemberKey(group_id, member_id), target)


# -- how the consumer group's own records change it (the others: modern.py)


def _group_epoch(group: ConsumerGroup, key: GroupKey, epoch: int | None) -> None:
    group.group_epoch = epoch if epoch is not None else 0


def _topics(group: ConsumerGroup, key: GroupKey, topics: list[TopicMetadata] | None) -> None:
    group.topics = topics if topics is not None else []


_replay = replay_in(lambda shard: shard.consumer)

GROUP_EPOCH = RecordType(3, "ConsumerGroupMetadata", GROUP_KEY, EPOCH_VALUE, _group_epoch, _replay)
PARTITION_METADATA = RecordType(
    4, "ConsumerGroupPartitionMetadata", GROUP_KEY, cr.TOPICS_VALUE, _topics, _replay
)
MEMBER_METADATA = RecordType(
    5, "ConsumerGroupMemberMetadata", MEMBER_KEY, cr.MEMBER_VALUE, apply_member, _replay
)
TARGET_EPOCH = RecordType(
    6, "ConsumerGroupTargetAssignmentMetadata", GROUP_KEY, EPOCH_VALUE, apply_target_epoch, _replay
)
TARGET_MEMBER = RecordType(
    7, "ConsumerGroupTargetAssignmentMember", MEMBER_KEY, TARGET_VALUE, apply_target, _replay
)
CURRENT_ASSIGNMENT = RecordType(
    8, "ConsumerGroupCurrentMemberAssignment", MEMBER_KEY, cr.CURRENT_VALUE, apply_current, _replay
)
RECORDS = ModernRecords(
    GROUP_EPOCH,
    (TARGET_MEMBER, CURRENT_ASSIGNMENT, MEMBER_METADATA),
    (TARGET_EPOCH, PARTITION_METADATA, GROUP_EPOCH),
)
RECORD_TYPES = (
    GROUP_EPOCH,
    PARTITION_METADATA,
    MEMBER_METADATA,
    TARGET_EPOCH,
    TARGET_MEMBER,
    CURRENT_ASSIGNMENT,
)
