"""ShareFetch (78), v1-v2: a share-group member's fetch (KIP-932).

- Share session: epoch 0 opens one (acknowledgements are refused then; one the member
  already has is replaced, and what the member holds stays its own), n continues it,
  -1 closes it after its acknowledgements and releases what the member holds (see
  broker/coordinators/share_sessions.py). SHARE_SESSION_NOT_FOUND / INVALID_SHARE_SESSION_EPOCH
  change nothing.
- Piggybacked acknowledgements are applied first, each partition's written before the
  answer (acknowledge_error_code per partition; INVALID_RECORD_STATE for offsets the
  member does not hold, and then none of that partition's apply).
- Then records are acquired for this member from every partition of the session,
  starting at each share-partition's first available offset: whole stored batches are
  returned as they are, and `acquired_records` says which offsets of them are the
  member's, with their delivery counts.
  - `max_records` bounds the acquired records. In the batch-optimized acquire mode
    (the default) whole stored batches are taken, so the bound may be passed up to a
    batch's end, and new records are locked in pieces of at least `batch_size`,
    cut at stored-batch boundaries. In the record-limit mode (v2) no more than
    `max_records` are taken, a stored batch cut where the bound falls.
  - `max_records` or `max_bytes` 0: nothing is fetched, the answer comes at once.
  - `max_bytes` bounds the data.
  - Transaction markers are never handed out; with `share.isolation.level`
    read_committed, neither are aborted records, and nothing at or past the last
    stable offset.
- v2 `is_renew_ack`: the request only acknowledges (RENEW among them); it must have
  max_bytes, min_bytes, max_records and max_wait all 0 (INVALID_REQUEST otherwise),
  and fetches nothing.
- A share-partition seen for the first time starts where `share.auto.offset.reset`
  says: latest (the default), earliest, or by_duration:<ISO 8601 duration> ago.
- Long poll: with nothing acquired the request waits for new records or released
  ones, up to `max_wait`.
- With ACLs: READ on the group (top-level GROUP_AUTHORIZATION_FAILED) and on each
  topic (TOPIC_AUTHORIZATION_FAILED for its partitions).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

from kio.schema.share_fetch.v1.request import ShareFetchRequest as RequestV1
from kio.schema.share_fetch.v2.request import ShareFetchRequest as RequestV2

from odradek.broker.coordinators.share import ShareCoordinator
from odradek.broker.coordinators.share_sessions import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    ShareSession,
    ShareSessionError,
    TopicPartition,
)
from odradek.broker.dataplane.topics import Partition
from odradek.broker.handlers import share_common
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.share_common import Acknowledgements
from odradek.broker.observability import metrics
from odradek.broker.security.resources import Operation, ResourceType
from odradek.broker.settings.iso_duration import parse_duration_ms
from odradek.coordinator.runtime import CoordinatorError
from odradek.coordinator.share.partition import FetchedBatch
from odradek.coordinator.share.records import ShareKey
from odradek.protocol.batch import BatchHeader
from odradek.protocol.errors import ErrorCode
from odradek.storage import OffsetOutOfRange
from odradek.storage.log_slice import LogSlice

MIN_VERSION, MAX_VERSION = 1, 2
WAITER_TURNS = 4
BATCH_OPTIMIZED, RECORD_LIMIT = 0, 1
ACK_FIELDS = ("acknowledge_error_code", "acknowledge_error_message")

# v2 adds is_renew_ack and share_acquire_mode
Request = RequestV1 | RequestV2


def _renew_ack(request: Request, version: int) -> bool:
    return version >= 2 and cast(RequestV2, request).is_renew_ack


def _acquire_mode(request: Request, version: int) -> int:
    return cast(RequestV2, request).share_acquire_mode if version >= 2 else BATCH_OPTIMIZED


def _fields_problem(request: Request, version: int) -> tuple[ErrorCode, str | None] | None:
    """What is wrong with the request's v2 fields, answered as Kafka answers it (an
    acquire mode it does not know fails in Kafka with UNKNOWN_SERVER_ERROR)."""
    if _renew_ack(request, version):
        wrong = [
            f"{name} must be set to 0, "
            for name, value in (
                ("maxBytes", request.max_bytes),
                ("minBytes", request.min_bytes),
                ("maxRecords", request.max_records),
                ("maxWaitMs", request.max_wait.total_seconds()),
            )
            if value != 0
        ]
        if wrong:
            return ErrorCode.invalid_request, "".join(wrong) + "if isRenewAck is true."
    mode = _acquire_mode(request, version)
    if mode not in (BATCH_OPTIMIZED, RECORD_LIMIT):
        return ErrorCode.unknown_server_error, f"Unknown share acquire mode {mode}."
    return None


async def handle(ctx: RequestContext, request: Request) -> Reply:
    problem = share_common.request_problem(ctx, request)
    if problem is not None:
        return _top_error(*problem)
    wrong = _fields_problem(request, ctx.version)
    if wrong is not None:
        return _top_error(*wrong)
    share = ctx.services.share
    await share.ensure_started()
    group_id, member_id = share_common.member_of(request)
    epoch = request.share_session_epoch
    acks = share_common.acknowledgements(request.topics)
    wanted = [
        (topic.topic_id, p.partition_index)
        for topic in request.topics
        if topic.topic_id is not None
        for p in topic.partitions
    ]
    forgotten = [
        (topic.topic_id, index)
        for topic in request.forgotten_topics_data
        if topic.topic_id is not None
        for index in topic.partitions
    ]
    try:
        if epoch == INITIAL_EPOCH:
            if acks:
                return _top_error(
                    ErrorCode.invalid_request, "A session's first request cannot acknowledge."
                )
            # a session the member already has is replaced; what the member holds
            # stays its own (acknowledgements are checked against the member)
            session = share.sessions.open(group_id, member_id, ctx.connection_id)
        else:
            session = share.sessions.check(group_id, member_id, epoch)
    except ShareSessionError as exc:
        return _top_error(ErrorCode(exc.code), str(exc))
    answers: dict[TopicPartition, dict[str, Any]] = {}
    for tp, (code, message) in (
        await share_common.acknowledge(ctx, group_id, member_id, acks)
    ).items():
        answers[tp] = _answer(acknowledge_error_code=code, acknowledge_error_message=message)
    await _let_waiters_go_first(share, group_id, acks)
    settings = ctx.services.group_settings(group_id)
    if epoch == FINAL_EPOCH:
        await share_common.end_session(ctx, session, epoch)
    else:
        session.update(wanted, forgotten)
        if epoch != INITIAL_EPOCH:
            await share_common.end_session(ctx, session, epoch)
        if _fetches(request, ctx.version):
            fetched = await _fetch(ctx, session, request, settings)
            for tp, answer in fetched.items():
                acked = answers.get(tp, {})  # (the outcome of its acknowledgements stays)
                answers[tp] = {**answer, **{k: acked[k] for k in ACK_FIELDS if k in acked}}
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "error_message": None,
        "acquisition_lock_timeout": settings.share_record_lock_duration_ms,
        "responses": share_common.shape(ctx, answers),
        "node_endpoints": [],
    }


def _fetches(request: Request, version: int) -> bool:
    """Does the request fetch at all? Not when it only renews locks, nor when it may
    take no record or no byte."""
    if _renew_ack(request, version):
        return False
    return request.max_records > 0 and request.max_bytes > 0


async def _fetch(
    ctx: RequestContext, session: ShareSession, request: Request, settings: Any
) -> dict[TopicPartition, dict[str, Any]]:
    """Acquire records for the member from the session's partitions, waiting up to
    max_wait for some."""
    deadline = time.monotonic() + request.max_wait.total_seconds()
    max_records: int = request.max_records
    acquiring = Acquiring(
        session.member_id,
        _acquire_mode(request, ctx.version) == RECORD_LIMIT,
        request.batch_size,
        settings,
    )
    while True:
        answers: dict[TopicPartition, dict[str, Any]] = {}
        waits: list[asyncio.Future[None]] = []
        records_left: int = max_records
        bytes_left: int = request.max_bytes
        for tp in _rotated(session):
            partition, code = _resolve(ctx, tp)
            if partition is None or not session.group_id:
                answers[tp] = _answer(error_code=code or ErrorCode.unknown_server_error)
                continue
            key = ShareKey(session.group_id, tp[0], tp[1])
            if records_left <= 0 or bytes_left <= 0:
                continue
            try:
                got = await _acquire(ctx, key, partition, acquiring, records_left, bytes_left)
                if got is None:
                    waits.append(ctx.services.share.shard(key).availability(key))
                    waits.append(partition.arrival())
                    continue
            except CoordinatorError as exc:
                answers[tp] = _answer(error_code=exc.code)
                continue
            data, acquired = got
            answers[tp] = _answer(
                records=data,
                acquired_records=[
                    {"first_offset": f, "last_offset": last, "delivery_count": count}
                    for f, last, count in acquired
                ],
            )
            count = sum(last - f + 1 for f, last, _ in acquired)
            records_left -= count
            metrics.share_acquired.inc(count)
            bytes_left -= len(data)
        remaining = deadline - time.monotonic()
        if answers or remaining <= 0 or not waits or request.max_wait.total_seconds() <= 0:
            return answers
        await asyncio.wait(waits, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)


async def _let_waiters_go_first(
    share: ShareCoordinator, group_id: str, acks: Acknowledgements
) -> None:
    """Records this request's acknowledgements made room for go to the members that
    were waiting for them before this member acquires again: they are woken now, and a
    few turns of the event loop let them reach their shards first."""
    for topic_id, index in acks:
        key = ShareKey(group_id, topic_id, index)
        if share.woken(key):
            for _ in range(WAITER_TURNS):
                await asyncio.sleep(0)
            return


def _rotated(session: ShareSession) -> list[TopicPartition]:
    """The session's partitions, starting one further along at each ShareFetch, so that
    a record limit reached early does not leave the same partitions unread. (Counted
    per fetch, not by session epoch: a member that acknowledges with ShareAcknowledge
    between its fetches moves the epoch on by two, and with two partitions would
    always start at the same one.)"""
    partitions = list(session.partitions)
    if not partitions:
        return partitions
    start = session.fetches % len(partitions)
    session.fetches += 1
    return partitions[start:] + partitions[:start]


def _resolve(ctx: RequestContext, tp: TopicPartition) -> tuple[Partition | None, int]:
    topic = ctx.services.topics.by_id(tp[0])
    if topic is None:
        return None, ErrorCode.unknown_topic_id
    if not 0 <= tp[1] < len(topic.partitions):
        return None, ErrorCode.unknown_topic_or_partition
    if not ctx.allowed(Operation.READ, ResourceType.TOPIC, topic.name):
        return None, ErrorCode.topic_authorization_failed
    partition = topic.partitions[tp[1]]
    if not partition.led_here:  # a cluster: the share-partition lives with the leader
        return None, ErrorCode.not_leader_or_follower
    return partition, ErrorCode.none


@dataclass(frozen=True)
class Acquiring:
    """Who acquires, and how (the request's acquire mode and batch size)."""

    member_id: str
    record_limit: bool
    batch_size: int
    settings: Any


async def _acquire(
    ctx: RequestContext,
    key: ShareKey,
    partition: Partition,
    acquiring: Acquiring,
    max_records: int,
    max_bytes: int,
) -> tuple[LogSlice | bytes, list[tuple[int, int, int]]] | None:
    """(batches, acquired ranges) from one partition, or None when nothing is there."""
    share = ctx.services.share
    settings = acquiring.settings
    log = partition.log
    initial = _initial_offset(partition, settings.share_auto_offset_reset)
    offset, below = await share.run(
        key, lambda s: s.prepare_fetch(key, initial, log.log_start_offset)
    )
    read_committed = settings.share_read_committed
    limit = (
        ctx.services.last_stable_offset(partition) if read_committed else partition.high_watermark
    )
    offset = max(offset, log.log_start_offset)
    if offset >= limit:
        return None
    # no more bytes than the records this acquisition may take
    stop = min(limit, below, offset + max_records)
    try:
        piece = log.read(offset, max_bytes, max_offset=stop, min_one=True)
    except OffsetOutOfRange:
        return None
    if piece is None:
        return None
    headers = piece.headers()
    aborted = ctx.services.aborted_transactions(partition, offset, limit) if read_committed else []
    batches = _fetched_batches(headers, aborted)
    acquired = await share.run(
        key,
        lambda s: s.acquire(
            key,
            acquiring.member_id,
            batches,
            max_records,
            settings.share_record_lock_duration_ms,
            acquiring.record_limit,
            acquiring.batch_size,
        ),
    )
    if not acquired:
        return None
    return _batches_holding(piece, headers, acquired), acquired


def _batches_holding(
    piece: LogSlice, headers: list[BatchHeader], acquired: list[tuple[int, int, int]]
) -> LogSlice | bytes:
    """The batches of `piece` that hold acquired records: sent from the file when they
    lie together (as they mostly do), else read and joined."""
    wanted = [
        h
        for h in headers
        if any(first <= h.last_offset and h.base_offset <= last for first, last, _ in acquired)
    ]
    together = all(
        a.position + a.size == b.position for a, b in zip(wanted, wanted[1:], strict=False)
    )
    if together:
        return piece.part(wanted[0].position, wanted[-1].position + wanted[-1].size)
    return b"".join(piece.part(h.position, h.position + h.size).read() for h in wanted)


def _fetched_batches(
    headers: Iterable[BatchHeader], aborted: list[dict[str, int]]
) -> list[FetchedBatch]:
    """The batches as acquisition sees them: markers, and the batches of aborted
    transactions (when `aborted` lists them), are to be skipped."""
    pending = sorted((a["first_offset"], a["producer_id"]) for a in aborted)
    aborting: set[int] = set()
    batches = []
    for header in headers:
        while pending and pending[0][0] <= header.last_offset:
            aborting.add(pending.pop(0)[1])
        if header.is_control:
            aborting.discard(header.producer_id)
            skip = True
        else:
            skip = header.is_transactional and header.producer_id in aborting
        batches.append(FetchedBatch(header.base_offset, header.last_offset, skip))
    return batches


def _initial_offset(partition: Partition, reset: str) -> int:
    log = partition.log
    if reset == "earliest":
        return log.log_start_offset
    if reset.startswith("by_duration:"):
        since = int(time.time() * 1000) - parse_duration_ms(reset.split(":", 1)[1])
        found = log.offset_for_timestamp(since)
        return found[0] if found is not None else partition.high_watermark
    return partition.high_watermark


def _answer(**fields: Any) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "error_code": ErrorCode.none,
        "error_message": None,
        "acknowledge_error_code": ErrorCode.none,
        "acknowledge_error_message": None,
        "records": b"",
        "acquired_records": [],
    }
    answer.update(fields)
    return answer


def _top_error(code: ErrorCode, message: str | None) -> Reply:
    return {
        "throttle_time": 0,
        "error_code": code,
        "error_message": message,
        "acquisition_lock_timeout": 0,
        "responses": [],
        "node_endpoints": [],
    }
