"""A streams group (KIP-1071) as pure state, its record types and how each changes it.

The group is initialized with the topology of its first member; its epoch counts
changes of membership, member metadata, the topics the topology needs and the
assignment configs; the broker assigns tasks (subtopology, partition) for an epoch
(streams_assignor.py), and each member moves towards its target as in consumer groups:
it first gives up the tasks that move away (UNREVOKED_TASKS, at its old epoch), then
takes those no other member of any process still holds (UNRELEASED_TASKS until then).
A new group starts at group and assignment epoch 1, as on Kafka.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from odradek.coordinator.group import streams_records as sr
from odradek.coordinator.group.modern import (
    ModernGroup,
    ModernRecords,
    apply_current,
    apply_member,
    apply_target,
    value_of,
    with_fields,
)
from odradek.coordinator.group.record_codecs import GROUP_KEY, MEMBER_KEY, GroupKey, MemberKey
from odradek.coordinator.group.streams_records import AssignedTasks, TargetTasks, Topology
from odradek.coordinator.registry import RAW, RecordType, ignore
from odradek.coordinator.runtime import Record

if TYPE_CHECKING:
    from odradek.coordinator.group.shard import GroupShard

STABLE, UNREVOKED_TASKS, UNRELEASED_TASKS, UNKNOWN = 1, 2, 3, 127
MEMBER_STATES = {STABLE: "Stable", UNREVOKED_TASKS: "UnrevokedTasks",
                 UNRELEASED_TASKS: "UnreleasedTasks"}  # fmt: skip

# group states, as DescribeGroups, ListGroups and StreamsGroupDescribe name them
EMPTY, NOT_READY, ASSIGNING, RECONCILING, GROUP_STABLE = (
    "Empty",
    "NotReady",
    "Assigning",
    "Reconciling",
    "Stable",
)
NO_TASKS = AssignedTasks()


@dataclass(frozen=True)
class StreamsMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: int = STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = -1
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] = ()
    assigned: AssignedTasks = NO_TASKS
    pending_revocation: AssignedTasks = NO_TASKS

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state == STABLE and self.member_epoch == epoch


@dataclass
class StreamsGroup(ModernGroup[StreamsMember, TargetTasks]):
    group_epoch: int = 1
    assignment_epoch: int = 1
    metadata_hash: int = 0
    validated_topology_epoch: int = -1
    assignment_configs: tuple[tuple[str, str], ...] = ()
    assignment_timestamp: int = 0
    topology: Topology | None = None
    # not written down, as on Kafka: lost when the coordinator moves or restarts
    endpoint_epoch: int = 0
    shutdown_requested_by: str | None = None

    @property
    def state(self) -> str:
        if not self.members:
            return EMPTY
        if self.topology is None or self.topology.epoch != self.validated_topology_epoch:
            return NOT_READY
        if self.group_epoch > self.assignment_epoch:
            return ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return RECONCILING
        return GROUP_STABLE

    def new_member(self, member_id: str) -> StreamsMember:
        return StreamsMember(member_id)

    def unassigned(self, member: StreamsMember) -> StreamsMember:
        return dataclasses.replace(
            member,
            member_epoch=-1,
            previous_member_epoch=-1,
            assigned=NO_TASKS,
            pending_revocation=NO_TASKS,
        )

    def with_current(self, member: StreamsMember, current: sr.CurrentAssignment) -> StreamsMember:
        updated = with_fields(member, current)
        if current.state in MEMBER_STATES:
            return updated
        return dataclasses.replace(updated, state=UNKNOWN)

    def static_member(self, instance_id: str | None) -> StreamsMember | None:
        if instance_id is None:
            return None
        for member in self.members.values():
            if member.instance_id == instance_id:
                return member
        return None

    def owners(self) -> Owners:
        """Which process holds each task, as active (one) or standby/warm-up (several),
        counting the tasks members still have to revoke."""
        owners = Owners()
        for member in self.members.values():
            for held in (member.assigned, member.pending_revocation):
                for sub, epochs in held.active.items():
                    for partition in epochs:
                        owners.active[(sub, partition)] = member.process_id
                for kind, tasks in ((owners.standby, held.standby), (owners.warmup, held.warmup)):
                    for sub, parts in tasks.items():
                        for partition in parts:
                            kind.setdefault((sub, partition), set()).add(member.process_id)
        return owners


@dataclass
class Owners:
    active: dict[tuple[str, int], str] = field(default_factory=dict)
    standby: dict[tuple[str, int], set[str]] = field(default_factory=dict)
    warmup: dict[tuple[str, int], set[str]] = field(default_factory=dict)


# -- the records that describe a group --------------------------------------------------


def member_record(group_id: str, member: StreamsMember) -> Record:
    value = value_of(sr.MemberMetadata, member)
    return MEMBER_METADATA.record(MemberKey(group_id, member.member_id), value)


def current_record(group_id: str, member: StreamsMember) -> Record:
    value = value_of(sr.CurrentAssignment, member)
    return CURRENT_ASSIGNMENT.record(MemberKey(group_id, member.member_id), value)


def target_record(group_id: str, member_id: str, target: TargetTasks) -> Record:
    return TARGET_MEMBER.record(MemberKey(group_id, member_id), target)


def target_epoch_record(group_id: str, epoch: int, timestamp: int) -> Record:
    return TARGET_EPOCH.record(GroupKey(group_id), sr.TargetEpoch(epoch, timestamp))


def metadata_record(group: StreamsGroup, epoch: int, metadata_hash: int,
                    validated: int, configs: tuple[tuple[str, str], ...]) -> Record:  # fmt: skip
    value = sr.GroupMetadata(epoch, metadata_hash, validated, configs)
    return GROUP_METADATA.record(GroupKey(group.group_id), value)


def topology_record(group_id: str, topology: Topology) -> Record:
    return TOPOLOGY.record(GroupKey(group_id), topology)


def group_tombstones(group: StreamsGroup) -> list[Record]:
    """Every record of the group, deleted in Kafka's order (the epoch and the topology
    last: replay drops the group with the epoch)."""
    gid = group.group_id
    records = [CURRENT_ASSIGNMENT.tombstone(MemberKey(gid, m)) for m in group.members]
    records += [TARGET_MEMBER.tombstone(MemberKey(gid, m)) for m in group.members]
    records.append(TARGET_EPOCH.tombstone(GroupKey(gid)))
    records += [MEMBER_METADATA.tombstone(MemberKey(gid, m)) for m in group.members]
    records += [GROUP_METADATA.tombstone(GroupKey(gid)), TOPOLOGY.tombstone(GroupKey(gid))]
    return records


# -- how the streams group's own records change it (the others: modern.py)


def _metadata(group: StreamsGroup, key: GroupKey, value: sr.GroupMetadata | None) -> None:
    if value is None:
        return  # the shard drops the group
    group.group_epoch = value.epoch
    group.metadata_hash = value.metadata_hash
    group.validated_topology_epoch = value.validated_topology_epoch
    group.assignment_configs = value.assignment_configs


def _topology(group: StreamsGroup, key: GroupKey, topology: Topology | None) -> None:
    group.topology = topology


def _target_epoch(group: StreamsGroup, key: GroupKey, value: sr.TargetEpoch | None) -> None:
    group.assignment_epoch, group.assignment_timestamp = value if value is not None else (-1, 0)


def _ignored(group: StreamsGroup, key: GroupKey, value: bytes | None) -> None:
    pass


def _replay(
    shard: GroupShard,
    record_type: RecordType[GroupShard, StreamsGroup, Any, Any],
    key: GroupKey | MemberKey,
    value: object,
    offset: int,
    producer_id: int,
) -> None:
    if shard.streams.replay(record_type, key, value):
        classic = shard.classic.groups.get(key.group)
        if classic is not None and classic.is_empty():
            del shard.classic.groups[key.group]  # an empty classic group became this one


GROUP_METADATA = RecordType(
    17, "StreamsGroupMetadata", GROUP_KEY, sr.METADATA_VALUE, _metadata, _replay
)
# no longer written by Kafka (the subscribed topics' metadata of Kafka 4.0)
LEGACY_PARTITION_METADATA = RecordType(
    18, "StreamsGroupPartitionMetadata", GROUP_KEY, RAW, _ignored, ignore
)
MEMBER_METADATA = RecordType(
    19, "StreamsGroupMemberMetadata", MEMBER_KEY, sr.MEMBER_VALUE, apply_member, _replay
)
TARGET_EPOCH = RecordType(
    20,
    "StreamsGroupTargetAssignmentMetadata",
    GROUP_KEY,
    sr.TARGET_EPOCH_VALUE,
    _target_epoch,
    _replay,
)
TARGET_MEMBER = RecordType(
    21, "StreamsGroupTargetAssignmentMember", MEMBER_KEY, sr.TARGET_VALUE, apply_target, _replay
)
CURRENT_ASSIGNMENT = RecordType(
    22, "StreamsGroupCurrentMemberAssignment", MEMBER_KEY, sr.CURRENT_VALUE, apply_current, _replay
)
TOPOLOGY = RecordType(23, "StreamsGroupTopology", GROUP_KEY, sr.TOPOLOGY_VALUE, _topology, _replay)
RECORDS = ModernRecords(
    GROUP_METADATA,
    (CURRENT_ASSIGNMENT, TARGET_MEMBER, MEMBER_METADATA),
    (GROUP_METADATA, TOPOLOGY),
)
RECORD_TYPES = (
    GROUP_METADATA,
    LEGACY_PARTITION_METADATA,
    MEMBER_METADATA,
    TARGET_EPOCH,
    TARGET_MEMBER,
    CURRENT_ASSIGNMENT,
    TOPOLOGY,
)
