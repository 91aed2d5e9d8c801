"""InitProducerId (22), v0-v5 (v5 only tells that the client knows
TRANSACTION_ABORTABLE, as on Kafka 4.4).

Without a transactional id: a new producer id with epoch 0 on every call
(even when the producer passes its current one, as Kafka does), from blocks
persisted before use, so ids never repeat, even after kill -9.

With a transactional id (the transaction coordinator):
- a new id gets a producer id and epoch 0; a known one gets its epoch bumped
  (a new producer id once the epoch is exhausted), which fences older
  instances;
- an open transaction is aborted first (markers written with the bumped
  epoch) and the caller gets CONCURRENT_TRANSACTIONS, to retry;
- Prepare* states answer CONCURRENT_TRANSACTIONS;
- v3+ (KIP-360): the producer's current id and epoch, when given, must match
  (PRODUCER_FENCED otherwise), and a retry of the last bump gets the same answer;
  one of them without the other is INVALID_REQUEST (with or without a transactional id);
- a timeout above `transaction.max.timeout.ms` is INVALID_TRANSACTION_TIMEOUT.

With ACLs: a transactional id needs WRITE on it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
an idempotent producer IDEMPOTENT_WRITE on the cluster or WRITE on some topic
(CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any, cast

from kio.schema.init_producer_id.v0.request import InitProducerIdRequest as RequestV0
from kio.schema.init_producer_id.v3.request import InitProducerIdRequest as RequestV3

from odradek.broker.cluster.node_client import NodeUnreachable
from odradek.broker.handlers.authorization import may_write_idempotently
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.txn_common import fenced_code, on_txn_shard
from odradek.broker.security.resources import Operation, ResourceType
from odradek.coordinator.txn.shard import CONCURRENT_TRANSACTIONS, MarkerPlan
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 5

# v1-v2 have the fields of v0, v4-v5 those of v3
Request = RequestV0 | RequestV3


def _answer(code: int, producer_id: int = -1, epoch: int = -1) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "error_code": code,
        "producer_id": producer_id,
        "producer_epoch": epoch,
    }


async def handle(ctx: RequestContext, request: Request) -> Reply:
    services = ctx.services
    transactional_id = request.transactional_id
    expected_pid, expected_epoch = -1, -1  # v3+ names the producer it had, if any
    if ctx.version >= 3:
        named = cast(RequestV3, request)
        expected_pid, expected_epoch = named.producer_id, named.producer_epoch
    try:
        await services.producer_ids.ready()
    except NodeUnreachable:  # a cluster's controller is away and the ids ran out
        return _answer(ErrorCode.coordinator_not_available)
    if transactional_id is None:
        if not may_write_idempotently(ctx):
            return _answer(ErrorCode.cluster_authorization_failed)
    elif not ctx.allowed(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
        return _answer(ErrorCode.transactional_id_authorization_failed)
    if (expected_pid == -1) != (expected_epoch == -1):  # one without the other
        return _answer(ErrorCode.invalid_request)
    if transactional_id is None:
        return _answer(ErrorCode.none, services.producer_ids.allocate(), 0)
    if not transactional_id:
        return _answer(ErrorCode.invalid_request)
    timeout_ms = int(request.transaction_timeout.total_seconds() * 1000)
    code, answer = await on_txn_shard(
        ctx,
        transactional_id,
        lambda s: s.init_producer_id(
            transactional_id,
            timeout_ms,
            expected_pid,
            expected_epoch,
            services.producer_ids.allocate,
            services.now_ms(),
        ),
    )
    if code:
        return _answer(code)
    if isinstance(answer, MarkerPlan):
        await services.transactions.finish(answer)
        return _answer(CONCURRENT_TRANSACTIONS)
    code, producer_id, epoch = answer
    return _answer(fenced_code(code, ctx.version, 4), producer_id, epoch)
