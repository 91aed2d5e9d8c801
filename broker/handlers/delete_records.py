"""DeleteRecords (21), v0-v2.

Moves a partition's log start offset up to the given offset (-1 means the
high watermark); whole segments below it are removed. An offset above the
high watermark is OFFSET_OUT_OF_RANGE. Answers the new low watermark. A topic that
is compacted and not deleted (cleanup.policy=compact) keeps its records:
POLICY_VIOLATION, as Kafka answers. With ACLs a topic needs DELETE on it:
TOPIC_AUTHORIZATION_FAILED otherwise.
"""

from __future__ import annotations

from kio.schema.delete_records.v2.request import DeleteRecordsRequest

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 2
# v0-v2 have the same fields: typed as the newest

HIGH_WATERMARK = -1


async def handle(ctx: RequestContext, request: DeleteRecordsRequest) -> Reply:
    topics = []
    for topic in request.topics:
        answers = []
        deletable = ctx.allowed(Operation.DELETE, ResourceType.TOPIC, topic.name)
        for p in topic.partitions:
            answer = {"partition_index": p.partition_index, "low_watermark": -1, "error_code": 0}
            partition = ctx.services.topics.partition(topic.name, p.partition_index)
            if not deletable:
                answer["error_code"] = ErrorCode.topic_authorization_failed
            elif partition is None:
                answer["error_code"] = ErrorCode.unknown_topic_or_partition
            elif not partition.led_here:
                answer["error_code"] = partition.unavailable_error
            else:
                log = partition.log
                high_watermark = partition.high_watermark
                offset = high_watermark if p.offset == HIGH_WATERMARK else p.offset
                if log.config.compacts and not log.config.deletes:
                    answer["error_code"] = ErrorCode.policy_violation
                elif not 0 <= offset <= high_watermark:
                    answer["error_code"] = ErrorCode.offset_out_of_range
                else:
                    answer["low_watermark"] = log.delete_records_before(offset)
                    partition.producers.drop_below(log.log_start_offset)
            answers.append(answer)
        topics.append({"name": topic.name, "partitions": answers})
    return {"throttle_time": 0, "topics": topics}
