"""TxnOffsetCommit (28), v0-v3.

Offsets committed inside a transaction: written to the group's partition in a
transactional batch, invisible to OffsetFetch until the COMMIT marker, dropped
by ABORT. The producer must own the transaction and have added the group's
offsets partition (AddOffsetsToTxn), else INVALID_TXN_STATE / PRODUCER_FENCED
(INVALID_PRODUCER_EPOCH before v3). v3 carries generation, member and instance
id, checked as OffsetCommit does.
"""

from __future__ import annotations

from typing import Any

from broker.handlers.base import Reply, RequestContext
from broker.handlers.groups_common import on_group_shard
from broker.handlers.txn_common import fenced_code
from coordinator.txn.shard import INVALID_PRODUCER_ID_MAPPING, INVALID_TXN_STATE, PRODUCER_FENCED
from protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 3


def _transaction_code(ctx: RequestContext, request: Any) -> int:
    transactions = ctx.broker.transactions
    shard = transactions.shard_of(request.transactional_id)
    if shard is None:
        return ErrorCode.coordinator_load_in_progress
    meta = shard.transactions.get(request.transactional_id)
    if meta is None or meta.producer_id != request.producer_id:
        return INVALID_PRODUCER_ID_MAPPING
    if meta.epoch != request.producer_epoch:
        return PRODUCER_FENCED
    offsets_partition = (ctx.broker.groups.topic, ctx.broker.groups.partition_for(request.group_id))
    if not shard.in_transaction(
        request.transactional_id, request.producer_id, request.producer_epoch, offsets_partition
    ):
        return INVALID_TXN_STATE
    return 0


async def handle(ctx: RequestContext, request: Any) -> Reply:
    await ctx.broker.transactions.ensure_started()
    await ctx.broker.groups.ensure_started()
    topics = ctx.broker.topics
    offsets = {}
    unknown = set()
    for topic in request.topics:
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            if topics.partition(*tp) is None:
                unknown.add(tp)
            else:
                epoch = getattr(p, "committed_leader_epoch", -1)
                offsets[tp] = (p.committed_offset, epoch, p.committed_metadata)
    code = _transaction_code(ctx, request)
    codes: dict[tuple[str, int], int] = {tp: code for tp in offsets}
    if offsets and code == 0:
        details = {
            "group_id": request.group_id,
            "generation": getattr(request, "generation_id", -1),
            "member_id": getattr(request, "member_id", ""),
            "group_instance_id": getattr(request, "group_instance_id", None),
            "offsets": offsets,
            "producer": (request.producer_id, request.producer_epoch),
        }
        code, answer = await on_group_shard(
            ctx, request.group_id, lambda s: s.commit_offsets(details)
        )
        codes = {tp: code for tp in offsets} if code else answer
    return {
        "throttle_time": 0,
        "topics": [
            {
                "name": topic.name,
                "partitions": [
                    {
                        "partition_index": p.partition_index,
                        "error_code": ErrorCode.unknown_topic_or_partition
                        if (topic.name, p.partition_index) in unknown
                        else fenced_code(
                            codes.get((topic.name, p.partition_index), 0), ctx.version, 3
                        ),
                    }
                    for p in topic.partitions
                ],
            }
            for topic in request.topics
        ],
    }
