"""One streams group member's next step towards its target assignment, as Kafka's
CurrentAssignmentBuilder takes it.

A member first gives up what moves away (UNREVOKED_TASKS, at its old epoch, until a
heartbeat shows it no longer owns those tasks), then takes its target at the target
epoch, except the tasks some process still holds (UNRELEASED_TASKS until they are
free): an active task while any member runs it, a standby or warm-up while another
member of the same process holds that task. A standby or warm-up the member already
holds changes its role at once; an active task it gives up may stay as its standby.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from odradek.coordinator.group.streams import (
    STABLE,
    UNKNOWN,
    UNRELEASED_TASKS,
    UNREVOKED_TASKS,
    Owners,
    StreamsMember,
)
from odradek.coordinator.group.streams_records import AssignedTasks, TargetTasks, Tasks

TaskKey = tuple[str, int]


class UnknownMemberState(Exception):
    """A member whose state the coordinator does not know must rejoin."""


def owns_any(owned: AssignedTasks | None, tasks: AssignedTasks) -> bool:
    """Has the member not yet released any of `tasks`? Not saying (None) counts as yes."""
    if owned is None:
        return True
    return (
        _overlaps(owned.active_ids(), tasks.active_ids())
        or _overlaps(owned.standby, tasks.standby)
        or _overlaps(owned.warmup, tasks.warmup)
    )


def _overlaps(a: Tasks, b: Tasks) -> bool:
    return any(parts & b.get(sub, frozenset()) for sub, parts in a.items())


def reconcile(
    member: StreamsMember,
    target_epoch: int,
    target: TargetTasks,
    owners: Owners,
    owned: AssignedTasks | None,
) -> StreamsMember:
    step = _Step(member, target_epoch, target, owners, owned)
    if member.state == STABLE:
        if member.member_epoch != target_epoch:
            return step.next(member.member_epoch)
        return member
    if member.state == UNREVOKED_TASKS:
        if owns_any(owned, member.pending_revocation):
            return member
        return step.next(member.member_epoch + 1)
    if member.state == UNRELEASED_TASKS:
        return step.next(member.member_epoch)
    if member.state == UNKNOWN and owned is not None and owned.is_empty():
        return step.next(target_epoch)
    raise UnknownMemberState


class _Step:
    def __init__(
        self,
        member: StreamsMember,
        target_epoch: int,
        target: TargetTasks,
        owners: Owners,
        owned: AssignedTasks | None,
    ) -> None:
        self.member, self.target_epoch, self.target = member, target_epoch, target
        self.owners, self.owned = owners, owned
        self.process = member.process_id

    # which tasks of the target another member still holds
    def _held_elsewhere(
        self, holders: Mapping[TaskKey, set[str]], mine: Tasks, key: TaskKey
    ) -> bool:
        return self.process in holders.get(key, ()) and key[1] not in mine.get(key[0], ())

    def _unreleased_active(self, key: TaskKey) -> bool:
        held = self.member.assigned
        return (
            self.owners.active.get(key) is not None
            or self._held_elsewhere(self.owners.standby, held.standby, key)
            or self._held_elsewhere(self.owners.warmup, held.warmup, key)
        )

    def _unreleased_standby(self, key: TaskKey) -> bool:
        held = self.member.assigned
        run_here = self.owners.active.get(key) == self.process and key[1] not in held.active.get(
            key[0], {}
        )
        return (
            run_here
            or self.process in self.owners.standby.get(key, ())
            or self._held_elsewhere(self.owners.warmup, held.warmup, key)
        )

    def _unreleased_warmup(self, key: TaskKey) -> bool:
        held = self.member.assigned
        return (
            self.owners.active.get(key) == self.process
            or self._held_elsewhere(self.owners.standby, held.standby, key)
            or self.process in self.owners.warmup.get(key, ())
        )

    def next(self, member_epoch: int) -> StreamsMember:
        held, target, epoch = self.member.assigned, self.target, self.target_epoch
        active_keep: dict[str, dict[int, int]] = {}
        active_revoke: dict[str, dict[int, int]] = {}
        active_take: dict[str, dict[int, int]] = {}
        unreleased = False
        for sub in set(target.active) | set(held.active):
            current = held.active.get(sub, {})
            wanted = target.active.get(sub, frozenset())
            kept = {p: e for p, e in current.items() if p in wanted}
            revoked = {p: e for p, e in current.items() if p not in kept}
            wanted_now = {p: epoch for p in wanted if p not in kept}
            free = {p: e for p, e in wanted_now.items() if not self._unreleased_active((sub, p))}
            unreleased |= len(free) < len(wanted_now)
            for into, part in ((active_keep, kept), (active_revoke, revoked), (active_take, free)):
                if part:
                    into[sub] = part
        standby = _difference(held.standby, target.standby, self._unreleased_standby)
        warmup = _difference(held.warmup, target.warmup, self._unreleased_warmup)
        unreleased |= standby.unreleased or warmup.unreleased
        s_keep, s_revoke, s_take = standby.keep, standby.revoke, standby.take
        w_keep, w_revoke, w_take = warmup.keep, warmup.revoke, warmup.take
        # an active task given up that is to become a standby here is one at once
        for sub, epochs in held.active.items():
            for p in epochs:
                if p in s_take.get(sub, ()):
                    _move(s_take, s_keep, sub, p)
        # a standby that is to become a warm-up here, or the reverse, changes role at once
        for outgoing, out_revoke, incoming, incoming_keep in (
            (held.standby, s_revoke, w_take, w_keep),
            (held.warmup, w_revoke, s_take, s_keep),
        ):
            for sub, parts in outgoing.items():
                for p in parts:
                    if p in incoming.get(sub, ()):
                        _move(incoming, incoming_keep, sub, p)
                        _discard(out_revoke, sub, p)
        # a standby or warm-up that is to become active is not revoked: it stays until
        # the active task is granted
        for tasks, revoke in ((held.standby, s_revoke), (held.warmup, w_revoke)):
            for sub, parts in tasks.items():
                for p in parts:
                    if p in target.active.get(sub, ()):
                        _discard(revoke, sub, p)
        pending = AssignedTasks(active_revoke, _frozen(s_revoke), _frozen(w_revoke))
        revoking = not pending.is_empty() and owns_any(self.owned, pending)
        for tasks, keep in ((held.standby, s_keep), (held.warmup, w_keep)):
            for sub, parts in tasks.items():
                for p in parts:
                    promoted = not revoking and p in active_take.get(sub, {})
                    if p in target.active.get(sub, ()) and not promoted:
                        keep.setdefault(sub, set()).add(p)
        if revoking:
            assigned = AssignedTasks(active_keep, _frozen(s_keep), _frozen(w_keep))
            return self._moved(member_epoch, UNREVOKED_TASKS, assigned, pending)
        for sub, epochs in active_take.items():
            active_keep[sub] = {**active_keep.get(sub, {}), **epochs}
        for take, grown in ((s_take, s_keep), (w_take, w_keep)):
            for sub, taken in take.items():
                grown.setdefault(sub, set()).update(taken)
        assigned = AssignedTasks(active_keep, _frozen(s_keep), _frozen(w_keep))
        state = UNRELEASED_TASKS if unreleased else STABLE
        return self._moved(epoch, state, assigned, AssignedTasks())

    def _moved(
        self, epoch: int, state: int, assigned: AssignedTasks, pending: AssignedTasks
    ) -> StreamsMember:
        return dataclasses.replace(
            self.member,
            member_epoch=epoch,
            previous_member_epoch=self.member.member_epoch,
            state=state,
            assigned=assigned,
            pending_revocation=pending,
        )


@dataclasses.dataclass
class _Difference:
    keep: dict[str, set[int]]
    revoke: dict[str, set[int]]
    take: dict[str, set[int]]
    unreleased: bool


def _difference(
    current: Tasks, target: Tasks, unreleased_task: Callable[[TaskKey], bool]
) -> _Difference:
    result = _Difference({}, {}, {}, False)
    for sub in set(current) | set(target):
        held, wanted = current.get(sub, frozenset()), target.get(sub, frozenset())
        keep, revoke = set(held & wanted), set(held - wanted)
        take = {p for p in wanted - held if not unreleased_task((sub, p))}
        result.unreleased |= len(take) < len(wanted - held)
        for into, part in ((result.keep, keep), (result.revoke, revoke), (result.take, take)):
            if part:
                into[sub] = part
    return result


def _move(source: dict[str, set[int]], into: dict[str, set[int]], sub: str, p: int) -> None:
    _discard(source, sub, p)
    into.setdefault(sub, set()).add(p)


def _discard(tasks: dict[str, set[int]], sub: str, p: int) -> None:
    parts = tasks.get(sub)
    if parts is not None and p in parts:
        parts.discard(p)
        if not parts:
            del tasks[sub]


def _frozen(tasks: dict[str, set[int]]) -> dict[str, frozenset[int]]:
    return {sub: frozenset(parts) for sub, parts in tasks.items() if parts}
