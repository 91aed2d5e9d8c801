"""ListTransactions (66), v0-v2: every transactional id, filtered by state, by
producer id, (v1) by the last transaction having started more than duration_filter ms
ago, and (v2) by a regular expression the whole id must match (an invalid one is
INVALID_REGULAR_EXPRESSION). With ACLs only the ids the principal may DESCRIBE are
listed."""

from __future__ import annotations

import re
from typing import cast

from kio.schema.list_transactions.v0.request import ListTransactionsRequest as RequestV0
from kio.schema.list_transactions.v1.request import ListTransactionsRequest as RequestV1
from kio.schema.list_transactions.v2.request import ListTransactionsRequest as RequestV2

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation, ResourceType
from odradek.coordinator.runtime import CoordinatorError
from odradek.coordinator.txn.records import STATE_NAMES
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 2

Request = RequestV0 | RequestV1 | RequestV2


async def handle(ctx: RequestContext, request: Request) -> Reply:
    transactions = ctx.services.transactions
    await transactions.ensure_started()
    known_states = set(STATE_NAMES.values())
    wanted_states = set(request.state_filters)
    wanted_producers = set(request.producer_id_filters)
    min_duration = cast(RequestV1, request).duration_filter if ctx.version >= 1 else -1
    wanted_ids = cast(RequestV2, request).transactional_id_pattern if ctx.version >= 2 else None
    try:
        pattern = re.compile(wanted_ids or "")
    except re.error:
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.invalid_regular_expression,
            "unknown_state_filters": [],
            "transaction_states": [],
        }
    now = ctx.services.now_ms()
    listed = []
    code = 0
    for shard in list(transactions.runtime.shards.values()):
        try:
            metas = await shard.submit(lambda s: s.list_all())
        except CoordinatorError as exc:
            code = exc.code
            continue
        for meta in metas:
            state = STATE_NAMES[meta.state]
            if wanted_states and state not in wanted_states:
                continue
            if wanted_producers and meta.producer_id not in wanted_producers:
                continue
            # as Kafka: by the last transaction's start, in whatever state (-1 if none)
            if min_duration >= 0 and now - meta.start_ms <= min_duration:
                continue
            if pattern.pattern and not pattern.fullmatch(meta.transactional_id):
                continue
            if not ctx.allowed(
                Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, meta.transactional_id
            ):
                continue
            listed.append(
                {
                    "transactional_id": meta.transactional_id,
                    "producer_id": meta.producer_id,
                    "transaction_state": state,
                }
            )
    return {
        "throttle_time": 0,
        "error_code": code,
        "unknown_state_filters": sorted(wanted_states - known_states),
        "transaction_states": listed,
    }
