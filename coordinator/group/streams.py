"""A streams group (KIP-1071) as pure state, and how each of its records changes it.

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

from odradek.coordinator.group import streams_records as sr
from odradek.coordinator.group.streams_records import AssignedTasks, TargetTasks, Topology
from odradek.coordinator.runtime import Record

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

    def metadata(self) -> sr.MemberMetadata:
        return sr.MemberMetadata(
            self.instance_id,
            self.rack_id,
            self.client_id,
            self.client_host,
            self.rebalance_timeout_ms,
            self.topology_epoch,
            self.process_id,
            self.user_endpoint,
            self.client_tags,
        )

    def current(self) -> sr.CurrentAssignment:
        return sr.CurrentAssignment(
            self.member_epoch,
            self.previous_member_epoch,
            self.state,
            self.assigned,
            self.pending_revocation,
        )

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state == STABLE and self.member_epoch == epoch


@dataclass
class StreamsGroup:
    group_id: str
    group_epoch: int = 1
    metadata_hash: int = 0
    validated_topology_epoch: int = -1
    assignment_configs: tuple[tuple[str, str], ...] = ()
    assignment_epoch: int = 1
    assignment_timestamp: int = 0
    topology: Topology | None = None
    members: dict[str, StreamsMember] = field(default_factory=dict)
    target: dict[str, TargetTasks] = field(default_factory=dict)
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


def apply_record(group: StreamsGroup, key: sr.StreamsKey, value: bytes | None) -> None:
    """One record's change to `group`: the same for a heartbeat's working copy, a live
    replay and loading. Members are replaced, never changed in place."""
    kind, member_id = key.kind, key.member
    if kind == sr.GROUP_METADATA:
        if value is None:
            return  # the caller drops the group
        epoch = sr.decode_group_metadata(value)
        group.group_epoch = epoch.epoch
        group.metadata_hash = epoch.metadata_hash
        group.validated_topology_epoch = epoch.validated_topology_epoch
        group.assignment_configs = epoch.assignment_configs
    elif kind == sr.TOPOLOGY:
        group.topology = sr.decode_topology(value) if value is not None else None
    elif kind == sr.TARGET_EPOCH:
        if value is None:
            group.assignment_epoch, group.assignment_timestamp = -1, 0
        else:
            group.assignment_epoch, group.assignment_timestamp = sr.decode_target_epoch(value)
    elif kind == sr.TARGET_MEMBER:
        if value is None:
            group.target.pop(member_id, None)
        else:
            group.target[member_id] = sr.decode_target(value)
    elif kind == sr.MEMBER_METADATA:
        if value is None:
            group.members.pop(member_id, None)
            return
        meta = sr.decode_member(value)
        group.members[member_id] = dataclasses.replace(
            group.members.get(member_id) or StreamsMember(member_id),
            instance_id=meta.instance_id,
            rack_id=meta.rack_id,
            client_id=meta.client_id,
            client_host=meta.client_host,
            rebalance_timeout_ms=meta.rebalance_timeout_ms,
            topology_epoch=meta.topology_epoch,
            process_id=meta.process_id,
            user_endpoint=meta.user_endpoint,
            client_tags=meta.client_tags,
        )
    elif kind == sr.CURRENT_ASSIGNMENT:
        known = group.members.get(member_id)
        if value is None:
            if known is not None:
                group.members[member_id] = dataclasses.replace(
                    known,
                    member_epoch=-1,
                    previous_member_epoch=-1,
                    assigned=NO_TASKS,
                    pending_revocation=NO_TASKS,
                )
            return
        current = sr.decode_current(value)
        group.members[member_id] = dataclasses.replace(
            known or StreamsMember(member_id),
            member_epoch=current.member_epoch,
            previous_member_epoch=current.previous_member_epoch,
            state=current.state if current.state in MEMBER_STATES else UNKNOWN,
            assigned=current.assigned,
            pending_revocation=current.pending_revocation,
        )


def working_copy(group: StreamsGroup) -> StreamsGroup:
    """A copy a heartbeat may change: records replace members and map entries."""
    return dataclasses.replace(group, members=dict(group.members), target=dict(group.target))


# -- the records that describe a group --------------------------------------------------


def member_record(group_id: str, member: StreamsMember) -> Record:
    key = sr.StreamsKey(sr.MEMBER_METADATA, group_id, member.member_id)
    return sr.encode_key(key), sr.encode_member(member.metadata())


def current_record(group_id: str, member: StreamsMember) -> Record:
    key = sr.StreamsKey(sr.CURRENT_ASSIGNMENT, group_id, member.member_id)
    return sr.encode_key(key), sr.encode_current(member.current())


def target_record(group_id: str, member_id: str, target: TargetTasks) -> Record:
    key = sr.StreamsKey(sr.TARGET_MEMBER, group_id, member_id)
    return sr.encode_key(key), sr.encode_target(target)


def target_epoch_record(group_id: str, epoch: int, timestamp: int) -> Record:
    key = sr.StreamsKey(sr.TARGET_EPOCH, group_id)
    return sr.encode_key(key), sr.encode_target_epoch(epoch, timestamp)


def metadata_record(group: StreamsGroup, epoch: int, metadata_hash: int,
                    validated: int, configs: tuple[tuple[str, str], ...]) -> Record:  # fmt: skip
    key = sr.StreamsKey(sr.GROUP_METADATA, group.group_id)
    value = sr.GroupMetadata(epoch, metadata_hash, validated, configs)
    return sr.encode_key(key), sr.encode_group_metadata(value)


def topology_record(group_id: str, topology: Topology) -> Record:
    key = sr.StreamsKey(sr.TOPOLOGY, group_id)
    return sr.encode_key(key), sr.encode_topology(topology)


def member_tombstones(group_id: str, member_id: str) -> list[Record]:
    """A member's records, deleted in Kafka's order."""
    kinds = (sr.CURRENT_ASSIGNMENT, sr.TARGET_MEMBER, sr.MEMBER_METADATA)
    return [(sr.encode_key(sr.StreamsKey(k, group_id, member_id)), None) for k in kinds]


def group_tombstones(group: StreamsGroup) -> list[Record]:
    """Every record of the group, deleted in Kafka's order (the epoch and the topology
    last: replay drops the group with the epoch)."""
    gid = group.group_id
    keys = [sr.StreamsKey(sr.CURRENT_ASSIGNMENT, gid, m) for m in group.members]
    keys += [sr.StreamsKey(sr.TARGET_MEMBER, gid, m) for m in group.members]
    keys += [sr.StreamsKey(sr.TARGET_EPOCH, gid)]
    keys += [sr.StreamsKey(sr.MEMBER_METADATA, gid, m) for m in group.members]
    keys += [sr.StreamsKey(sr.GROUP_METADATA, gid), sr.StreamsKey(sr.TOPOLOGY, gid)]
    return [(sr.encode_key(key), None) for key in keys]
