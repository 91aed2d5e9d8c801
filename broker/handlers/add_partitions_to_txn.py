"""AddPartitionsToTxn (24), v0-v3 (the client form; v4+ batches belong to KIP-890).

- Unknown transactional id or another producer id: INVALID_PRODUCER_ID_MAPPING;
  another epoch: PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2); while the
  previous transaction is being ended: CONCURRENT_TRANSACTIONS.
- Unknown partitions answer UNKNOWN_TOPIC_OR_PARTITION and the others
  OPERATION_NOT_ATTEMPTED; nothing is added then.
- The first partition starts the transaction and its timeout clock.
- With ACLs: WRITE on the transactional id (else every partition answers
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and on each topic; a topic without it
  answers TOPIC_AUTHORIZATION_FAILED (the others OPERATION_NOT_ATTEMPTED). Internal
  topics are never added this way (TOPIC_AUTHORIZATION_FAILED, as on Kafka).
"""

from __future__ import annotations

from typing import Any

from odradek.broker.handlers.authorization import allowed_names
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.txn_common import fenced_code, on_txn_shard
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 3


def _internal(ctx: RequestContext, name: str) -> bool:
    topic = ctx.services.topics.get(name)
    return topic is not None and topic.is_internal


async def handle(ctx: RequestContext, request: Any) -> Reply:
    services = ctx.services
    transactional_id = request.v3_and_below_transactional_id
    producer_id = request.v3_and_below_producer_id
    epoch = request.v3_and_below_producer_epoch
    wanted = [(t.name, p) for t in request.v3_and_below_topics for p in t.partitions]
    writable = allowed_names(
        ctx, Operation.WRITE, ResourceType.TOPIC, (t for t, _ in wanted if not _internal(ctx, t))
    )
    refused = {tp: ErrorCode.topic_authorization_failed for tp in wanted if tp[0] not in writable}
    for tp in wanted:
        if tp not in refused and services.topics.partition(*tp) is None:
            refused[tp] = ErrorCode.unknown_topic_or_partition
    codes: dict[tuple[str, int], int]
    if not ctx.allowed(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
        codes = {tp: ErrorCode.transactional_id_authorization_failed for tp in wanted}
    elif refused:
        codes = {tp: refused.get(tp, ErrorCode.operation_not_attempted) for tp in wanted}
    else:
        code, answer = await on_txn_shard(
            ctx,
            transactional_id,
            lambda s: s.add_partitions(
                transactional_id, producer_id, epoch, set(wanted), services.now_ms()
            ),
        )
        code = fenced_code(code or answer, ctx.version, 2)
        codes = {tp: code for tp in wanted}
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), code in codes.items():
        by_topic.setdefault(topic, []).append(
            {"partition_index": partition, "partition_error_code": code}
        )
    return {
        "throttle_time": 0,
        "results_by_topic_v3_and_below": [
            {"name": topic, "results_by_partition": results} for topic, results in by_topic.items()
        ],
    }
