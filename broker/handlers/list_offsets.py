"""ListOffsets (2), v1-v11.

Timestamps with special meaning:
    -2  earliest: the log start offset
    -1  latest: the high watermark, or the last stable offset under read_committed
    -3  max timestamp (v7+): the record with the largest timestamp
    -4  earliest local (v8+): the log start offset (all data is local here)
    -5  latest tiered (v9+): offset -1, as Kafka without tiered storage
    -6  earliest pending upload (v11+): offset -1, as Kafka without tiered storage
v10 adds a timeout for lookups in remote storage: nothing here waits on one.
Any other timestamp finds the first record whose timestamp is >= it, through
the time index; none (or one past the high watermark, or the last stable offset
under read_committed) answers offset -1 and timestamp -1. Other negative
timestamps, and special ones older than the request's version, are
UNSUPPORTED_VERSION; a partition asked twice is INVALID_REQUEST, answered once.

With ACLs a topic needs DESCRIBE on it: TOPIC_AUTHORIZATION_FAILED otherwise.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kio.schema.list_offsets.v1.request import ListOffsetsRequest as V1
from kio.schema.list_offsets.v2.request import ListOffsetsRequest as V2
from kio.schema.list_offsets.v3.request import ListOffsetsRequest as V3
from kio.schema.list_offsets.v4.request import ListOffsetsRequest as V4
from kio.schema.list_offsets.v5.request import ListOffsetsRequest as V5
from kio.schema.list_offsets.v6.request import ListOffsetsRequest as V6
from kio.schema.list_offsets.v7.request import ListOffsetsRequest as V7
from kio.schema.list_offsets.v8.request import ListOffsetsRequest as V8
from kio.schema.list_offsets.v9.request import ListOffsetsRequest as V9
from kio.schema.list_offsets.v10.request import ListOffsetsRequest as V10
from kio.schema.list_offsets.v11.request import ListOffsetsRequest as V11

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 1, 11

ListOffsetsRequest = V1 | V2 | V3 | V4 | V5 | V6 | V7 | V8 | V9 | V10 | V11

EARLIEST, LATEST, MAX_TIMESTAMP, EARLIEST_LOCAL = -2, -1, -3, -4
LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -5, -6
READ_COMMITTED = 1
# the first version that knows each special timestamp (Kafka's ReplicaManager)
SINCE_VERSION = {
    EARLIEST: 1,
    LATEST: 1,
    MAX_TIMESTAMP: 7,
    EARLIEST_LOCAL: 8,
    LATEST_TIERED: 9,
    EARLIEST_PENDING_UPLOAD: 11,
}


def _answer(
    index: int, code: ErrorCode, timestamp: int = -1, offset: int = -1, leader_epoch: int = -1
) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": code,
        "timestamp": timestamp,
        "offset": offset,
        "leader_epoch": leader_epoch,
        "old_style_offsets": [offset] if offset >= 0 else [],
    }


def _unsupported(timestamp: int, version: int) -> bool:
    return timestamp < 0 and version < SINCE_VERSION.get(timestamp, 1 << 15)


async def handle(ctx: RequestContext, request: ListOffsetsRequest) -> Reply:
    isolation = getattr(request, "isolation_level", 0)
    asked = Counter((t.name, p.partition_index) for t in request.topics for p in t.partitions)
    topics = []
    for topic in request.topics:
        answers = []
        if not ctx.allowed(Operation.DESCRIBE, ResourceType.TOPIC, topic.name):
            code = ErrorCode.topic_authorization_failed
            answers = [_answer(p.partition_index, code) for p in topic.partitions]
            topics.append({"name": topic.name, "partitions": answers})
            continue
        for p in topic.partitions:
            times = asked[(topic.name, p.partition_index)]
            if times > 1:
                asked[(topic.name, p.partition_index)] = 0  # the one answer given
                answers.append(_answer(p.partition_index, ErrorCode.invalid_request))
                continue
            if times == 0:
                continue
            if _unsupported(p.timestamp, ctx.version):
                answers.append(_answer(p.partition_index, ErrorCode.unsupported_version))
                continue
            partition = ctx.services.topics.partition(topic.name, p.partition_index)
            if partition is None:
                answers.append(_answer(p.partition_index, ErrorCode.unknown_topic_or_partition))
                continue
            if not partition.led_here:
                answers.append(_answer(p.partition_index, partition.unavailable_error))
                continue
            epoch = getattr(p, "current_leader_epoch", -1)
            leader_epoch = partition.leader_epoch
            if epoch > leader_epoch:
                answers.append(_answer(p.partition_index, ErrorCode.unknown_leader_epoch))
                continue
            if 0 <= epoch < leader_epoch:
                answers.append(_answer(p.partition_index, ErrorCode.fenced_leader_epoch))
                continue
            log = partition.log
            ok = ErrorCode.none
            if isolation == READ_COMMITTED:
                fetchable = ctx.services.last_stable_offset(partition)
            else:
                fetchable = partition.high_watermark
            if p.timestamp in (EARLIEST, EARLIEST_LOCAL):
                answers.append(
                    _answer(p.partition_index, ok, -1, log.log_start_offset, leader_epoch)
                )
            elif p.timestamp == LATEST:
                answers.append(_answer(p.partition_index, ok, -1, fetchable, leader_epoch))
            elif p.timestamp in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
                answers.append(_answer(p.partition_index, ok))  # nothing is tiered
            else:
                if p.timestamp == MAX_TIMESTAMP:
                    found = log.max_timestamp()
                else:
                    found = log.offset_for_timestamp(p.timestamp)
                if found is None or found[0] >= fetchable:
                    # nothing found: offset, timestamp and leader epoch all -1, as on Kafka
                    answers.append(_answer(p.partition_index, ok, leader_epoch=-1))
                else:
                    offset, timestamp = found
                    answers.append(_answer(p.partition_index, ok, timestamp, offset, leader_epoch))
        topics.append({"name": topic.name, "partitions": answers})
    return {"throttle_time": 0, "topics": topics}
