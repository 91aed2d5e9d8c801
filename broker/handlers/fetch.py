"""Fetch (1), v4-v18.

- Stored batches are returned as they sit in the segment file, starting with the
  batch that holds the fetch offset; clients skip earlier records.
- Limits: `partition_max_bytes` per partition and `max_bytes` overall, except
  that the first batch of the first partition with data is returned even when
  larger, so a consumer can always make progress. As on Kafka, a consumer gets the
  bytes up to the limit, the last batch cut short if it does not fit (clients drop
  it and fetch it again); followers get whole batches.
- Long poll: with fewer than `min_bytes` available the request parks until a
  Produce to one of its partitions or `max_wait_ms`, whichever is first.
- An offset outside [log start, log end] is OFFSET_OUT_OF_RANGE; the answer
  always carries the high watermark, last stable offset and log start offset.
- read_committed (isolation level 1) reads only below the last stable offset
  and lists the aborted transactions in the returned range.
- v7+ fetch sessions (KIP-227), see broker/dataplane/fetch_sessions.py; v13+ name topics
  by id (UNKNOWN_TOPIC_ID when unknown).
- With ACLs, a topic needs READ on it: TOPIC_AUTHORIZATION_FAILED otherwise, checked
  once per request (an unknown topic id stays UNKNOWN_TOPIC_ID). A follower's fetch
  (replica_id set) needs CLUSTER_ACTION on the cluster instead, as on Kafka.
- In a cluster only a partition's leader answers (NOT_LEADER_OR_FOLLOWER elsewhere),
  consumers up to the high watermark; a follower's fetch reads to the log end and
  tells the leader how far the follower got (followers before v18 learn the high
  watermark with their next records, as on Kafka).
- v17 adds the follower's log directory id (nothing here: one directory per node),
  v18 the high watermark the follower knows (KIP-1166): a follower's fetch behind the
  leader's high watermark is answered at once, and a parked one when the leader's
  moves, so the follower learns it. Consumers send neither.
- Client quotas (handlers/quota_common.py), a consumer's fetch only: at most what
  its consumer_byte_rate allows in the quota's window is read (all but one of its
  samples); the records returned count against the rate, the handling time against
  request_percentage. Over either, the answer carries the throttle time and no
  records (they are not counted), and the connection is muted that long.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from kio.schema.fetch.v4.request import FetchRequest as V4
from kio.schema.fetch.v5.request import FetchRequest as V5
from kio.schema.fetch.v6.request import FetchRequest as V6
from kio.schema.fetch.v7.request import FetchRequest as V7
from kio.schema.fetch.v8.request import FetchRequest as V8
from kio.schema.fetch.v9.request import FetchRequest as V9
from kio.schema.fetch.v10.request import FetchRequest as V10
from kio.schema.fetch.v11.request import FetchRequest as V11
from kio.schema.fetch.v12.request import FetchRequest as V12
from kio.schema.fetch.v13.request import FetchRequest as V13
from kio.schema.fetch.v14.request import FetchRequest as V14
from kio.schema.fetch.v15.request import FetchRequest as V15
from kio.schema.fetch.v16.request import FetchRequest as V16
from kio.schema.fetch.v17.request import FetchRequest as V17
from kio.schema.fetch.v18.request import FetchRequest as V18

from odradek.broker.dataplane.fetch_sessions import (
    CachedPartition,
    FetchPlan,
    PartitionKey,
    SessionError,
)
from odradek.broker.dataplane.topics import Partition
from odradek.broker.handlers.authorization import acls_enabled, allowed_names, cluster_allowed
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.quota_common import (
    byte_throttle,
    client_of,
    mute,
    request_time_throttle,
    user_of,
)
from odradek.broker.security.resources import Operation, ResourceType
from odradek.broker.settings.client_quotas import CONSUMER_BYTE_RATE
from odradek.protocol.errors import ErrorCode
from odradek.storage import OffsetOutOfRange

MIN_VERSION, MAX_VERSION = 4, 18

FetchRequest = V4 | V5 | V6 | V7 | V8 | V9 | V10 | V11 | V12 | V13 | V14 | V15 | V16 | V17 | V18
READ_COMMITTED = 1
NOT_SENT = (1 << 63) - 1  # a follower's high watermark when it does not send one


def _resolve(ctx: RequestContext, key: PartitionKey) -> tuple[Partition | None, ErrorCode]:
    name, topic_id, index = key
    topics = ctx.services.topics
    topic = topics.get(name) if name is not None else topics.by_id(topic_id) if topic_id else None
    if topic is None:
        missing = (
            ErrorCode.unknown_topic_id if name is None else ErrorCode.unknown_topic_or_partition
        )
        return None, missing
    if not 0 <= index < len(topic.partitions):
        return None, ErrorCode.unknown_topic_or_partition
    partition = topic.partitions[index]
    if not partition.led_here:
        return None, partition.unavailable_error
    return partition, ErrorCode.none


def _unreadable(ctx: RequestContext, plan: FetchPlan) -> set[PartitionKey]:
    """The plan's partitions of topics the principal may not READ."""
    names: dict[PartitionKey, str] = {}
    for key, _ in plan.partitions:
        name, topic_id, _index = key
        if name is None:
            topic = ctx.services.topics.by_id(topic_id) if topic_id else None
            if topic is None:
                continue  # UNKNOWN_TOPIC_ID comes first
            name = topic.name
        names[key] = name
    readable = allowed_names(ctx, Operation.READ, ResourceType.TOPIC, names.values())
    return {key for key, name in names.items() if name not in readable}


