"""The sink: ``df.write.format("odradek")`` and ``df.writeStream.format("odradek")``.

Columns as in Spark's Kafka sink: ``value`` (string or binary, required), ``key``
(string or binary), ``topic`` (string; the ``topic`` option wins when both are given),
``partition`` (int) and ``headers`` (array of key/value structs).

Exactly once. Each write task is one Kafka transaction whose transactional.id is
``<prefix>-<query id>-<task partition>``: a retried or restarted task with the same id
fences its predecessor and aborts whatever that one left open. In the same transaction
the task commits the offset ``batch id + 1`` for the consumer group of the same name on
partition 0 of the first topic it writes to; this is the task's marker. Before writing,
a task reads its marker (read_committed) and writes nothing when the batch is already
there, so a micro-batch replayed after a crash of the driver, the executors or the
broker becomes visible to read_committed consumers once. This holds when a replayed
batch has the same rows in the same task partitions, which Spark gives for
deterministic queries over a replayable source.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructType,
)

from odradek.spark.metadata import CONSUMER_ONLY, PRODUCER_ONLY
from odradek.spark.options import SinkOptions
from odradek.spark.schema import HEADERS_TYPE

# Fault injection for tests: "before-commit" or "after-commit" fails the first attempt of
# every write task at that point (its transaction left open, or committed).
FAIL_FIRST_ATTEMPT_ENV = "ODRADEK_SPARK_FAIL_FIRST_ATTEMPT"
# Fault injection for tests: seconds a task sleeps after its transaction commits.
PAUSE_AFTER_COMMIT_ENV = "ODRADEK_SPARK_PAUSE_AFTER_COMMIT"


class KafkaSinkError(RuntimeError):
    """The sink cannot write the given data frame or could not reach Kafka."""


class InjectedFailure(RuntimeError):
    """A failure asked for by a test through the environment."""


@dataclass
class WrittenTask(WriterCommitMessage):
    partition: int
    records: int
    already_written: bool


def check_sink_schema(schema: StructType, options: SinkOptions) -> None:
    """Spark's Kafka sink's rules on the input columns."""
    fields = {f.name: f.dataType for f in schema.fields}
    if "value" not in fields:
        raise KafkaSinkError("Required attribute 'value' not found")
    if not isinstance(fields["value"], StringType | BinaryType):
        raise KafkaSinkError(
            f"value attribute type must be a string or binary, got {fields['value'].simpleString()}"
        )
    if "key" in fields and not isinstance(fields["key"], StringType | BinaryType):
        raise KafkaSinkError(
            f"key attribute type must be a string or binary, got {fields['key'].simpleString()}"
        )
    if options.topic is None and "topic" not in fields:
        raise KafkaSinkError(
            "topic option required when no 'topic' attribute is present. "
            "Use the topic option for setting a topic."
        )
    if "topic" in fields and not isinstance(fields["topic"], StringType):
        raise KafkaSinkError(
            f"topic attribute type must be a string, got {fields['topic'].simpleString()}"
        )
    if "partition" in fields and not isinstance(fields["partition"], IntegerType):
        raise KafkaSinkError(
            f"partition attribute type must be an int, got {fields['partition'].simpleString()}"
        )
    if "headers" in fields and not _headers_type_ok(fields["headers"]):
        raise KafkaSinkError(
            f"headers attribute type must be {HEADERS_TYPE.simpleString()}, "
            f"got {fields['headers'].simpleString()}"
        )


def _headers_type_ok(data_type: Any) -> bool:
    if not isinstance(data_type, ArrayType) or not isinstance(data_type.elementType, StructType):
        return False
    inner = {f.name: f.dataType for f in data_type.elementType.fields}
    return isinstance(inner.get("key"), StringType) and isinstance(inner.get("value"), BinaryType)


def producer_config(config: Mapping[str, str], transactional_id: str) -> dict[str, str]:
    settings = {k: v for k, v in config.items() if k not in CONSUMER_ONLY}
    # the Java client's partitioner, so keyed records land where Spark's Kafka sink puts them
    settings.setdefault("partitioner", "murmur2_random")
    settings.setdefault("linger.ms", "5")
    settings["transactional.id"] = transactional_id
    return settings


def marker_consumer_config(config: Mapping[str, str], group: str) -> dict[str, str]:
    settings = {k: v for k, v in config.items() if k not in PRODUCER_ONLY}
    settings.update(
        {"group.id": group, "isolation.level": "read_committed", "enable.auto.commit": "false"}
    )
    return settings


@dataclass
class Columns:
    """One Arrow batch's columns as Python lists; None where the column is absent."""

    values: list[Any]
    keys: list[Any] | None
    topics: list[str | None] | None
    partitions: list[int | None] | None
    headers: list[list[tuple[str, Any]] | None] | None

    @classmethod
    def of(cls, batch: pa.RecordBatch) -> Columns:
        names = batch.schema.names

        def column(name: str) -> list[Any] | None:
            return batch.column(name).to_pylist() if name in names else None

        headers = column("headers")
        return cls(
            values=batch.column("value").to_pylist(),
            keys=column("key"),
            topics=column("topic"),
            partitions=column("partition"),
            headers=None
            if headers is None
            else [None if hs is None else [(h["key"], h["value"]) for h in hs] for hs in headers],
        )


