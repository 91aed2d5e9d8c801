"""AddOffsetsToTxn (25), v0-v4 (v4 is v3 for a client of transactions v2).

Adds the group's `__consumer_offsets` partition to the transaction, so the
offsets committed with TxnOffsetCommit get the transaction's marker. Errors
as AddPartitionsToTxn. With ACLs: WRITE on the transactional id
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then READ on the group
(GROUP_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from kio.schema.add_offsets_to_txn.v0.request import AddOffsetsToTxnRequest as V0
from kio.schema.add_offsets_to_txn.v1.request import AddOffsetsToTxnRequest as V1
from kio.schema.add_offsets_to_txn.v2.request import AddOffsetsToTxnRequest as V2
from kio.schema.add_offsets_to_txn.v3.request import AddOffsetsToTxnRequest as V3
from kio.schema.add_offsets_to_txn.v4.request import AddOffsetsToTxnRequest as V4

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.txn_common import fenced_code, on_txn_shard
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 4

AddOffsetsToTxnRequest = V0 | V1 | V2 | V3 | V4


async def handle(ctx: RequestContext, request: AddOffsetsToTxnRequest) -> Reply:
    services = ctx.services
    if not ctx.allowed(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return {"throttle_time": 0, "error_code": ErrorCode.transactional_id_authorization_failed}
    if not ctx.allowed(Operation.READ, ResourceType.GROUP, request.group_id):
        return {"throttle_time": 0, "error_code": ErrorCode.group_authorization_failed}
    await services.groups.ensure_started()
    offsets_partition = (services.groups.topic, services.groups.partition_for(request.group_id))
    code, answer = await on_txn_shard(
        ctx,
        request.transactional_id,
        lambda s: s.add_partitions(
            request.transactional_id,
            request.producer_id,
            request.producer_epoch,
            {offsets_partition},
            services.now_ms(),
        ),
    )
    return {"throttle_time": 0, "error_code": fenced_code(code or answer, ctx.version, 2)}
