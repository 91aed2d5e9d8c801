"""Fetch (1) on the controller listener: the metadata log, read as KRaft's quorum
serves it (broker/cluster/quorum/quorum.py).

- Only the quorum's leader answers; another controller answers NOT_LEADER_OR_FOLLOWER
  with the leader and epoch it knows (`current_leader`), and a fetch naming an older
  or newer epoch than the leader's FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH.
- A fetch whose last record's epoch the leader's log does not end the same way is
  told where the two logs part (`diverging_epoch`) and gets no records: the fetcher
  cuts its log back there and fetches again.
- A voting controller reads to the log end, and its fetch offset counts towards the
  high watermark; a broker reads up to the high watermark only.
- Long poll as any Fetch: up to `max_wait` for more to read.
- Any other topic or partition: UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from odradek.broker.cluster.controller import METADATA_TOPIC
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.fetch import MAX_VERSION, MIN_VERSION, FetchRequest, replica_id_of
from odradek.protocol.errors import ErrorCode
from odradek.storage import OffsetOutOfRange

__all__ = ["MAX_VERSION", "MIN_VERSION", "handle"]


def _answer(index: int, code: ErrorCode = ErrorCode.none) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": code,
        "high_watermark": -1,
        "last_stable_offset": -1,
        "log_start_offset": -1,
        "aborted_transactions": None,
        "preferred_read_replica": -1,
        "records": b"",
    }


async def handle(ctx: RequestContext, request: FetchRequest) -> Reply:
    controller = ctx.services.controller
    replica_id = replica_id_of(request)
    deadline = time.monotonic() + request.max_wait.total_seconds()
    responses = []
    for topic in request.topics:
        name = getattr(topic, "topic", None)
        partitions = []
        for p in topic.partitions:
            if controller is None or name != METADATA_TOPIC or p.partition != 0:
                partitions.append(_answer(p.partition, ErrorCode.unknown_topic_or_partition))
                continue
            partitions.append(await _metadata(controller, replica_id, p, deadline))
        responses.append(
            {"topic": name, "topic_id": getattr(topic, "topic_id", None), "partitions": partitions}
        )
    return {"throttle_time": 0, "error_code": 0, "session_id": 0, "responses": responses}


async def _metadata(controller: Any, replica_id: int, p: Any, deadline: float) -> dict[str, Any]:
    quorum = controller.quorum
    partition = quorum.partition
    while True:
        answer = _answer(0)
        check = quorum.check_fetch(
            replica_id,
            getattr(p, "current_leader_epoch", -1),
            p.fetch_offset,
            getattr(p, "last_fetched_epoch", -1),
        )
        answer["current_leader"] = {
            "leader_id": quorum.leader_id,
            "leader_epoch": quorum.leader_epoch,
        }
        if check.error != ErrorCode.none:
            answer["error_code"] = check.error
            return answer
        if check.read_to is not None and replica_id >= 0:  # an observing controller
            controller.observed(replica_id, p.fetch_offset - 1)
        plog = partition.log
        answer["high_watermark"] = answer["last_stable_offset"] = quorum.high_watermark
        answer["log_start_offset"] = plog.log_start_offset
        if check.snapshot is not None:  # below the log's start: the snapshot first
            answer["snapshot_id"] = {
                "end_offset": check.snapshot.end_offset,
                "epoch": check.snapshot.epoch,
            }
            return answer
        if check.diverging is not None:
            answer["diverging_epoch"] = {
                "epoch": check.diverging.epoch,
                "end_offset": check.diverging.offset,
            }
            return answer
        try:
            piece = plog.read(
                p.fetch_offset,
                p.partition_max_bytes,
                max_offset=check.read_to,
                min_one=True,
                partial_tail=False,
            )
        except OffsetOutOfRange:
            answer["error_code"] = ErrorCode.offset_out_of_range
            return answer
        remaining = deadline - time.monotonic()
        if piece is not None or remaining <= 0:
            if piece is not None:
                answer["records"] = piece
            return answer
        voter = check.read_to is None
        await asyncio.wait([partition.arrival(voter)], timeout=remaining)
