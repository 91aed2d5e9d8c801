"""The broker-wide gauges the metrics endpoint reads when it is scraped: partitions, log
bytes, and the share coordinator's sessions, records in flight, lock time-outs and
groups by state."""

from __future__ import annotations

from typing import TYPE_CHECKING

from odradek.broker.observability import metrics

if TYPE_CHECKING:
    from odradek.broker.coordinators.share import ShareCoordinator
    from odradek.broker.dataplane.topics import TopicRegistry
    from odradek.coordinator.runtime import CoordinatorRuntime


def watch(topics: TopicRegistry, groups: CoordinatorRuntime, share: ShareCoordinator) -> None:
    metrics.partitions.set_function(lambda: float(sum(len(t.partitions) for t in topics)))
    metrics.log_size.set_function(
        lambda: float(sum(p.log.size_bytes() for p in topics.hosted_partitions()))
    )

    def share_groups() -> dict[str, int]:
        states: dict[str, int] = {}
        for runtime in list(groups.shards.values()):
            for group in list(runtime.shard.share.groups.values()):
                states[group.state] = states.get(group.state, 0) + 1
        return states

    metrics.read_state_with(
        metrics.StateCollector(
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
    )
