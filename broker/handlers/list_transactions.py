"""ListTransactions (66), v0-v1: every transactional id, filtered by state, by
producer id, and (v1) by having run longer than duration_filter ms. With ACLs only the
ids the principal may DESCRIBE are listed."""

from __future__ import annotations

from typing import Any

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation, ResourceType
from odradek.coordinator.runtime import CoordinatorError
from odradek.coordinator.txn.records import ONGOING, STATE_NAMES

MIN_VERSION, MAX_VERSION = 0, 1


async def handle(ctx: RequestContext, request: Any) -> Reply:
    transactions = ctx.services.transactions
    await transactions.ensure_started()
    known_states = set(STATE_NAMES.values())
    wanted_states = set(request.state_filters)
    wanted_producers = set(request.producer_id_filters)
    min_duration = getattr(request, "duration_filter", -1)
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
            if min_duration >= 0 and not (
                meta.state == ONGOING and now - meta.start_ms > min_duration
            ):
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
