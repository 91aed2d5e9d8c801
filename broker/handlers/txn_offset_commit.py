"""TxnOffsetCommit (28), v0-v6 (v6 names topics by id: an unknown id is
UNKNOWN_TOPIC_ID).

Offsets committed inside a transaction: written to the group's partition in a
transactional batch, invisible to OffsetFetch until the COMMIT marker, dropped
by ABORT. The producer must own the transaction and have added the group's
offsets partition (AddOffsetsToTxn), else INVALID_TXN_STATE / INVALID_PRODUCER_EPOCH
(Kafka's transaction verification, which answers a fenced producer so at every
version served here). An empty group id is INVALID_GROUP_ID. v3 carries generation,
member and instance id, checked as OffsetCommit does. v5+ (transactions version 2,
KIP-890): the producer sends no AddOffsetsToTxn; the commit adds the group's offsets
partition to its transaction itself (a refusal answers every partition).

With ACLs: WRITE on the transactional id (else every partition answers
TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group (GROUP_AUTHORIZATION_FAILED)
and on each topic (TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any, cast

from kio.schema.txn_offset_commit.v0.request import TxnOffsetCommitRequest as RequestV0
from kio.schema.txn_offset_commit.v2.request import TxnOffsetCommitRequest as RequestV2
from kio.schema.txn_offset_commit.v3.request import TxnOffsetCommitRequest as RequestV3

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.groups_common import commit_offsets, refuse_all
from odradek.broker.handlers.txn_common import INVALID_PRODUCER_EPOCH
from odradek.broker.security.resources import Operation, ResourceType
from odradek.coordinator.runtime import CoordinatorError
from odradek.coordinator.txn.shard import (
    INVALID_PRODUCER_ID_MAPPING,
    INVALID_TXN_STATE,
    PRODUCER_FENCED,
)
from odradek.protocol.errors import ErrorCode
from odradek.protocol.schemas.txn_offset_commit.v6.request import (
    TxnOffsetCommitRequest as RequestV6,
)

MIN_VERSION, MAX_VERSION = 0, 6
FIRST_IMPLICIT_ADD_VERSION = 5  # transactions version 2

# v1 has the fields of v0, v4-v5 those of v3; v6 names topics by id
Request = RequestV0 | RequestV2 | RequestV3 | RequestV6


def _transaction_code(ctx: RequestContext, request: Request) -> int:
    transactions = ctx.services.transactions
    if not transactions.coordinates(request.transactional_id):
        return 0  # another node of the cluster coordinates it, and checked AddOffsetsToTxn
    try:
        shard = transactions.shard_of(request.transactional_id)
    except CoordinatorError:  # the coordinator here is loading (it just took over): retry
        return ErrorCode.coordinator_load_in_progress
    meta = shard.transactions.get(request.transactional_id)
    if meta is None or meta.producer_id != request.producer_id:
        return INVALID_PRODUCER_ID_MAPPING
    if meta.epoch != request.producer_epoch:
        return PRODUCER_FENCED
    offsets_partition = (
        ctx.services.groups.topic,
        ctx.services.groups.partition_for(request.group_id),
    )
    if not shard.in_transaction(
        request.transactional_id, request.producer_id, request.producer_epoch, offsets_partition
    ):
        return INVALID_TXN_STATE
    return 0


async def _add_offsets_partition(ctx: RequestContext, request: Request) -> int:
    offsets_partition = (
        ctx.services.groups.topic,
        ctx.services.groups.partition_for(request.group_id),
    )
    codes = await ctx.services.transactions.add_implicitly(
        request.transactional_id,
        request.producer_id,
        request.producer_epoch,
        {offsets_partition},
    )
    return codes[offsets_partition]


def _authorization_code(ctx: RequestContext, request: Request) -> int:
    if not ctx.allowed(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return ErrorCode.transactional_id_authorization_failed
    if not ctx.allowed(Operation.READ, ResourceType.GROUP, request.group_id):
        return ErrorCode.group_authorization_failed
    return 0


async def handle(ctx: RequestContext, request: Request) -> Reply:
    refused = _authorization_code(ctx, request)
    if refused:
        return {"throttle_time": 0, "topics": refuse_all(request, refused)}
    await ctx.services.transactions.ensure_started()
    await ctx.services.groups.ensure_started()
    details: dict[str, Any] = {
        "group_id": request.group_id,
        "generation": -1,
        "member_id": "",
        "group_instance_id": None,
        "producer": (request.producer_id, request.producer_epoch),
    }
    if ctx.version >= 3:  # the member that commits, checked as OffsetCommit does
        member = cast(RequestV3 | RequestV6, request)
        details["generation"] = member.generation_id
        details["member_id"] = member.member_id
        details["group_instance_id"] = member.group_instance_id
    refuse: int
    if not request.group_id:
        refuse = ErrorCode.invalid_group_id
    elif ctx.version >= FIRST_IMPLICIT_ADD_VERSION:
        refuse = await _add_offsets_partition(ctx, request)
    else:
        refuse = _transaction_code(ctx, request)
    # Kafka checks the transaction as for a Produce, whose versions here know no
    # PRODUCER_FENCED: a fenced producer hears INVALID_PRODUCER_EPOCH
    topics = await commit_offsets(
        ctx,
        request,
        details,
        lambda code: INVALID_PRODUCER_EPOCH if code == PRODUCER_FENCED else code,
        refuse=refuse,
    )
    return {"throttle_time": 0, "topics": topics}