def _read_all(
    ctx: RequestContext,
    plan: FetchPlan,
    max_bytes: int,
    isolation: int,
    leader_epochs: dict,
    unreadable: set[PartitionKey],
    replica_id: int,
) -> tuple[list[tuple[PartitionKey, CachedPartition, dict[str, Any]]], int]:
    """One pass over the plan's partitions; returns their answers and the bytes read."""
    results = []
    total = 0
    for key, cached in plan.partitions:
        if key in unreadable:
            partition, code = None, ErrorCode.topic_authorization_failed
        else:
            partition, code = _resolve(ctx, key)
        answer: dict[str, Any] = {
            "partition_index": key[2],
            "error_code": code,
            "high_watermark": -1,
            "last_stable_offset": -1,
            "log_start_offset": -1,
            # as Kafka: an empty list for partitions refused before any log is asked
            "aborted_transactions": [] if partition is None else None,
            "preferred_read_replica": -1,
            "records": b"",
        }
        if partition is not None:
            epoch = leader_epochs.get(key, -1)
            if epoch > partition.leader_epoch:
                answer["error_code"] = ErrorCode.unknown_leader_epoch
            elif 0 <= epoch < partition.leader_epoch:
                answer["error_code"] = ErrorCode.fenced_leader_epoch
            else:
                total += _read_partition(
                    ctx,
                    partition,
                    cached,
                    answer,
                    max_bytes - total,
                    total == 0,
                    isolation,
                    replica_id,
                )
        results.append((key, cached, answer))
    return results, total


def _read_partition(
    ctx: RequestContext,
    partition: Partition,
    cached: CachedPartition,
    answer: dict[str, Any],
    budget: int,
    min_one: bool,
    isolation: int,
    replica_id: int,
) -> int:
    log = partition.log
    high_watermark = partition.high_watermark
    last_stable = ctx.services.last_stable_offset(partition)
    answer["high_watermark"] = high_watermark
    answer["last_stable_offset"] = last_stable
    answer["log_start_offset"] = log.log_start_offset
    limit = last_stable if isolation == READ_COMMITTED else high_watermark
    read_to: int | None = limit
    replicas = ctx.services.replicas if replica_id >= 0 else None
    if replica_id >= 0:
        # A follower (or a broker reading the controller's metadata log) copies up to
        # the log end, and its fetch offset tells the leader how far it got.
        if replicas is not None:
            replicas.follower_fetched(partition, replica_id, cached.fetch_offset)
            if replicas.leader_holds_back(partition, replica_id):
                return 0  # a replication throttle: no records this time
        read_to, min_one, isolation = None, True, 0
    if isolation == READ_COMMITTED:
        answer["aborted_transactions"] = []
    try:
        piece = log.read(
            cached.fetch_offset,
            max(min(cached.max_bytes, budget), 0),
            max_offset=read_to,
            min_one=min_one,
            partial_tail=replica_id < 0,
        )
    except OSError as exc:  # its log directory failed (a full disk does not fail reads)
        ctx.services.topics.fail_log(log, exc, "fetch")
        answer["error_code"] = ErrorCode.kafka_storage_error
        return 0
    except OffsetOutOfRange:
        answer["error_code"] = ErrorCode.offset_out_of_range
        if replica_id < 0:  # a consumer is answered without the log's offsets, as on Kafka
            answer["high_watermark"] = answer["last_stable_offset"] = -1
            answer["log_start_offset"] = -1
        # (a follower behind the leader's log start starts over there: see replica_fetcher)
        return 0
    if piece is None:
        return 0
    answer["records"] = piece  # sent from the segment file (sendfile), not read here
    if replicas is not None:
        replicas.leader_sent(partition, replica_id, piece.size)
    if isolation == READ_COMMITTED:
        answer["aborted_transactions"] = ctx.services.aborted_transactions(
            partition, cached.fetch_offset, limit
        )
    return piece.size


def _shape(
    plan: FetchPlan, results: list[tuple[PartitionKey, CachedPartition, dict[str, Any]]]
) -> list[dict[str, Any]]:
    """Group answers by topic; an incremental answer keeps only partitions with news,
    and moves those that had records to the end of its session, so that the others
    come first next time (as Kafka does)."""
    topics: dict[tuple[str | None, Any], list[dict[str, Any]]] = {}
    for key, cached, answer in results:
        news = cached.changed(
            answer["high_watermark"], answer["last_stable_offset"], answer["log_start_offset"]
        )
        if plan.incremental and not (news or answer["records"] or answer["error_code"]):
            continue
        if plan.incremental and answer["records"] and plan.session is not None:
            plan.session.partitions.move_to_end(key)
        topics.setdefault((key[0], key[1]), []).append(answer)
    return [
        {"topic": name, "topic_id": topic_id, "partitions": partitions}
        for (name, topic_id), partitions in topics.items()
    ]


