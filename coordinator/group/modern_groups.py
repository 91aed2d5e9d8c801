"""The part of a group shard that holds the groups of one modern type (consumer, share
or streams groups), with what every modern type does the same way: replaying its
records, refusing a heartbeat with an error and its message, removing a member and
writing a new target on a heartbeat's working copy of a group, the members' session
timers, and the records that delete a group.

Each type is a subclass (consumer_groups.py, share_groups.py, streams_groups.py) that
gives its heartbeat and what the other group APIs ask of its groups: who may commit
and fetch their offsets, which topics they read, how DescribeGroups-like requests
show them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from odradek.coordinator.group.context import ShardContext
from odradek.coordinator.group.heartbeat_errors import HeartbeatError
from odradek.coordinator.group.modern import ModernGroup, ModernRecords
from odradek.coordinator.group.record_codecs import GroupKey, MemberKey
from odradek.coordinator.group.record_types import emit
from odradek.coordinator.registry import AnyRecordType
from odradek.coordinator.runtime import Record, Result
from odradek.protocol.errors import ErrorCode

G = TypeVar("G", bound=ModernGroup[Any, Any])


class ModernGroups(Generic[G]):
    kind: str  # as ListGroups names the type
    types: ModernRecords
    session_timer: str  # a member's session timer is "<this>:<group>:<member>"
    has_offsets = True  # may the groups commit offsets?

    def __init__(self, context: ShardContext) -> None:
        self.context = context
        self.groups: dict[str, G] = {}

    def new_group(self, group_id: str) -> G:
        raise NotImplementedError

    # -- replay ------------------------------------------------------------------

    def replay(
        self, record_type: AnyRecordType[Any], key: GroupKey | MemberKey, value: object
    ) -> bool:
        """One record into its group, which the group's first record makes and the
        tombstone of its own record drops. Whether the record made the group."""
        group = self.groups.get(key.group)
        made = group is None
        if group is None:
            if value is None:
                return False
            group = self.groups[key.group] = self.new_group(key.group)
        record_type.apply(group, key, value)
        if value is None:
            if record_type is self.types.group:
                del self.groups[key.group]
                self._forget(key.group)
            elif isinstance(key, MemberKey) and record_type is self.types.member:
                self._forget_member(key.group, key.member)
        return made

    def _forget(self, group_id: str) -> None:
        """The group is gone: drop what is kept of it beside its records."""

    def _forget_member(self, group_id: str, member_id: str) -> None:
        """The member is gone: drop what is kept of it beside its records."""

    # -- heartbeats --------------------------------------------------------------

    def heartbeat(self, request: dict[str, Any]) -> Result[dict[str, Any]]:
        try:
            return self._heartbeat(request)
        except HeartbeatError as exc:
            return Result([], {"error_code": exc.code, "error_message": str(exc)})

    def _heartbeat(self, request: dict[str, Any]) -> Result[dict[str, Any]]:
        raise NotImplementedError

    def member_tombstones(self, group_id: str, member_id: str) -> list[Record]:
        """A member's records, deleted in Kafka's order."""
        key = MemberKey(group_id, member_id)
        return [record_type.tombstone(key) for record_type in self.types.member_gone]

    def remove_member(self, group: G, member_id: str, records: list[Record]) -> None:
        """Delete a member from a heartbeat's working copy of its group."""
        for record in self.member_tombstones(group.group_id, member_id):
            emit(group, records, record)

    def _write_target(self, group: G, targets: Mapping[str, Any], records: list[Record]) -> None:
        """A new target assignment: the record of each member whose target changed."""
        for member_id, target in targets.items():
            if group.target.get(member_id) != target:
                key = MemberKey(group.group_id, member_id)
                emit(group, records, self.types.target.record(key, target))

    # -- timers ------------------------------------------------------------------

    def _arm_session(self, group_id: str, member_id: str, timeout_ms: int) -> None:
        def expire() -> Result[None]:
            return self._session_expired(group_id, member_id)

        self.context.schedule(self._session_key(group_id, member_id), timeout_ms, expire)

    def _session_key(self, group_id: str, member_id: str) -> str:
        return f"{self.session_timer}:{group_id}:{member_id}"

    def _session_expired(self, group_id: str, member_id: str) -> Result[None]:
        raise NotImplementedError

    def on_loaded(self) -> None:
        for group in self.groups.values():
            for member in group.members.values():
                self.arm_timers(group, member)

    def arm_timers(self, group: G, member: Any) -> None:
        """A member's timers, as its last heartbeat (or the log) left it."""
        raise NotImplementedError

    # -- what the other group APIs ask ---------------------------------------------

    def tombstones(self, group: G) -> list[Record]:
        """Every record of the group, deleted in Kafka's order: its members' first and
        its own last (the last one drops it on replay)."""
        group_id, types = group.group_id, self.types
        records = [
            record_type.tombstone(MemberKey(group_id, m))
            for m in group.members
            for record_type in (types.current, types.member)
        ]
        records += [types.target.tombstone(MemberKey(group_id, m)) for m in group.target]
        records += [record_type.tombstone(GroupKey(group_id)) for record_type in types.group_gone]
        return records

    def described(self, group: G) -> dict[str, Any]:
        raise NotImplementedError

    # of groups with offsets (has_offsets):

    def commit_error(self, group: G, request: dict[str, Any]) -> ErrorCode:
        """Why these offsets may not be committed (none: they may). `request` as
        GroupShard.commit_offsets takes it."""
        raise NotImplementedError

    def fetch_error(self, group: G, member_id: str | None, epoch: int) -> ErrorCode:
        """Why the member (as OffsetFetch v9+ names it) may not fetch the offsets."""
        raise NotImplementedError

    def subscribed_topics(self, group: G) -> set[str]:
        """The topics whose offsets OffsetDelete may not delete."""
        raise NotImplementedError
