"""A share group (KIP-932) as pure state, and how one record changes it.

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
from odradek.coordinator.group.consumer_records import TopicPartitions

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
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, TopicPartitions] = field(default_factory=dict)
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

    def copy(self) -> ShareGroup:
        """A copy a heartbeat may change: records replace members, never change them."""
        return dataclasses.replace(self, members=dict(self.members), target=dict(self.target))


def topics_hash(topics: Mapping[str, tuple[uuid.UUID, int]]) -> int:
    """A signed 64-bit hash of the subscribed topics (name -> (id, partitions)), the same
    in every process; 0 for none."""
    if not topics:
        return 0
    text = ";".join(f"{name},{tid},{count}" for name, (tid, count) in sorted(topics.items()))
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), signed=True)


def apply_record(group: ShareGroup, key: shr.ShareKey, value: bytes | None) -> None:
    """One record's change to `group`, the same live, on a working copy and loading."""
    kind, member_id = key.kind, key.member
    if kind == shr.GROUP_EPOCH:
        group.group_epoch, group.metadata_hash = (
            shr.decode_group_epoch(value) if value is not None else (0, 0)
        )
    elif kind == shr.TARGET_EPOCH:
        group.assignment_epoch = shr.decode_assignment_epoch(value) if value is not None else 0
    elif kind == shr.TARGET_MEMBER:
        if value is None:
            group.target.pop(member_id, None)
        else:
            group.target[member_id] = shr.decode_target(value)
    elif kind == shr.MEMBER_METADATA:
        if value is None:
            group.members.pop(member_id, None)
            return
        meta = shr.decode_member(value)
        group.members[member_id] = dataclasses.replace(
            group.members.get(member_id) or ShareMember(member_id),
            rack_id=meta.rack_id,
            client_id=meta.client_id,
            client_host=meta.client_host,
            subscribed_topic_names=meta.subscribed_topic_names,
        )
    elif kind == shr.CURRENT_ASSIGNMENT:
        known = group.members.get(member_id)
        if value is None:
            if known is not None:
                group.members[member_id] = dataclasses.replace(known, member_epoch=0, assigned={})
            return
        current = shr.decode_current(value)
        group.members[member_id] = dataclasses.replace(
            known or ShareMember(member_id),
            member_epoch=current.member_epoch,
            previous_member_epoch=current.previous_member_epoch,
            assigned=current.assigned,
        )
    elif kind == shr.STATE_PARTITIONS:
        group.state_partitions = (
            shr.decode_state_partitions(value) if value is not None else shr.StatePartitions()
        )
