"""What the modern group types (consumer, share and streams groups: KIP-848, KIP-932,
KIP-1071) have in common as state: a group epoch, members, and a target assignment
computed for an assignment epoch; and how the records every modern type has (a
member's metadata, its current assignment, its target, the target's epoch) change a
group.

A member's record values name their fields as the member does: a record sets the
member's fields of the same names. Records replace members and map entries, never
change them in place, so a heartbeat's working copy (`copy`) may share members with
the live group.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar

from odradek.coordinator.group.record_codecs import GroupKey, MemberKey
from odradek.coordinator.registry import AnyRecordType

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

M = TypeVar("M")  # a member
A = TypeVar("A")  # a member's target assignment
D = TypeVar("D", bound="DataclassInstance")


@dataclass
class ModernGroup(Generic[M, A]):
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, M] = field(default_factory=dict)
    target: dict[str, A] = field(default_factory=dict)

    @property
    def state(self) -> str:
        raise NotImplementedError

    def new_member(self, member_id: str) -> M:
        raise NotImplementedError

    def unassigned(self, member: M) -> M:
        """The member once its current assignment is deleted."""
        raise NotImplementedError

    def with_current(self, member: M, current: Any) -> M:
        """The member at the epoch, state and assignment of a current assignment record."""
        return with_fields(member, current)  # type: ignore[type-var]

    def is_empty(self) -> bool:
        return not self.members

    def copy(self) -> Self:
        """A copy a heartbeat may change: records replace members and map entries."""
        return dataclasses.replace(self, members=dict(self.members), target=dict(self.target))


_SHARED: dict[tuple[type, type], tuple[str, ...]] = {}


def _shared_fields(source: type, into: type) -> tuple[str, ...]:
    """The names of the fields of `source` that `into` has too."""
    found = _SHARED.get((source, into))
    if found is None:
        names = {f.name for f in dataclasses.fields(into)}
        found = tuple(f.name for f in dataclasses.fields(source) if f.name in names)
        _SHARED[(source, into)] = found
    return found


def with_fields(member: D, value: Any) -> D:
    """`member` with the fields of the record value `value` that it has too."""
    names = _shared_fields(type(value), type(member))
    return dataclasses.replace(member, **{name: getattr(value, name) for name in names})


def value_of(value_type: type[D], member: Any) -> D:
    """The record value of type `value_type` that holds these fields of `member`."""
    names = _shared_fields(value_type, type(member))
    return value_type(**{name: getattr(member, name) for name in names})


# -- how the records every modern group type has change a group, the same for a
# heartbeat's working copy, a live replay and loading


def apply_member(group: ModernGroup[Any, Any], key: MemberKey, metadata: Any) -> None:
    if metadata is None:
        group.members.pop(key.member, None)
        return
    known = group.members.get(key.member) or group.new_member(key.member)
    group.members[key.member] = with_fields(known, metadata)


def apply_current(group: ModernGroup[Any, Any], key: MemberKey, current: Any) -> None:
    known = group.members.get(key.member)
    if current is None:
        if known is not None:
            group.members[key.member] = group.unassigned(known)
        return
    group.members[key.member] = group.with_current(known or group.new_member(key.member), current)


def apply_target(group: ModernGroup[Any, A], key: MemberKey, target: A | None) -> None:
    if target is None:
        group.target.pop(key.member, None)
    else:
        group.target[key.member] = target


def apply_target_epoch(group: ModernGroup[Any, Any], key: GroupKey, epoch: int | None) -> None:
    group.assignment_epoch = epoch if epoch is not None else 0


@dataclass(frozen=True)
class ModernRecords:
    """The record types of one modern group type, as its part of the shard uses them
    (modern_groups.py): the group's own record whose tombstone drops the group, a
    member's records and the group's own, each in the order Kafka deletes them."""

    group: AnyRecordType[Any]
    member_gone: tuple[AnyRecordType[Any], ...]
    group_gone: tuple[AnyRecordType[Any], ...]

    def _applied_by(self, apply: Callable[..., None]) -> AnyRecordType[Any]:
        return next(t for t in self.member_gone if t.apply is apply)

    @functools.cached_property
    def member(self) -> AnyRecordType[Any]:
        return self._applied_by(apply_member)

    @functools.cached_property
    def target(self) -> AnyRecordType[Any]:
        return self._applied_by(apply_target)

    @functools.cached_property
    def current(self) -> AnyRecordType[Any]:
        return self._applied_by(apply_current)


def replay_in(part: Callable[[Any], Any]) -> Callable[[Any, Any, Any, Any, int, int], None]:
    """The replay of a modern type's records into `part(shard)`, the shard's part that
    holds the groups of that type (see ModernGroups.replay)."""

    return lambda shard, record_type, key, value, offset, pid: part(shard).replay(
        record_type, key, value
    )