def _null_topic() -> KafkaSinkError:
    return KafkaSinkError(
        "null topic present in the data. Use the topic option for setting a topic."
    )


def produce_columns(producer: Producer, columns: Columns, topic_option: str | None) -> int:
    """Hand one batch's records to the producer; returns how many."""
    produce = producer.produce
    values = columns.values
    keys = columns.keys if columns.keys is not None else [None] * len(values)
    if topic_option is not None and columns.partitions is None and columns.headers is None:
        # the common case, kept to one call per record
        for key, value in zip(keys, values, strict=True):
            try:
                produce(topic_option, value, key)
            except BufferError:
                _produce_when_room(producer, topic_option, value, key)
    else:
        n = len(values)
        topics = [topic_option] * n if topic_option is not None else columns.topics or []
        partitions = columns.partitions or [None] * n
        headers = columns.headers or [None] * n
        for topic, key, value, partition, header in zip(
            topics, keys, values, partitions, headers, strict=True
        ):
            if topic is None:
                raise _null_topic()
            part = -1 if partition is None else partition
            try:
                produce(topic, value, key, partition=part, headers=header)
            except BufferError:
                _produce_when_room(producer, topic, value, key, partition=part, headers=header)
    producer.poll(0)
    return len(values)


def _produce_when_room(producer: Producer, *args: Any, **kwargs: Any) -> None:
    """The client's queue is full: let it send, then try again."""
    while True:
        producer.poll(0.05)
        try:
            producer.produce(*args, **kwargs)
            return
        except BufferError:
            continue


def write_task(
    batches: Iterator[pa.RecordBatch], options: SinkOptions, scope: str, batch_id: int
) -> WrittenTask:
    """Write one task's rows as one transaction, unless its marker says this batch is
    already in Kafka."""
    context = TaskContext.get()
    task_partition = context.partitionId() if context is not None else 0
    attempt = context.attemptNumber() if context is not None else 0
    batches = (b for b in batches if b.num_rows)
    first_batch = next(batches, None)
    if first_batch is None:
        return WrittenTask(task_partition, 0, already_written=False)
    first = Columns.of(first_batch)
    first_topic = options.topic or (first.topics[0] if first.topics else None)
    if first_topic is None:
        raise _null_topic()
    name = f"{options.transactional_id_prefix}-{scope}-{task_partition}"
    marker = TopicPartition(first_topic, 0)
    timeout = options.timeout_ms / 1000
    producer = Producer(producer_config(options.client_config, name))
    consumer = Consumer(marker_consumer_config(options.client_config, name))
    try:
        # connected first: librdkafka otherwise may wait out its coordinator query interval
        producer.list_topics(timeout=timeout)
        producer.init_transactions(timeout)  # fences earlier attempts, aborts what they left
        committed = consumer.committed([marker], timeout=timeout)[0].offset
        if committed > batch_id:
            return WrittenTask(task_partition, 0, already_written=True)
        producer.begin_transaction()
        count = produce_columns(producer, first, options.topic)
        for batch in batches:
            count += produce_columns(producer, Columns.of(batch), options.topic)
        if os.environ.get(FAIL_FIRST_ATTEMPT_ENV) == "before-commit" and attempt == 0:
            producer.flush(timeout)
            raise InjectedFailure("injected failure before commit")
        producer.send_offsets_to_transaction(
            [TopicPartition(marker.topic, 0, batch_id + 1)],
            consumer.consumer_group_metadata(),
            timeout,
        )
        producer.commit_transaction(timeout)
    except InjectedFailure:
        raise
    except Exception as exc:
        _abort_quietly(producer, timeout)
        if isinstance(exc, KafkaException):
            raise KafkaSinkError(
                f"Writing batch {batch_id} of task {task_partition} as {name} failed: {exc}"
            ) from None
        raise
    finally:
        consumer.close()
    if os.environ.get(PAUSE_AFTER_COMMIT_ENV):
        time.sleep(float(os.environ[PAUSE_AFTER_COMMIT_ENV]))
    if os.environ.get(FAIL_FIRST_ATTEMPT_ENV) == "after-commit" and attempt == 0:
        raise InjectedFailure("injected failure after commit")
    return WrittenTask(task_partition, count, already_written=False)


def _abort_quietly(producer: Producer, timeout: float) -> None:
    """Abort the open transaction, if the producer still can; the task's next attempt
    fences and aborts it otherwise."""
    with contextlib.suppress(KafkaException):
        producer.abort_transaction(timeout)


class BatchWriter(DataSourceArrowWriter):
    """``df.write``: the whole job is batch 0 of a query named by a fresh id, so a retried
    task fences and de-duplicates against its earlier attempts."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options
        self.scope = uuid.uuid4().hex

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WrittenTask:
        return write_task(iterator, self.options, self.scope, 0)


class StreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream``: tasks name themselves after the query (stable across restarts
    from the same checkpoint) and the micro-batch."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WrittenTask:
        context = TaskContext.get()
        query = context.getLocalProperty("sql.streaming.queryId") if context else None
        batch = context.getLocalProperty("streaming.sql.batchId") if context else None
        if not query or batch is None:
            raise KafkaSinkError("the streaming sink runs only inside a streaming query")
        return write_task(iterator, self.options, query, int(batch))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Each task committed its own transaction; nothing is left to do."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Tasks abort their own transactions; one that could not is aborted by its retry."""
