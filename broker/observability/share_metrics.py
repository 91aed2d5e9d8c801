"""The share groups' figures on /metrics: open sessions, records in flight, lock
timeouts, groups by state."""

from __future__ import annotations

from typing import TYPE_CHECKING

from odradek.broker.observability import metrics

if TYPE_CHECKING:
    from odradek.broker.coordinators.share import ShareCoordinator
    from odradek.coordinator.runtime import CoordinatorRuntime


def collector(share: ShareCoordinator, groups: CoordinatorRuntime) -> metrics.StateCollector:
    def share_groups() -> dict[str, int]:
        states: dict[str, int] = {}
        for runtime in list(groups.shards.values()):
            for group in list(runtime.shard.share.groups.values()):
                states[group.state] = states.get(group.state, 0) + 1
        return states

    return metrics.StateCollector(
        gauges={
            "odradek_share_sessions": (
                "Open share sessions",
                lambda: float(len(share.sessions.sessions)),
            ),
            "odradek_share_in_flight_records": (
                "Records between the start and end offsets of the share-partitions",
                share.in_flight_records,
            ),
        },
        counters={
            "odradek_share_acquisition_lock_timeouts": (
                "Acquisition locks that ran out with records still held",
                share.lock_timeouts,
            ),
        },
        by_label={"odradek_share_groups": ("Share groups by state", "state", share_groups)},
    )
