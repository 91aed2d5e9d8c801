"""A controller that does not lead keeps the cluster's metadata too, as Kafka's do: it
replays the committed part of the metadata log into a view of its own (the brokers'
kind, coordinator/cluster/shard.py) and its node adopts the view's documents (feature
levels, SCRAM credentials, quotas, ...). So ApiVersions and authentication on its
listener answer as the leader's would, and nothing is kept only by the leader.

It replays a bounded number of batches at a time, so that a long log does not hold
the event loop: the rest comes at the next turn."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from odradek.broker.cluster.metadata_snapshots import load_latest
from odradek.broker.cluster.metadata_view import AdoptedDocuments, AdoptsDocuments, new_view
from odradek.protocol.batch import iter_records

if TYPE_CHECKING:
    from odradek.broker.cluster.quorum.quorum import Quorum
    from odradek.broker.dataplane.topics import Partition
    from odradek.coordinator.cluster.shard import ClusterShard

log = structlog.get_logger("controller")
EVERY_S = 0.1
BATCHES_PER_TURN = 500


class FollowerView:
    def __init__(self, node: AdoptsDocuments, partition: Partition, cluster_id: str) -> None:
        self._partition = partition
        self._cluster_id = cluster_id
        self.view: ClusterShard | None = None
        self.replayed_to = 0  # the next offset to replay
        self._adopted = AdoptedDocuments(node)

    async def run(self, quorum: Quorum) -> None:
        while True:
            await asyncio.sleep(EVERY_S)
            try:
                if quorum.is_leader:
                    self.view = None  # the leader's shard is the state now
                else:
                    self.follow(quorum.high_watermark)
            except (OSError, ValueError) as exc:  # a log cut back or started over meanwhile
                log.warning("metadata view rebuilt", error=str(exc))
                self.view = None

    def follow(self, high_watermark: int) -> None:
        plog = self._partition.log
        if self.view is None or self.replayed_to < plog.log_start_offset:
            self.view = new_view(self._cluster_id)
            load_latest(self.view, Path(plog.directory), plog.log_start_offset)
            self.replayed_to = plog.log_start_offset
        if self.replayed_to >= high_watermark:
            return
        for turn, (header, batch) in enumerate(plog.iter_batches(self.replayed_to)):
            if header.base_offset >= high_watermark or turn >= BATCHES_PER_TURN:
                break
            if not header.is_control:
                for delta, key, value in iter_records(batch):
                    offset = header.base_offset + delta
                    if offset >= self.replayed_to:
                        self.view.replay(offset, key, value, -1)
            self.replayed_to = header.base_offset + header.last_offset_delta + 1
        self._adopted.follow(self.view.documents)
