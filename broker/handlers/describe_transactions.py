"""DescribeTransactions (65), v0: state, producer, timeout, start and partitions
of each transactional id; TRANSACTIONAL_ID_NOT_FOUND for unknown ones, INVALID_REQUEST
for an empty one. With ACLs an id
needs DESCRIBE on it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and only the partitions of
topics the principal may DESCRIBE are listed."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.txn_common import on_txn_shard
from odradek.broker.security.resources import Operation, ResourceType
from odradek.coordinator.txn.records import STATE_NAMES
from odradek.coordinator.txn.shard import TRANSACTIONAL_ID_NOT_FOUND
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 0


def _start_time(start_ms: int) -> datetime.datetime:
    """The field is a non-nullable timestamp; Kafka sends -1 when no transaction is open."""
    return datetime.datetime.fromtimestamp(max(start_ms, -1) / 1000, tz=datetime.UTC)


def _describer(transactional_id: str) -> Callable[[Any], Any]:
    return lambda shard: shard.describe(transactional_id)


async def handle(ctx: RequestContext, request: DescribeTransactionsRequest) -> Reply:
    states = []
    for transactional_id in request.transactional_ids:
        code: int
        if not ctx.allowed(Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            code, meta = ErrorCode.transactional_id_authorization_failed, None
        elif not transactional_id:
            code, meta = ErrorCode.invalid_request, None
        else:
            code, meta = await on_txn_shard(ctx, transactional_id, _describer(transactional_id))
        if meta is None:  # the other fields as Kafka leaves them: zero
            states.append(
                {
                    "error_code": code or TRANSACTIONAL_ID_NOT_FOUND,
                    "transactional_id": transactional_id,
                    "transaction_state": "",
                    "transaction_timeout": 0,
                    "transaction_start_time": _start_time(0),
                    "producer_id": 0,
                    "producer_epoch": 0,
                    "topics": [],
                }
            )
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(meta.partitions):
            if not ctx.allowed(Operation.DESCRIBE, ResourceType.TOPIC, topic):
                continue
            by_topic.setdefault(topic, []).append(partition)
        states.append(
            {
                "error_code": 0,
                "transactional_id": transactional_id,
                "transaction_state": STATE_NAMES[meta.state],
                "transaction_timeout": meta.timeout_ms,
                "transaction_start_time": _start_time(meta.start_ms),
                "producer_id": meta.producer_id,
                "producer_epoch": meta.epoch,
                "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
            }
        )
    return {"throttle_time": 0, "transaction_states": states}
