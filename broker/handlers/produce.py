"""Produce (0), v3-v13 (v13 names topics by id: an unknown id is UNKNOWN_TOPIC_ID).

- Record batches stay bytes: each batch's 61-byte header is read, its CRC32C
  checked, and the log patches base offset and leader epoch in place.
- Exactly one batch of magic 2 a partition (INVALID_RECORD otherwise), zstd only
  from v7 (UNSUPPORTED_COMPRESSION_TYPE); a bad CRC or a torn batch is
  CORRUPT_MESSAGE; a batch larger than the topic's `max.message.bytes` is
  MESSAGE_TOO_LARGE; a codec Kafka does not know is UNKNOWN_SERVER_ERROR, as Kafka
  fails on it. One bad batch fails its whole partition, not the others.
- Records stamped further from the broker's clock than the topic's
  `message.timestamp.before.max.ms` / `after.max.ms` (CreateTime topics) are
  INVALID_TIMESTAMP, and records without a key on a compacted topic INVALID_RECORD,
  each record named in `record_errors` (v8+) in Kafka's words.
- Compressed batches are stored exactly as sent.
- Idempotent and transactional batches go through the partition's producer
  state: duplicates answer with the original offset, gaps and stale epochs with
  Kafka's codes (see storage/producer_state.py).
- A transactional batch needs the request's transactional id (else every partition
  answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka does) and must belong to
  its producer's open transaction (INVALID_TXN_STATE otherwise) when this node
  coordinates its transactional id;
  while that coordinator loads or moves the answer is NOT_ENOUGH_REPLICAS, which
  producers retry, as Kafka answers when it cannot verify the transaction.
- v12+ (transactions version 2, KIP-890): the producer sends no AddPartitionsToTxn;
  its transactional batch adds the partition to its transaction, at the coordinator
  here or at another broker's (AddPartitionsToTxn v5). An epoch the coordinator has
  moved past (a late Produce of an ended transaction) is INVALID_PRODUCER_EPOCH and
  opens nothing; while the previous transaction ends, NOT_ENOUGH_REPLICAS (retried).
- acks must be 0, 1 or -1; acks=0 gets no response at all. With acks=-1 a
  partition with fewer in-sync replicas than its `min.insync.replicas` answers
  NOT_ENOUGH_REPLICAS (on one node of its own there is one replica). In a cluster
  only the partition's leader takes writes (NOT_LEADER_OR_FOLLOWER elsewhere), and
  acks=-1 answers once every in-sync replica has the records: REQUEST_TIMED_OUT
  after the request's timeout, NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank
  below `min.insync.replicas` meanwhile, NOT_LEADER_OR_FOLLOWER if leadership moved.
- When the flush policy asks for it, the answer waits for the fsync, which is
  shared with every other request waiting at the same time.
- A full disk, an I/O error or a read-only data directory fails the partition
  with KAFKA_STORAGE_ERROR (retriable; nothing half-written stays in the log) and
  is logged once in a while (storage/faults.py), not once per request.
- The answer is encoded directly to bytes (protocol/produce_response.py).
- With ACLs: a transactional id needs WRITE on it (else every partition answers
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and each topic WRITE on it
  (TOPIC_AUTHORIZATION_FAILED, before any other check).
- Client quotas (handlers/quota_common.py): the request's size counts against the
  client's producer_byte_rate, its handling time against request_percentage; over
  either, the answer carries the throttle time and the connection is muted that
  long (acks=0 too, without an answer).
"""

from __future__ import annotations

import asyncio
import struct
import time
from typing import Any

from odradek.broker.dataplane.topics import Partition
from odradek.broker.handlers.authorization import acls_enabled
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.quota_common import byte_throttle, mute, request_time_throttle
from odradek.broker.security.resources import Operation, ResourceType
from odradek.broker.settings.client_quotas import PRODUCER_BYTE_RATE
from odradek.coordinator.runtime import CoordinatorError
from odradek.protocol.batch import (
    ATTR_TRANSACTIONAL,
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    InvalidBatch,
    TruncatedBatch,
    iter_batches,
)
from odradek.protocol.errors import ErrorCode
from odradek.protocol.produce_request import ProduceRequest, TopicData
from odradek.protocol.produce_response import encode_produce_response
from odradek.storage import faults
from odradek.storage.batch_rewrite import decode_records
from odradek.storage.config import INT64_MAX
from odradek.storage.producer_state import DuplicateBatch, ProducerStateError

