"""A share group (KIP-932) as pure state, its record types and how each changes it.

Members of a share group may read the same partitions, so there is nothing to revoke:
a member's assignment is its target assignment as soon as the target is computed,
and its epoch is the target's epoch.
"""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from odradek.coordinator.group import share_records as shr
from odradek.coordinator.group.modern import (
    ModernGroup,
    ModernRecords,
    apply_current,
    apply_member,
    apply_target,
    apply_target_epoch,
    replay_in,
)
from odradek.coordinator.group.record_codecs import (
    EPOCH_VALUE,
    GROUP_KEY,
    MEMBER_KEY,
    TARGET_VALUE,
    GroupKey,
    TopicPartitions,
)
from odradek.coordinator.registry import RecordType

EMPTY, STABLE, ASSIGNING = "Empty", "Stable", "Assigning"


@dataclass(frozen=True)
class ShareMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    assigned: TopicPartitions = field(default_factory=dict)


@dataclass
class ShareGroup(ModernGroup[ShareMember, TopicPartitions]):
    # the hash of the subscribed topics (topics_hash) the group epoch was computed for
    metadata_hash: int = 0
    state_partitions: shr.StatePartitions = field(default_factory=shr.StatePartitions)

    @property
    def state(self) -> str:
        if not self.members:
            return EMPTY
        if self.assignment_epoch != self.group_epoch:
            return ASSIGNING
        return STABLE

    def new_member(self, member_id: str) -> ShareMember:
        return ShareMember(member_id)

    def unassigned(self, member: ShareMember) -> ShareMember:
        return dataclasses.replace(member, member_epoch=0, assigned={})


def topics_hash(topics: Mapping[str, tuple[uuid.UUID, int]]) -> int:
    """A signed 64-bit hash of the subscribed topics (name -> (id, partitions)), the same
    in every process; 0 for none."""
    if not topics:
        return 0
    text = ";".join(f"{name},{tid},{count}" for name, (tid, count) in sorted(topics.items()))
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), signed=True)


# -- how the share group's own records change it (the others: modern.py)


def _group_epoch(group: ShareGroup, key: GroupKey, value: shr.GroupEpoch | None) -> None:
    group.group_epoch, group.metadata_hash = value if value is not None else (0, 0)


def _state_partitions(group: ShareGroup, key: GroupKey, value: shr.StatePartitions | None) -> None:
    group.state_partitions = value if value is not None else shr.StatePartitions()


_replay = replay_in(lambda shard: shard.share)

MEMBER_METADATA = RecordType(
    10, "ShareGroupMemberMetadata", MEMBER_KEY, shr.MEMBER_VALUE, apply_member, _replay
)
GROUP_EPOCH = RecordType(
    11, "ShareGroupMetadata", GROUP_KEY, shr.GROUP_EPOCH_VALUE, _group_epoch, _replay
)
TARGET_EPOCH = RecordType(
    12, "ShareGroupTargetAssignmentMetadata", GROUP_KEY, EPOCH_VALUE, apply_target_epoch, _replay
)
TARGET_MEMBER = RecordType(
    13, "ShareGroupTargetAssignmentMember", MEMBER_KEY, TARGET_VALUE, apply_target, _replay
)
CURRENT_ASSIGNMENT = RecordType(
    14, "ShareGroupCurrentMemberAssignment", MEMBER_KEY, shr.CURRENT_VALUE, apply_current, _replay
)
STATE_PARTITIONS = RecordType(
    15,
    "ShareGroupStatePartitionMetadata",
    GROUP_KEY,
    shr.STATE_PARTITIONS_VALUE,
    _state_partitions,
    _replay,
)
RECORDS = ModernRecords(
    GROUP_EPOCH,
    (TARGET_MEMBER, CURRENT_ASSIGNMENT, MEMBER_METADATA),
    (TARGET_EPOCH, STATE_PARTITIONS, GROUP_EPOCH),
)
RECORD_TYPES = (
    MEMBER_METADATA,
    GROUP_EPOCH,
    TARGET_EPOCH,
    TARGET_MEMBER,
    CURRENT_ASSIGNMENT,
    STATE_PARTITIONS,
)
