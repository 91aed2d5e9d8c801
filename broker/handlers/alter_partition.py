"""AlterPartition (56), v2, on the controller listener: a partition leader changes its
ISR (a follower fell behind, or caught up again). The controller checks Kafka's
conditions in Kafka's order: the leader's broker epoch (STALE_BROKER_EPOCH), that it
still leads (NOT_LEADER_OR_FOLLOWER) at the same leader epoch (FENCED_LEADER_EPOCH)
and partition epoch (INVALID_UPDATE_VERSION), and that a replica joining is live
(INELIGIBLE_REPLICA)."""

from __future__ import annotations

from functools import partial
from typing import Any

from kio.schema.alter_partition.v2.request import AlterPartitionRequest

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.controller_common import answered_by_controller
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 2, 2


def _failed(index: int, code: int) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": code,
        "leader_id": -1,
        "leader_epoch": -1,
        "isr": [],
        "leader_recovery_state": 0,
        "partition_epoch": -1,
    }


def _alter(shard: Any, details: dict[str, Any]) -> Any:
    return shard.alter_partition(details)


async def handle(ctx: RequestContext, request: AlterPartitionRequest) -> Reply:
    controller = ctx.services.controller
    names = (
        {state.topic_id: name for name, state in controller.shard.topics.items()}
        if controller is not None
        else {}
    )
    topics = []
    for topic in request.topics:
        name = names.get(topic.topic_id) if topic.topic_id is not None else None
        partitions = []
        for p in topic.partitions:
            if name is None:
                partitions.append(_failed(p.partition_index, ErrorCode.unknown_topic_id))
                continue
            details = {
                "node_id": request.broker_id,
                "broker_epoch": request.broker_epoch,
                "topic": name,
                "partition": p.partition_index,
                "leader_epoch": p.leader_epoch,
                "partition_epoch": p.partition_epoch,
                "isr": list(p.new_isr),
            }
            answer = await answered_by_controller(ctx, partial(_alter, details=details))
            if answer["error_code"] != ErrorCode.none:
                partitions.append(_failed(p.partition_index, answer["error_code"]))
                continue
            partitions.append(
                {
                    "partition_index": p.partition_index,
                    "error_code": ErrorCode.none,
                    "leader_id": answer["leader"],
                    "leader_epoch": answer["leader_epoch"],
                    "isr": list(answer["isr"]),
                    "leader_recovery_state": 0,
                    "partition_epoch": answer["partition_epoch"],
                }
            )
        topics.append({"topic_id": topic.topic_id, "partitions": partitions})
    code = ErrorCode.not_controller if controller is None else ErrorCode.none
    return {"throttle_time": 0, "error_code": code, "topics": topics}
