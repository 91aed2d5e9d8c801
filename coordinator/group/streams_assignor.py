"""The streams groups' task assignor ("sticky"), after Kafka's StickyTaskAssignor.

Each subtopology has as many tasks as its largest source topic has partitions. Active
tasks go first to the member that ran them (while it is under its share: the tasks
over the members, rounded up), then to a member that kept a standby of them, then
each to the least loaded process (tasks over its members), and there to its least
loaded member. With standby replicas (the group's `streams.num.standby.replicas`),
each task of a stateful subtopology also gets that many standbys, never on a process
that already has the task: first where it ran or had a standby, then on the least
loaded processes.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from odradek.coordinator.group.streams_records import TargetTasks, Tasks

TaskId = tuple[str, int]  # subtopology id, partition


@dataclass(frozen=True)
class MemberSpec:
    process_id: str
    active: Tasks
    standby: Tasks
    # offsets of changelogs the member reported for tasks it holds state of
    task_offsets: Mapping[TaskId, int] = field(default_factory=dict)


@dataclass(frozen=True)
class SubtopologySpec:
    tasks: int
    stateful: bool


def _per_member(tasks: int, members: int) -> int:
    return 0 if members == 0 else -(-tasks // members)


class _Process:
    def __init__(self, process_id: str) -> None:
        self.process_id = process_id
        self.counts: dict[str, int] = {}  # member -> tasks it has (active and standby)
        self.active: dict[str, set[TaskId]] = {}
        self.standby: dict[str, set[TaskId]] = {}
        self.tasks: set[TaskId] = set()

    @property
    def load(self) -> float:
        return sum(self.counts.values()) / len(self.counts) if self.counts else -1.0

    def add(self, member: str, task: TaskId, active: bool) -> int:
        self.tasks.add(task)
        (self.active if active else self.standby).setdefault(member, set()).add(task)
        self.counts[member] += 1
        return self.counts[member]

    def add_to_least_loaded(self, task: TaskId, active: bool) -> int:
        member = min(self.counts, key=lambda m: (self.counts[m], m))
        return self.add(member, task, active)


class _State:
    def __init__(
        self,
        members: Mapping[str, MemberSpec],
        subtopologies: Mapping[str, SubtopologySpec],
        standbys: int,
    ) -> None:
        self.standbys = standbys
        self.active_left = sum(s.tasks for s in subtopologies.values())
        self.total_left = self.active_left + sum(
            s.tasks * standbys for s in subtopologies.values() if s.stateful
        )
        self.members_active = self.members_total = len(members)
        self.active_quota = _per_member(self.active_left, self.members_active)
        self.total_quota = _per_member(self.total_left, self.members_total)
        self.processes: dict[str, _Process] = {}
        self.member_process: dict[str, _Process] = {}
        self.prev_active: dict[TaskId, str] = {}
        candidates: dict[TaskId, list[tuple[int, int, str]]] = {}
        for member_id in sorted(members):
            spec = members[member_id]
            process = self.processes.setdefault(spec.process_id, _Process(spec.process_id))
            process.counts[member_id] = 0
            self.member_process[member_id] = process
            for sub, parts in spec.active.items():
                for p in parts:
                    self.prev_active[(sub, p)] = member_id
            for sub, parts in spec.standby.items():
                for p in parts:
                    offset = spec.task_offsets.get((sub, p), 0)
                    candidates.setdefault((sub, p), []).append((0, -offset, member_id))
            for task, offset in spec.task_offsets.items():
                if task[1] not in spec.standby.get(task[0], ()):
                    candidates.setdefault(task, []).append((1, -offset, member_id))
        # members that held a standby first, then the most caught up
        self.prev_standby = {
            task: [m for _, _, m in sorted(found, key=lambda c: (c[0], c[1]))]
            for task, found in candidates.items()
        }

    def counted(self, count: int, active: bool) -> None:
        if active and count == self.active_quota:
            self.members_active -= 1
            self.active_left -= count
            self.active_quota = _per_member(self.active_left, self.members_active)
        if count == self.total_quota:
            self.members_total -= 1
            self.total_left -= count
            self.total_quota = _per_member(self.total_left, self.members_total)

    def least_loaded_previous(self, members: list[str] | None, task: TaskId | None) -> str | None:
        candidate = None
        process_load = member_load = float("inf")
        for member in members or ():
            process = self.member_process[member]
            if task is not None and task in process.tasks:
                continue
            load, count = process.load, process.counts[member]
            if candidate is None or (load < process_load and count < member_load):
                candidate, process_load, member_load = member, load, count
        return candidate


def assign(
    members: Mapping[str, MemberSpec],
    subtopologies: Mapping[str, SubtopologySpec],
    standbys: int,
) -> dict[str, TargetTasks]:
    """member id -> its target active and standby tasks."""
    state = _State(members, subtopologies, standbys)
    tasks = [(sub, p) for sub in sorted(subtopologies) for p in range(subtopologies[sub].tasks)]
    _assign_active(state, tasks)
    if standbys > 0:
        stateful = [(s, p) for s, p in tasks if subtopologies[s].stateful]
        _assign_standby(state, stateful)
    result = {}
    for member_id, process in state.member_process.items():
        result[member_id] = TargetTasks(
            _compact(process.active.get(member_id, set())),
            _compact(process.standby.get(member_id, set())),
            {},
        )
    return result


def _compact(tasks: set[TaskId]) -> dict[str, frozenset[int]]:
    found: dict[str, set[int]] = {}
    for sub, p in tasks:
        found.setdefault(sub, set()).add(p)
    return {sub: frozenset(parts) for sub, parts in found.items()}


def _assign_active(state: _State, tasks: list[TaskId]) -> None:
    left = sorted(tasks, key=lambda t: (t[1], t[0]))
    for previous in (
        lambda task: state.prev_active.get(task),
        lambda task: state.least_loaded_previous(state.prev_standby.get(task), None),
    ):
        remaining = []
        for task in left:
            member = previous(task)
            process = state.member_process.get(member) if member is not None else None
            if member is None or process is None or process.counts[member] >= state.active_quota:
                remaining.append(task)
                continue
            state.counted(process.add(member, task, True), True)
        left = remaining
    heap = _Heap(state.processes.values())
    for task in sorted(left):
        process = heap.pop()
        state.counted(process.add_to_least_loaded(task, True), True)
        heap.push(process)


def _assign_standby(state: _State, tasks: list[TaskId]) -> None:
    to_least_loaded: list[tuple[TaskId, int]] = []
    for task in sorted(tasks, key=lambda t: (t[1], t[0]), reverse=True):
        placed = 0
        while placed < state.standbys:
            member = state.prev_active.get(task)
            process = state.member_process.get(member) if member is not None else None
            if (
                member is not None
                and process is not None
                and task not in process.tasks
                and process.counts[member] < state.total_quota
            ):
                state.counted(process.add(member, task, False), False)
                placed += 1
                continue
            member = state.least_loaded_previous(state.prev_standby.get(task), task)
            if member is None:
                break
            process = state.member_process[member]
            if process.counts[member] >= state.total_quota:
                break
            state.counted(process.add(member, task, False), False)
            placed += 1
        if placed < state.standbys:
            to_least_loaded.append((task, state.standbys - placed))
    heap = _Heap(state.processes.values())
    for task, replicas in sorted(to_least_loaded, reverse=True):
        for _ in range(replicas):
            if not _standby_to_least_loaded(state, heap, task):
                break  # not enough processes for every replica


def _standby_to_least_loaded(state: _State, heap: _Heap, task: TaskId) -> bool:
    tried = []
    found = False
    while heap:
        process = heap.pop()
        tried.append(process)
        if task not in process.tasks:
            state.counted(process.add_to_least_loaded(task, False), False)
            found = True
            break
    for process in tried:
        heap.push(process)
    return found


class _Heap:
    """Processes by load; ties go to the one added first."""

    def __init__(self, processes: Iterable[_Process]) -> None:
        self.items: list[tuple[float, int, _Process]] = []
        self.order: dict[str, int] = {}
        for n, process in enumerate(sorted(processes, key=lambda p: p.process_id)):
            self.order[process.process_id] = n
            self.push(process)

    def __bool__(self) -> bool:
        return bool(self.items)

    def push(self, process: _Process) -> None:
        heapq.heappush(self.items, (process.load, self.order[process.process_id], process))

    def pop(self) -> _Process:
        return heapq.heappop(self.items)[2]