def _follower_behind(
    results: list[tuple[PartitionKey, CachedPartition, dict[str, Any]]],
    follower_knows: dict[PartitionKey, int],
) -> bool:
    """Does a follower know an older high watermark than the leader's of a partition?"""
    return any(
        answer["high_watermark"] > follower_knows.get(key, NOT_SENT) for key, _, answer in results
    )


def replica_id_of(request: FetchRequest) -> int:
    """Who fetches: a follower's node id, -1 for a consumer."""
    state = getattr(request, "replica_state", None)
    if state is not None:
        return int(state.replica_id)
    return int(getattr(request, "replica_id", -1))


async def handle(ctx: RequestContext, request: FetchRequest) -> Reply:
    by_id = ctx.version >= 13
    replica_id = replica_id_of(request)
    # v18: the high watermark each partition's follower knows
    follower_knows: dict[PartitionKey, int] | None = (
        {} if replica_id >= 0 and ctx.version >= 18 else None
    )
    requested: list[tuple[PartitionKey, int, int]] = []
    leader_epochs: dict[PartitionKey, int] = {}
    for topic in request.topics:
        name = None if by_id else getattr(topic, "topic")  # noqa: B009 (not in every version)
        topic_id = getattr(topic, "topic_id") if by_id else None  # noqa: B009
        for p in topic.partitions:
            key = (name, topic_id, p.partition)
            requested.append((key, p.fetch_offset, p.partition_max_bytes))
            leader_epochs[key] = getattr(p, "current_leader_epoch", -1)
            if follower_knows is not None:
                follower_knows[key] = getattr(p, "high_watermark", NOT_SENT)
    forgotten: list[PartitionKey] = []
    for gone in getattr(request, "forgotten_topics_data", ()):
        name = None if by_id else gone.topic
        topic_id = gone.topic_id if by_id else None
        forgotten.extend((name, topic_id, index) for index in gone.partitions)
    session_id = getattr(request, "session_id", 0)
    epoch = getattr(request, "session_epoch", -1)
    try:
        plan = ctx.services.fetch_sessions.plan(session_id, epoch, requested, forgotten)
    except SessionError as exc:
        return {"throttle_time": 0, "error_code": exc.code, "session_id": 0, "responses": []}

    max_bytes: int = request.max_bytes
    min_bytes: int = request.min_bytes
    replica_id = replica_id_of(request)
    quotas = ctx.services.quotas
    counted = quotas.enabled and replica_id < 0 and not ctx.listener.controller
    if counted:
        window = quotas.max_in_window(CONSUMER_BYTE_RATE, user_of(ctx), client_of(ctx))
        if window is not None:
            max_bytes = min(max_bytes, window)
            min_bytes = min(min_bytes, max_bytes)
    isolation = getattr(request, "isolation_level", 0)
    max_wait = request.max_wait.total_seconds()
    deadline = time.monotonic() + max_wait
    unreadable: set[PartitionKey] = set()
    if acls_enabled(ctx) and replica_id < 0:
        unreadable = _unreadable(ctx, plan)
    elif acls_enabled(ctx) and not cluster_allowed(ctx, Operation.CLUSTER_ACTION):
        unreadable = {key for key, _ in plan.partitions}  # followers are brokers
    while True:
        results, total = _read_all(
            ctx, plan, max_bytes, isolation, leader_epochs, unreadable, replica_id
        )
        remaining = deadline - time.monotonic()
        errors = any(answer["error_code"] for _, _, answer in results)
        if total >= min_bytes or remaining <= 0 or errors or not results:
            break
        if follower_knows and _follower_behind(results, follower_knows):
            break
        # a follower that tells its high watermark (v18) also waits for the leader's to move
        waiters = [
            partition.arrival(replica_id >= 0 and not follower_knows)
            for key, _ in plan.partitions
            if (partition := _resolve(ctx, key)[0]) is not None
        ]
        if not waiters:
            break
        await asyncio.wait(waiters, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
    responses = _shape(plan, results)
    throttle = 0
    if counted:
        now_ms = int(time.time() * 1000)
        throttle = max(
            byte_throttle(ctx, CONSUMER_BYTE_RATE, total, now_ms),
            request_time_throttle(ctx, now_ms),
        )
        if throttle:
            # as Kafka: a throttled consumer gets no records, and they are not counted
            quotas.unrecord(CONSUMER_BYTE_RATE, user_of(ctx), client_of(ctx), total, now_ms)
            responses = []
            mute(ctx, throttle)
    return {
        "throttle_time": throttle,
        "error_code": 0,
        "session_id": plan.response_session_id,
        "responses": responses,
    }
