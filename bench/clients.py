"""Client runs against one peer with confluent-kafka (librdkafka): produce throughput,
produce latency at a fixed rate, and passes that consume a topic from its low
watermark.
"""

from __future__ import annotations

import functools
import statistics
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition

from bench.peers import ErrorSink, client_config, payloads, percentile

KB = 1000
MB = 1_000_000
STALL_SECONDS = 20.0
FLUSH_TIMEOUT = 60.0


# --------------------------------------------------------------------------- client runs


class Rates:
    """MB/s and records/s of a result with `records`, `value_bytes` and `seconds`."""

    records: int
    value_bytes: int
    seconds: float

    @property
    def mb_per_s(self) -> float:
        return self.value_bytes / MB / self.seconds if self.seconds else 0.0

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0


@dataclass
class ProduceResult(Rates):
    records: int = 0
    value_bytes: int = 0
    seconds: float = 0.0
    errors: int = 0
    undelivered: int = 0
    first_error: str | None = None
    client_errors: list[str] = field(default_factory=list)
    broker_cpu_pct: float = 0.0
    broker_cpu_s: float = 0.0
    client_cpu_pct: float = 0.0
    other_cpu_pct: float = 0.0


class DeliveryCounter:
    def __init__(self) -> None:
        self.delivered = 0
        self.delivered_bytes = 0
        self.errors = 0
        self.first_error: str | None = None

    def __call__(self, error: KafkaError | None, message: Message) -> None:
        if error is None:
            self.delivered += 1
            self.delivered_bytes += len(message)
        else:
            self.errors += 1
            if self.first_error is None:
                self.first_error = str(error)


def produce(
    bootstrap: str,
    topic: str,
    partitions: int,
    size: int,
    acks: str,
    *,
    linger_ms: int,
    seconds: float | None = None,
    per_partition: int | None = None,
) -> ProduceResult:
    """Produce round-robin over the partitions, for `seconds` or `per_partition` records."""
    sink = ErrorSink()
    counter = DeliveryCounter()
    producer = Producer(
        client_config(
            bootstrap,
            sink,
            **{
                "acks": acks,
                "linger.ms": linger_ms,
                "message.timeout.ms": 30000,
                "on_delivery": counter,
            },
        )
    )
    producer.list_topics(topic, timeout=10)  # connect and learn the leaders before timing
    values = payloads(size)
    limit = per_partition * partitions if per_partition is not None else sys.maxsize
    sent = 0
    started = time.perf_counter()
    deadline = started + seconds if seconds is not None else float("inf")
    produce_one = producer.produce
    while sent < limit:
        if sent & 1023 == 0:
            if time.perf_counter() >= deadline:
                break
            producer.poll(0)
        try:
            produce_one(topic, values[sent & 15], partition=sent % partitions)
        except BufferError:
            producer.poll(0.01)
            continue
        sent += 1
    undelivered = producer.flush(FLUSH_TIMEOUT)
    elapsed = time.perf_counter() - started
    return ProduceResult(
        records=counter.delivered,
        value_bytes=counter.delivered_bytes,
        seconds=elapsed,
        errors=counter.errors,
        undelivered=undelivered,
        first_error=counter.first_error,
        client_errors=sink.errors,
    )


@dataclass
class LatencyResult:
    samples: int
    p50_ms: float
    p99_ms: float
    mean_ms: float
    max_ms: float
    achieved_rate: float
    errors: int
    undelivered: int
    client_errors: list[str] = field(default_factory=list)
    broker_cpu_pct: float = 0.0
    client_cpu_pct: float = 0.0
    other_cpu_pct: float = 0.0


def produce_latency(
    bootstrap: str, topic: str, size: int, acks: str, rate: int, seconds: float
) -> LatencyResult:
    """Send at a fixed rate; latency is produce() to delivery callback, in ms."""
    sink = ErrorSink()
    producer = Producer(
        client_config(
            bootstrap, sink, **{"acks": acks, "linger.ms": 0, "message.timeout.ms": 30000}
        )
    )
    producer.list_topics(topic, timeout=10)
    values = payloads(size)
    latencies: list[float] = []
    errors = 0

    def delivered(error: KafkaError | None, _message: Message, sent_at: float) -> None:
        nonlocal errors
        if error is None:
            latencies.append((time.perf_counter() - sent_at) * 1000)
        else:
            errors += 1

    # Warm up: the first requests pay for connection set-up and broker code paths.
    for i in range(50):
        producer.produce(topic, values[i & 15], partition=0)
    producer.flush(FLUSH_TIMEOUT)

    count = int(rate * seconds)
    interval = 1.0 / rate
    started = time.perf_counter()
    for i in range(count):
        target = started + i * interval
        while (wait := target - time.perf_counter()) > 0:
            producer.poll(max(wait, 0.001))  # serves delivery callbacks as they arrive
        sent_at = time.perf_counter()
        producer.produce(
            topic,
            values[i & 15],
            partition=0,
            on_delivery=functools.partial(delivered, sent_at=sent_at),
        )
        producer.poll(0)
    sending = time.perf_counter() - started
    undelivered = producer.flush(FLUSH_TIMEOUT)
    return LatencyResult(
        samples=len(latencies),
        p50_ms=percentile(latencies, 50),
        p99_ms=percentile(latencies, 99),
        mean_ms=statistics.fmean(latencies) if latencies else float("nan"),
        max_ms=max(latencies, default=float("nan")),
        achieved_rate=count / sending if sending else 0.0,
        errors=errors,
        undelivered=undelivered,
        client_errors=sink.errors,
    )


