"""FetchSnapshot (59), v0-v1, on the controller listener: a piece of a snapshot of the
metadata log, for a follower or a broker whose Fetch fell below the log's start (the
Fetch answer named the snapshot). The leader serves it, from `position`, at most
`max_bytes`; a snapshot it does not hold is SNAPSHOT_NOT_FOUND, a position past its end
POSITION_OUT_OF_RANGE."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kio.schema.fetch_snapshot.v0.request import FetchSnapshotRequest as V0
from kio.schema.fetch_snapshot.v1.request import FetchSnapshotRequest as V1

from odradek.broker.cluster.quorum import snapshots
from odradek.broker.cluster.quorum.snapshots import SnapshotId
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.quorum_common import partition_error, quorum_of, refusal
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 1
FetchSnapshotRequest = V0 | V1


async def handle(ctx: RequestContext, request: FetchSnapshotRequest) -> Reply:
    refused = refusal(ctx, request.cluster_id)
    if refused is not None:
        return {"throttle_time": 0, "error_code": refused, "topics": []}
    quorum = quorum_of(ctx)
    budget = max(int(request.max_bytes), 0)
    topics = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            wanted = SnapshotId(int(p.snapshot_id.end_offset), int(p.snapshot_id.epoch))
            answer: dict[str, Any] = {
                "index": p.partition,
                "error_code": ErrorCode.none,
                "snapshot_id": {"end_offset": wanted.end_offset, "epoch": wanted.epoch},
                "current_leader": {
                    "leader_id": quorum.leader_id,
                    "leader_epoch": quorum.leader_epoch,
                },
                "size": 0,
                "position": int(p.position),
                "unaligned_records": b"",
            }
            code = partition_error(topic.name, p.partition)
            if code is None and not quorum.is_leader:
                code = ErrorCode.not_leader_or_follower
            directory = Path(quorum.partition.log.directory)
            if code is None and wanted not in snapshots.listed(directory):
                code = ErrorCode.snapshot_not_found
            if code is None:
                size = snapshots.size(directory, wanted)
                if not 0 <= p.position <= size:
                    code = ErrorCode.position_out_of_range
                else:
                    piece = snapshots.chunk(directory, wanted, int(p.position), budget)
                    budget -= len(piece)
                    answer.update(size=size, unaligned_records=piece)
            answer["error_code"] = code or ErrorCode.none
            partitions.append(answer)
        topics.append({"name": topic.name, "partitions": partitions})
    return {"throttle_time": 0, "error_code": ErrorCode.none, "topics": topics}