MIN_VERSION, MAX_VERSION = 3, 13
# Kafka 4 lists v0-v2 too, and closes the connection on them as this broker does: some
# librdkafka versions refuse to compress unless v0 is listed
LISTED_MIN_VERSION = 0
FIRST_IMPLICIT_ADD_VERSION = 12  # transactions version 2
FIRST_BY_ID_VERSION = 13
TIMESTAMP_REJECTED = "One or more records have been rejected due to invalid timestamp"
NOT_ADDED = "Partition was not added to the transaction"
ZSTD, KNOWN_CODECS = 4, range(5)
MAGIC_AT, ATTRIBUTES_AT = 16, 22  # the magic byte, the low byte of the attributes


def _error(index: int, code: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {
        "index": index,
        "error_code": code,
        "base_offset": -1,
        "log_append_time": -1,
        "log_start_offset": -1,
        "error_message": message,
    }


def _refused(partition: Partition, code: ErrorCode, message: str | None = None) -> dict[str, Any]:
    """A batch the log refused: Kafka tells the log start with these."""
    return {
        **_error(partition.index, code, message),
        "log_start_offset": partition.log.log_start_offset,
    }


def _transaction_error(
    ctx: RequestContext, partition: Partition, transactional_id: str | None, header: BatchHeader
) -> dict[str, Any] | None:
    """A transactional batch must belong to its producer's open transaction."""
    entry = partition.producers.producers.get(header.producer_id)
    if entry is not None and header.producer_epoch < entry.epoch:
        return _error(partition.index, ErrorCode.invalid_producer_epoch)
    if transactional_id is None:
        return _error(partition.index, ErrorCode.invalid_txn_state, NOT_ADDED)
    transactions = ctx.services.transactions
    if not transactions.coordinates(transactional_id):
        # another node coordinates it (a cluster): that node checked AddPartitionsToTxn,
        # and the producer state fences old epochs, as Kafka before KIP-890
        return None
    tp = (partition.topic.name, partition.index)
    try:
        if transactions.in_transaction(
            transactional_id, header.producer_id, header.producer_epoch, tp
        ):
            return None
    except CoordinatorError as exc:
        # The coordinator here is loading (it just took over) or moving: the producer
        # retries. Kafka answers such a Produce NOT_ENOUGH_REPLICAS, which every client
        # retries without a metadata refresh.
        reason = ErrorCode(exc.code).name.upper()
        return _error(
            partition.index,
            ErrorCode.not_enough_replicas,
            f"cannot verify the partition is in the transaction yet: {reason}",
        )
    return _error(partition.index, ErrorCode.invalid_txn_state, NOT_ADDED)


def _in_sync(partition: Partition) -> int:
    replication = partition.replication
    return 1 if replication is None else len(replication.isr)


async def _wait_for_replicas(
    written: list[tuple[Partition, int, dict[str, Any]]], timeout_ms: int
) -> None:
    """acks=all in a cluster: each answer waits until the partition's ISR has its
    records (the high watermark passed them), for at most the request's timeout."""
    waits = [
        (partition, answer, partition.replication.wait_for(end))
        for partition, end, answer in written
        if partition.replication is not None
    ]
    if not waits:
        return
    await asyncio.wait([w for _, _, w in waits], timeout=max(timeout_ms, 0) / 1000)
    for partition, answer, waited in waits:
        if not waited.done():
            waited.cancel()
            answer["error_code"] = ErrorCode.request_timed_out
        elif waited.exception() is not None:  # NotLeader: deposed meanwhile
            answer["error_code"] = ErrorCode.not_leader_or_follower
        elif _in_sync(partition) < partition.log.config.min_insync_replicas:
            answer["error_code"] = ErrorCode.not_enough_replicas_after_append


def _record_errors(
    partition: Partition, data: bytearray | memoryview, header: BatchHeader, now_ms: int
) -> dict[str, Any] | None:
    """Kafka's checks of each record: a key on compacted topics, a CreateTime stamp
    within the topic's limits around the broker's clock."""
    config = partition.log.config
    before, after = config.message_timestamp_before_max_ms, config.message_timestamp_after_max_ms
    stamps = not config.log_append_time and (before < INT64_MAX or after < INT64_MAX)
    if not (config.compacts or stamps):
        return None
    batch = bytes(memoryview(data)[header.position : header.position + header.size])
    records = decode_records(header, batch)
    if records is None:
        return None
    name = f"{partition.topic.name}-{partition.index}"
    errors: list[tuple[int, str]] = []
    late = False
    for index, record in enumerate(records):
        timestamp = header.base_timestamp + record.timestamp_delta
        if config.compacts and record.key is None:
            why = f"Compacted topic cannot accept message without key in topic partition {name}"
            errors.append((index, why))
        elif stamps and timestamp != -1 and not -after <= now_ms - timestamp <= before:
            late = True
            errors.append(
                (
                    index,
                    f"Timestamp {timestamp} of message with offset "
                    f"{header.base_offset + record.offset_delta} is out of range. The timestamp "
                    f"should be within [{now_ms - before}, {now_ms + after}]",
                )
            )
    if not errors:
        return None
    if late:
        code, message = ErrorCode.invalid_timestamp, TIMESTAMP_REJECTED
    else:
        shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
        code = ErrorCode.invalid_record
        message = (
            f"One or more records have been rejected due to {len(errors)} record errors in "
            f"total, and only showing the first three errors at most: [{shown}]"
        )
    record_errors = [{"batch_index": i, "batch_index_error_message": m} for i, m in errors]
    return {**_refused(partition, code, message), "record_errors": record_errors}


def request_problem(
    index: int, records: bytes | memoryview | None, version: int
) -> dict[str, Any] | None:
    """Kafka's first look at a partition's records, before the log: one batch of
    magic 2, zstd only from Produce v7."""
    data = records or b""
    if len(data) <= MAGIC_AT:  # no batch at all
        return _error(index, ErrorCode.invalid_record)
    size = LOG_OVERHEAD + int.from_bytes(data[8:12], "big", signed=True)
    if size > len(data) or data[MAGIC_AT] != 2:  # no whole batch, or an old format
        return _error(index, ErrorCode.invalid_record)
    if version < 7 and len(data) > ATTRIBUTES_AT and data[ATTRIBUTES_AT] & 7 == ZSTD:
        return _error(index, ErrorCode.unsupported_compression_type)
    if size < len(data):  # more than one batch
        return _error(index, ErrorCode.invalid_record)
    return None


def append_to_partition(
    ctx: RequestContext,
    partition: Partition,
    records: bytes | memoryview | None,
    acks: int,
    now_ms: int,
    transactional_id: str | None = None,
) -> dict[str, Any]:
    index = partition.index
    log = partition.log
    if partition.topic.is_internal:
        return _error(
            index, ErrorCode.invalid_topic_exception, "cannot produce to an internal topic"
        )
    if acks == -1 and _in_sync(partition) < log.config.min_insync_replicas:
        return _error(index, ErrorCode.not_enough_replicas)
    if not records:
        return _error(index, ErrorCode.invalid_record, "produce request has no record batches")
    # A writable view into the request buffer is patched and written in place.
    data = (
        records if isinstance(records, memoryview) and not records.readonly else bytearray(records)
    )
    try:
        headers = list(iter_batches(data))
    except TruncatedBatch as exc:
        return _error(index, ErrorCode.corrupt_message, str(exc))
    except InvalidBatch as exc:
        code = ErrorCode.corrupt_message if "CRC" in str(exc) else ErrorCode.invalid_record
        return _error(index, code, str(exc))
    for header in headers:
        if header.compression not in KNOWN_CODECS:
            return _refused(partition, ErrorCode.unknown_server_error)
        if header.size > log.config.max_message_bytes:
            return _error(index, ErrorCode.message_too_large)
        if header.records_count != header.last_offset_delta + 1:
            return _refused(
                partition, ErrorCode.invalid_record, "record count does not match offsets"
            )
        if header.is_control:
            return _refused(
                partition, ErrorCode.invalid_record, "clients may not send control batches"
            )
        if header.producer_id >= 0 and header.base_sequence < 0:
            return _refused(
                partition, ErrorCode.invalid_record, "a producer's batch needs a sequence"
            )
        if header.is_transactional:
            problem = _transaction_error(ctx, partition, transactional_id, header)
            if problem is not None:
                return problem
        problem = _record_errors(partition, data, header, now_ms)
        if problem is not None:
            return problem
    try:
        info = ctx.services.append(partition, data, headers, now_ms)
    except DuplicateBatch as duplicate:
        return {
            "index": index,
            "error_code": 0,
            "base_offset": duplicate.first_offset,
            "log_append_time": -1,
            "log_start_offset": log.log_start_offset,
        }
    except ProducerStateError as exc:
        return _refused(partition, ErrorCode(exc.code), str(exc))
    except OSError as exc:
        if ctx.services.topics.fail_log(log, exc, "produce"):
            return _error(index, ErrorCode.kafka_storage_error, f"storage error: {exc.strerror}")
        if not faults.is_storage_error(exc):
            raise
        faults.report(log.directory, exc, "produce")
        return _error(index, ErrorCode.kafka_storage_error, f"storage error: {exc.strerror}")
    return {
        "index": index,
        "error_code": 0,
        "base_offset": info.first_offset,
        "log_append_time": info.log_append_time,
        "log_start_offset": info.log_start_offset,
    }


def _transactional_id_allowed(ctx: RequestContext, transactional_id: str | None) -> bool:
    return transactional_id is None or ctx.allowed(
        Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
    )


def _has_transactional_batch(request: ProduceRequest) -> bool:
    """Whether a partition's first batch is transactional (what Kafka looks at)."""
    return any(
        records is not None
        and len(records) >= HEADER_SIZE
        and records[MAGIC_AT] == 2
        and records[ATTRIBUTES_AT] & ATTR_TRANSACTIONAL
        for topic_data in request.topic_data
        for _, records in topic_data.partition_data
    )


# what the transaction coordinator's refusals of an implicit add become in a Produce answer
ADD_REFUSALS = {
    ErrorCode.producer_fenced: ErrorCode.invalid_producer_epoch,
    ErrorCode.concurrent_transactions: ErrorCode.not_enough_replicas,
    ErrorCode.coordinator_load_in_progress: ErrorCode.not_enough_replicas,
    ErrorCode.coordinator_not_available: ErrorCode.not_enough_replicas,
    ErrorCode.not_coordinator: ErrorCode.not_enough_replicas,
    ErrorCode.request_timed_out: ErrorCode.not_enough_replicas,
}
PRODUCER_AT = 43  # a batch header's producer id (int64), then its epoch (int16)


async def _add_to_transaction(
    ctx: RequestContext, request: ProduceRequest
) -> dict[tuple[str, int], int]:
    """Transactions version 2: the partitions whose first batch is transactional join
    the producer's transaction before anything is appended; the refusals by partition."""
    assert request.transactional_id is not None
    checked = acls_enabled(ctx)

    def writable(topic: str) -> bool:  # a refused topic joins no transaction
        return not checked or ctx.allowed(Operation.WRITE, ResourceType.TOPIC, topic)

    wanted: dict[tuple[int, int], set[tuple[str, int]]] = {}
    for topic_data in request.topic_data:
        for index, records in topic_data.partition_data:
            if (
                records is None
                or len(records) < HEADER_SIZE
                or records[MAGIC_AT] != 2
                or not records[ATTRIBUTES_AT] & ATTR_TRANSACTIONAL
            ):
                continue
            partition = ctx.services.topics.partition(topic_data.name, index)
            if partition is not None and partition.led_here and writable(topic_data.name):
                producer = struct.unpack_from(">qh", records, PRODUCER_AT)
                wanted.setdefault(producer, set()).add((topic_data.name, index))
    refused: dict[tuple[str, int], int] = {}
    for (producer_id, epoch), partitions in wanted.items():
        codes = await ctx.services.transactions.add_implicitly(
            request.transactional_id, producer_id, epoch, partitions
        )
        for tp, code in codes.items():
            if code:
                refused[tp] = ADD_REFUSALS.get(ErrorCode(code), code)
    return refused


def _refuse_all(request: ProduceRequest) -> list[dict[str, Any]]:
    code = ErrorCode.transactional_id_authorization_failed
    return [
        {
            "name": topic_data.name,
            "topic_id": topic_data.topic_id,
            "partition_responses": [_error(index, code) for index, _ in topic_data.partition_data],
        }
        for topic_data in request.topic_data
    ]


def _named(ctx: RequestContext, request: ProduceRequest) -> ProduceRequest:
    """v13+ names topics by id: the same request with each known topic's name."""
    topics: list[TopicData] = []
    for topic_data in request.topic_data:
        found = ctx.services.topics.by_id(topic_data.topic_id) if topic_data.topic_id else None
        topics.append(topic_data._replace(name="" if found is None else found.name))
    return request._replace(topic_data=tuple(topics))


async def handle(ctx: RequestContext, request: ProduceRequest) -> Reply:
    if ctx.version >= FIRST_BY_ID_VERSION:
        request = _named(ctx, request)
    acks = request.acks
    now_ms = int(time.time() * 1000)
    topics: list[dict[str, Any]] = []
    written: list[Partition] = []
    answers: list[dict[str, Any]] = []  # of the partitions written to
    ends: list[tuple[Partition, int, dict[str, Any]]] = []  # what acks=all waits for
    checked = acls_enabled(ctx)
    unnamed = request.transactional_id is None and _has_transactional_batch(request)
    if unnamed or (checked and not _transactional_id_allowed(ctx, request.transactional_id)):
        if acks == 0:
            return None
        return encode_produce_response(ctx.version, _refuse_all(request))
    not_added: dict[tuple[str, int], int] = {}
    if ctx.version >= FIRST_IMPLICIT_ADD_VERSION and request.transactional_id is not None:
        not_added = await _add_to_transaction(ctx, request)
    for topic_data in request.topic_data:
        if ctx.version >= FIRST_BY_ID_VERSION and not topic_data.name:  # an id no topic has
            unknown = [_error(i, ErrorCode.unknown_topic_id) for i, _ in topic_data.partition_data]
            topics.append({"topic_id": topic_data.topic_id, "partition_responses": unknown})
            continue
        results = []
        denied = checked and not ctx.allowed(Operation.WRITE, ResourceType.TOPIC, topic_data.name)
        for index, records in topic_data.partition_data:
            partition = ctx.services.topics.partition(topic_data.name, index)
            if denied:
                results.append(_error(index, ErrorCode.topic_authorization_failed))
            elif partition is None:
                results.append(_error(index, ErrorCode.unknown_topic_or_partition))
            elif (problem := request_problem(index, records, ctx.version)) is not None:
                results.append(problem)
            elif not partition.led_here:
                results.append(_error(index, partition.unavailable_error))
            elif acks not in (0, 1, -1):
                results.append(_error(index, ErrorCode.invalid_required_acks))
            elif (topic_data.name, index) in not_added:
                results.append(_error(index, ErrorCode(not_added[(topic_data.name, index)])))
            else:
                result = append_to_partition(
                    ctx, partition, records, acks, now_ms, request.transactional_id
                )
                if result["error_code"] == 0:
                    written.append(partition)
                    answers.append(result)
                    ends.append((partition, partition.log.log_end_offset, result))
                results.append(result)
        topics.append(
            {
                "name": topic_data.name,
                "topic_id": topic_data.topic_id,
                "partition_responses": results,
            }
        )
    try:
        await ctx.services.flush_if_due(written, now_ms)
    except OSError as exc:
        if not faults.is_storage_error(exc):
            raise
        faults.report(ctx.services.config.data_dir, exc, "flush")
        for answer in answers:
            if answer["error_code"] == 0:
                answer["error_code"] = ErrorCode.kafka_storage_error
    for partition, answer in zip(written, answers, strict=True):
        if partition.offline:  # its directory failed in the flush
            answer["error_code"] = ErrorCode.kafka_storage_error
    if acks == -1:
        await _wait_for_replicas(ends, request.timeout_ms)
    throttle = 0
    if ctx.services.quotas.enabled:
        throttle = max(
            byte_throttle(ctx, PRODUCER_BYTE_RATE, ctx.size, now_ms),
            request_time_throttle(ctx, now_ms),
        )
        mute(ctx, throttle)
    if acks == 0:
        return None
    return encode_produce_response(ctx.version, topics, throttle)
