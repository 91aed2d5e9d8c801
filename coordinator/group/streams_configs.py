"""What a streams group's configs mean to its assignment, and the changelog offsets its
members report, as Kafka 4.4 keeps them.

Assignment configs are the ones whose change makes a new target assignment: the number
of standby replicas and, when set, the rack-aware assignment tags (Kafka writes both in
the group's metadata record). The warm-up configs (`streams.num.warmup.replicas`,
`streams.acceptable.recovery.lag`) change nothing: Kafka 4.4's assignment refiner
returns the target as it is, so no member is ever given a warm-up task, and its sticky
assignor places standbys without regard to racks or tags.

Task offsets and task end offsets are kept per member in memory only, as Kafka keeps
them (not in records: after a restart the group has none until members report again).
A report replaces the member's previous one of the same kind; StreamsGroupDescribe
shows both, and the assignor prefers the most caught-up members for standbys.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from odradek.coordinator.group.heartbeat_errors import HeartbeatError
from odradek.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from odradek.coordinator.group.context import GroupTimeouts

TaskOffsets = dict[tuple[str, int], int]  # (subtopology, partition) -> offset


def assignment_configs(settings: GroupTimeouts) -> tuple[tuple[str, str], ...]:
    configs = [("num.standby.replicas", str(settings.streams_num_standby_replicas))]
    tags = settings.streams_rack_aware_assignment_tags
    if tags:
        configs.append(("rack.aware.assignment.tags", ",".join(tags)))
    return tuple(sorted(configs))


@dataclass(frozen=True)
class MemberTaskOffsets:
    offsets: TaskOffsets = field(default_factory=dict)
    end_offsets: TaskOffsets = field(default_factory=dict)

    def update(
        self,
        offsets: Iterable[tuple[str, int, int]] | None,
        end_offsets: Iterable[tuple[str, int, int]] | None,
    ) -> MemberTaskOffsets:
        """With a heartbeat's reports (None: that kind not reported); INVALID_REQUEST
        when one names a task twice."""
        return MemberTaskOffsets(
            self.offsets if offsets is None else _by_task(offsets),
            self.end_offsets if end_offsets is None else _by_task(end_offsets),
        )


def _by_task(reported: Iterable[tuple[str, int, int]]) -> TaskOffsets:
    offsets: TaskOffsets = {}
    for subtopology, partition, offset in reported:
        if (subtopology, partition) in offsets:
            raise HeartbeatError(
                ErrorCode.invalid_request,
                f"Task offsets contain a duplicate entry for subtopology {subtopology} "
                f"and partition {partition}.",
            )
        offsets[(subtopology, partition)] = offset
    return offsets


def described(offsets: TaskOffsets) -> list[dict[str, object]]:
    """As StreamsGroupDescribe lists them: by subtopology, then partition."""
    return [
        {"subtopology_id": s, "partition": p, "offset": o} for (s, p), o in sorted(offsets.items())
    ]