@dataclass
class ConsumeResult(Rates):
    records: int = 0
    value_bytes: int = 0
    seconds: float = 0.0
    passes: int = 0
    available_records: int = 0
    available_per_partition: list[int] = field(default_factory=list)
    errors: int = 0
    first_error: str | None = None
    client_errors: list[str] = field(default_factory=list)
    broker_cpu_pct: float = 0.0
    broker_cpu_s: float = 0.0
    client_cpu_pct: float = 0.0
    other_cpu_pct: float = 0.0


def read_pass(
    consumer: Consumer,
    topic: str,
    lows: dict[int, int],
    ends: dict[int, int],
    result: Any,
    expected: int,
    deadline: float = float("inf"),
) -> tuple[int, int]:
    """Read each partition from `lows` up to `ends` (exclusive) once: (records, value bytes).

    Errors are counted on `result` (its `errors` and `first_error`). `expected`
    records, when known, keeps consume() from asking for more than is left.
    """
    consumer.assign([TopicPartition(topic, p, low) for p, low in lows.items()])
    remaining = {p for p in lows if ends[p] > lows[p]}
    records = value_bytes = 0
    last_progress = time.monotonic()
    while remaining:
        # consume() waits for a full batch (or the timeout): never ask for more
        # than is left, or every pass would end with a wasted wait.
        wanted = max(1, min(10000, expected - records)) if expected else 10000
        batch = consumer.consume(num_messages=wanted, timeout=0.5)
        now = time.monotonic()
        if batch:
            last_progress = now
        elif now - last_progress > STALL_SECONDS:
            raise RuntimeError(f"consume stalled; partitions left {sorted(remaining)}")
        for message in batch:
            error = message.error()
            if error is not None:
                result.errors += 1
                result.first_error = result.first_error or str(error)
                continue
            records += 1
            value_bytes += len(message)
            offset, partition = message.offset(), message.partition()
            if offset is not None and partition is not None and offset + 1 >= ends[partition]:
                remaining.discard(partition)
        if time.perf_counter() >= deadline:
            break
    consumer.unassign()
    return records, value_bytes


def consume(
    bootstrap: str, topic: str, partitions: int, seconds: float, *, single_pass: bool = False
) -> ConsumeResult:
    """assign() from the low watermark and read up to the high watermark, in passes.

    Without `single_pass`, one untimed warm-up pass is followed by timed passes until
    `seconds` have been spent (at least one). With it, one timed pass that stops at the
    high watermark or after `seconds`.
    """
    sink = ErrorSink()
    consumer = Consumer(
        client_config(
            bootstrap,
            sink,
            **{
                "group.id": f"odradek-bench-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "auto.offset.reset": "earliest",
                # A fetch parked at the high watermark at the end of a pass would hold
                # the next pass's first fetch for fetch.wait.max.ms (500 by default).
                "fetch.wait.max.ms": 10,
                # Past queued.min.messages (100k) librdkafka pauses fetching for this long
                # (1000 ms by default), which swamps a 100 B x 8 partition pass.
                "fetch.queue.backoff.ms": 10,
            },
        )
    )
    result = ConsumeResult()
    try:
        lows: list[int] = []
        highs: list[int] = []
        for index in range(partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, index), timeout=10)
            lows.append(low)
            highs.append(high)
        result.available_per_partition = [h - lo for lo, h in zip(lows, highs, strict=True)]
        result.available_records = sum(result.available_per_partition)
        if result.available_records == 0:
            raise RuntimeError(f"nothing to consume in {topic}")

        ends = dict(enumerate(highs))

        def one_pass(deadline: float) -> tuple[int, int]:
            return read_pass(
                consumer,
                topic,
                dict(enumerate(lows)),
                ends,
                result,
                result.available_records,
                deadline,
            )

        if single_pass:
            started = time.perf_counter()
            result.records, result.value_bytes = one_pass(started + seconds)
            result.seconds = time.perf_counter() - started
            result.passes = 1
        else:
            one_pass(float("inf"))
            started = time.perf_counter()
            while result.passes == 0 or time.perf_counter() - started < seconds:
                records, value_bytes = one_pass(float("inf"))
                result.records += records
                result.value_bytes += value_bytes
                result.passes += 1
            result.seconds = time.perf_counter() - started
    finally:
        consumer.close()
        result.client_errors = sink.errors
    return result
