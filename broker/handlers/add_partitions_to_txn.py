"""AddPartitionsToTxn (24), v0-v5: v0-v3 the client form, v4+ the batch form (KIP-890).

- Unknown transactional id or another producer id: INVALID_PRODUCER_ID_MAPPING;
  another epoch: PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2); while the
  previous transaction is being ended: CONCURRENT_TRANSACTIONS.
- Unknown partitions answer UNKNOWN_TOPIC_OR_PARTITION and the others
  OPERATION_NOT_ATTEMPTED; nothing is added then. An empty transactional id is
  INVALID_REQUEST.
- The first partition starts the transaction and its timeout clock.
- With ACLs: WRITE on the transactional id (else every partition answers
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and on each topic; a topic without it
  answers TOPIC_AUTHORIZATION_FAILED (the others OPERATION_NOT_ATTEMPTED). Internal
  topics are never added this way (TOPIC_AUTHORIZATION_FAILED, as on Kafka).
- v4+ (as brokers send it to verify a transaction; Kafka serves it to clients too):
  several transactions, CLUSTER_ACTION on the cluster instead of the per-id and
  per-topic checks (CLUSTER_AUTHORIZATION_FAILED), PRODUCER_FENCED at every version.
  verify_only asks whether each partition is in the transaction, adding nothing
  (TRANSACTION_ABORTABLE for one that is not); otherwise the partitions are added.
"""

from __future__ import annotations

from typing import Any, cast

from kio.schema.add_partitions_to_txn.v0.request import AddPartitionsToTxnRequest as RequestV0
from kio.schema.add_partitions_to_txn.v4.request import AddPartitionsToTxnRequest as RequestV4
from kio.schema.add_partitions_to_txn.v4.request import AddPartitionsToTxnTransaction

from odradek.broker.handlers.authorization import allowed_names, cluster_allowed
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.txn_common import fenced_code, on_txn_shard
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 5

# v1-v3 have the fields of v0 (one transaction), v5 those of v4 (a batch of them)
Request = RequestV0 | RequestV4


def _internal(ctx: RequestContext, name: str) -> bool:
    topic = ctx.services.topics.get(name)
    return topic is not None and topic.is_internal


async def handle(ctx: RequestContext, request: Request) -> Reply:
    if ctx.version >= 4:
        return await _batch(ctx, cast(RequestV4, request))
    return await _single(ctx, cast(RequestV0, request))


async def _single(ctx: RequestContext, request: RequestV0) -> Reply:
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
    elif not transactional_id:
        codes = {tp: ErrorCode.invalid_request for tp in wanted}
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
    by_topic: dict[str, list[dict[str, Any]]] = {t.name: [] for t in request.v3_and_below_topics}
    for (topic, partition), code in codes.items():
        by_topic[topic].append({"partition_index": partition, "partition_error_code": code})
    return {
        "throttle_time": 0,
        "results_by_topic_v3_and_below": [
            {"name": topic, "results_by_partition": results} for topic, results in by_topic.items()
        ],
    }


async def _batch(ctx: RequestContext, request: RequestV4) -> Reply:
    if not cluster_allowed(ctx, Operation.CLUSTER_ACTION):
        refused = ErrorCode.cluster_authorization_failed
        return {"throttle_time": 0, "error_code": refused, "results_by_transaction": []}
    results = []
    for txn in request.transactions:
        wanted: set[tuple[str, int]] = {(t.name, p) for t in txn.topics for p in t.partitions}
        unknown = {tp for tp in wanted if ctx.services.topics.partition(*tp) is None}
        codes: dict[tuple[str, int], int]
        if unknown:
            codes = {
                tp: ErrorCode.unknown_topic_or_partition
                if tp in unknown
                else ErrorCode.operation_not_attempted
                for tp in wanted
            }
        elif not txn.transactional_id:
            codes = {tp: ErrorCode.invalid_request for tp in wanted}
        else:
            codes = await _verify_or_add(ctx, txn, wanted)
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, partition), code in sorted(codes.items()):
            by_topic.setdefault(topic, []).append(
                {"partition_index": partition, "partition_error_code": code}
            )
        topic_results = [{"name": t, "results_by_partition": r} for t, r in by_topic.items()]
        results.append({"transactional_id": txn.transactional_id, "topic_results": topic_results})
    return {"throttle_time": 0, "error_code": 0, "results_by_transaction": results}


async def _verify_or_add(
    ctx: RequestContext, txn: AddPartitionsToTxnTransaction, wanted: set[tuple[str, int]]
) -> dict[tuple[str, int], int]:
    transactional_id, producer_id, epoch = txn.transactional_id, txn.producer_id, txn.producer_epoch
    if txn.verify_only:
        code, answer = await on_txn_shard(
            ctx,
            transactional_id,
            lambda s: s.verify_partitions(transactional_id, producer_id, epoch, wanted),
        )
        return {tp: code for tp in wanted} if code else answer
    now = ctx.services.now_ms()
    code, answer = await on_txn_shard(
        ctx,
        transactional_id,
        lambda s: s.add_partitions(transactional_id, producer_id, epoch, wanted, now),
    )
    return {tp: code or answer for tp in wanted}
