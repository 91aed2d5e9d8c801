"""The soak load: idempotent producers, transactional producers and consumer group
members, each a thread driving one confluent-kafka (librdkafka) client and writing
down what the broker acknowledged. The clients reconnect by themselves across restarts."""

from __future__ import annotations

import enum
import logging
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

# librdkafka logs every refused connection while the broker is down: not shown.
CLIENT_LOG = logging.getLogger("soak.clients")
CLIENT_LOG.addHandler(logging.NullHandler())
CLIENT_LOG.propagate = False

# Reconnect and retry quickly once the broker is back.
CLIENT_DEFAULTS: dict[str, Any] = {
    "logger": CLIENT_LOG,
    "reconnect.backoff.ms": 50,
    "reconnect.backoff.max.ms": 200,
    "retry.backoff.ms": 50,
    "retry.backoff.max.ms": 200,
}
# How long a producer flush at the end, or a patient commit or abort, may take.
FINISH_TIMEOUT = 60.0
# How long a transactional producer keeps trying initTransactions before giving up.
INIT_TIMEOUT = 120.0


@dataclass
class LoadContext:
    """What all workers share: the broker address, which broker process is up (1 for
    the first start, one more per restart; acknowledgements are labelled with it), the
    stop signal, and a pause of offset commits (so that commits made after a restart do
    not hide one lost in the crash)."""

    bootstrap: str
    broker_run: int = 1
    stop: threading.Event = field(default_factory=threading.Event)
    commits_paused: threading.Event = field(default_factory=threading.Event)


def position(msg: Message) -> tuple[int, int]:
    """Partition and offset of a consumed or delivered message."""
    partition, offset = msg.partition(), msg.offset()
    assert partition is not None and offset is not None
    return partition, offset


class Worker(threading.Thread):
    """One client in a thread. ``errors`` holds what stopped it or what it could not get
    past (fatal client errors); ``last_progress`` is when the broker last acknowledged
    something to it."""

    def __init__(self, name: str, ctx: LoadContext) -> None:
        super().__init__(name=name, daemon=True)
        self.ctx = ctx
        self.errors: list[str] = []
        self.last_progress = 0.0

    def run(self) -> None:
        try:
            self.work()
        except Exception as exc:  # reported with the results, not lost in a thread
            self.errors.append(f"{self.name} stopped: {exc!r}")

    def work(self) -> None:
        raise NotImplementedError

    def on_client_error(self, error: KafkaError) -> None:
        if error.fatal():
            self.errors.append(f"{self.name}: fatal client error {error}")


class IdempotentWriter(Worker):
    """Writes records ``<name>:<seq>`` round-robin over the partitions (acks=all,
    enable.idempotence). ``acked`` maps each acknowledged sequence number to the broker
    run that acknowledged it."""

    def __init__(
        self, name: str, ctx: LoadContext, topic: str, partitions: int, per_second: float
    ) -> None:
        super().__init__(name, ctx)
        self.topic = topic
        self.partitions = partitions
        self.pause = 1.0 / per_second
        self.sent = 0
        self.failed = 0
        self.acked: dict[int, int] = {}
        self.first_ack_in_run: dict[int, float] = {}

    def work(self) -> None:
        producer = Producer(
            {
                "bootstrap.servers": self.ctx.bootstrap,
                "client.id": self.name,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 60000,
                "error_cb": self.on_client_error,
                **CLIENT_DEFAULTS,
            }
        )
        while not self.ctx.stop.is_set():
            value = f"{self.name}:{self.sent}".encode()
            try:
                producer.produce(
                    self.topic,
                    value=value,
                    partition=self.sent % self.partitions,
                    on_delivery=self._delivered,
                )
            except BufferError:
                producer.poll(0.05)
                continue
            self.sent += 1
            producer.poll(0)
            time.sleep(self.pause)
        unsent = producer.flush(FINISH_TIMEOUT)
        if unsent:
            self.errors.append(f"{self.name}: {unsent} records undelivered after the load stopped")

    def _delivered(self, error: KafkaError | None, msg: Message) -> None:
        if error is not None:
            self.failed += 1
            return
        now = time.monotonic()
        run = self.ctx.broker_run
        self.acked[int((msg.value() or b"").rsplit(b":", 1)[1])] = run
        self.first_ack_in_run.setdefault(run, now)
        self.last_progress = now


class Outcome(enum.Enum):
    COMMITTED = "committed"
    ABORTED = "aborted"
    # the commit or abort call did not return success: it may land either way, whole
    IN_DOUBT = "in doubt"


@dataclass(frozen=True)
class Transaction:
    number: int
    size: int
    outcome: Outcome
    broker_run: int


class TransactionalWriter(Worker):
    """Runs transactions of 1 to 10 records ``<tid>:<number>:<index>`` spread over the
    partitions, committing most and aborting some. A commit or abort is retried for
    ``patience`` seconds; then the transaction is in doubt and the producer is replaced
    by a new one with the same transactional.id, whose initTransactions fences the old
    one and settles what it left open."""

    def __init__(
        self,
        name: str,
        ctx: LoadContext,
        topic: str,
        partitions: int,
        abort_ratio: float,
        patience: float,
        seed: int,
    ) -> None:
        super().__init__(name, ctx)
        self.topic = topic
        self.partitions = partitions
        self.abort_ratio = abort_ratio
        self.patience = patience
        self.random = random.Random(seed)
        self.transactions: list[Transaction] = []
        self.replaced = 0

    def work(self) -> None:
        producer = self._new_producer()
        number = 0
        while not self.ctx.stop.is_set():
            number += 1
            size = self.random.randint(1, 10)
            commit = self.random.random() >= self.abort_ratio
            outcome = self._transaction(producer, number, size, commit)
            self.transactions.append(Transaction(number, size, outcome, self.ctx.broker_run))
            if outcome is Outcome.IN_DOUBT:
                self.replaced += 1
                producer.purge()
                producer = self._new_producer()
            else:
                self.last_progress = time.monotonic()
            time.sleep(0.02)

    def _new_producer(self) -> Producer:
        deadline = time.monotonic() + INIT_TIMEOUT
        while True:
            producer = Producer(
                {
                    "bootstrap.servers": self.ctx.bootstrap,
                    "client.id": self.name,
                    "transactional.id": self.name,
                    "transaction.timeout.ms": 30000,
                    "linger.ms": 5,
                    "message.timeout.ms": 30000,
                    "error_cb": self.on_client_error,
                    **CLIENT_DEFAULTS,
                }
            )
            while True:
                try:
                    producer.init_transactions(10)
                    return producer
                except KafkaException as exc:
                    if time.monotonic() > deadline:
                        raise
                    if not exc.args[0].retriable():
                        break  # a fresh producer, then try again
            producer.purge()

    def _transaction(self, producer: Producer, number: int, size: int, commit: bool) -> Outcome:
        try:
            producer.begin_transaction()
            for index in range(size):
                producer.produce(
                    self.topic,
                    value=f"{self.name}:{number}:{index}".encode(),
                    partition=(number + index) % self.partitions,
                )
            producer.poll(0)
        except KafkaException as exc:
            if not exc.args[0].txn_requires_abort():
                return Outcome.IN_DOUBT
            commit = False
        return self._finish(producer, commit)

    def _finish(self, producer: Producer, commit: bool) -> Outcome:
        """Commit (or abort) until the broker answers; an abortable commit failure turns
        into an abort. Only a successful call counts as an outcome."""
        deadline = time.monotonic() + self.patience
        call_timeout = min(10.0, self.patience)
        while True:
            try:
                if commit:
                    producer.commit_transaction(call_timeout)
                    return Outcome.COMMITTED
                producer.abort_transaction(call_timeout)
                return Outcome.ABORTED
            except KafkaException as exc:
                error: KafkaError = exc.args[0]
                if commit and error.txn_requires_abort():
                    commit = False
                elif not error.retriable() or time.monotonic() > deadline:
                    return Outcome.IN_DOUBT


@dataclass(frozen=True)
class Commit:
    """An offset commit the broker acknowledged."""

    group: str
    partition: int
    offset: int
    at: float  # time.monotonic() when acknowledged
    broker_run: int


class GroupMember(Worker):
    """A consumer group member reading ``topic`` and committing, every
    ``commit_interval`` seconds, the position after the last record it read of each
    partition; ``commits`` lists the acknowledged commits."""

    def __init__(
        self,
        name: str,
        ctx: LoadContext,
        group: str,
        protocol: str,
        topic: str,
        commit_interval: float,
    ) -> None:
        super().__init__(name, ctx)
        self.group = group
        self.protocol = protocol
        self.topic = topic
        self.commit_interval = commit_interval
        self.consumed = 0
        self.commits: list[Commit] = []
        self.pending: dict[int, int] = {}

    def _config(self) -> dict[str, Any]:
        config: dict[str, Any] = {
            "bootstrap.servers": self.ctx.bootstrap,
            "client.id": self.name,
            "group.id": self.group,
            "group.protocol": self.protocol,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "error_cb": self.on_client_error,
            **CLIENT_DEFAULTS,
        }
        if self.protocol == "classic":
            config.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
        return config

    def work(self) -> None:
        consumer = Consumer(self._config())
        consumer.subscribe([self.topic], on_revoke=self._forget, on_lost=self._forget)
        next_commit = time.monotonic() + self.commit_interval
        try:
            while not self.ctx.stop.is_set():
                for msg in consumer.consume(500, 0.1):
                    if msg.error() is None:
                        partition, offset = position(msg)
                        self.pending[partition] = offset + 1
                        self.consumed += 1
                if (
                    self.pending
                    and time.monotonic() >= next_commit
                    and not self.ctx.commits_paused.is_set()
                ):
                    self._commit(consumer)
                    next_commit = time.monotonic() + self.commit_interval
        finally:
            consumer.close()

    def _forget(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # positions of partitions taken away must not be committed by this member later
        for tp in partitions:
            self.pending.pop(tp.partition, None)

    def _commit(self, consumer: Consumer) -> None:
        offsets = [TopicPartition(self.topic, p, o) for p, o in self.pending.items()]
        try:
            answer = consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException:
            return  # not acknowledged; tried again at the next interval
        now = time.monotonic()
        for tp in answer or []:
            if tp.error is None:
                self.commits.append(
                    Commit(self.group, tp.partition, tp.offset, now, self.ctx.broker_run)
                )
                self.last_progress = now
                if self.pending.get(tp.partition) == tp.offset:
                    del self.pending[tp.partition]


@dataclass
class LoadPlan:
    data_topic: str = "soak-data"
    txn_topic: str = "soak-txn"
    partitions: int = 3
    idempotent_producers: int = 2
    records_per_second: float = 300.0  # per idempotent producer, at most
    transactional_producers: int = 2
    abort_ratio: float = 0.25
    # seconds each transactional producer retries a commit or abort (one per producer,
    # in turn): a short one leaves transactions in doubt when a kill hits them
    patience: tuple[float, ...] = (FINISH_TIMEOUT, 1.0)
    # one group per protocol, each with this many members
    group_protocols: tuple[str, ...] = ("classic", "consumer")
    members_per_group: int = 2
    commit_interval: float = 0.3


class Load:
    """Every worker of a plan, against one broker."""

    def __init__(self, ctx: LoadContext, plan: LoadPlan, seed: int) -> None:
        self.ctx = ctx
        self.plan = plan
        self.writers = [
            IdempotentWriter(
                f"soak-idem-{i}", ctx, plan.data_topic, plan.partitions, plan.records_per_second
            )
            for i in range(plan.idempotent_producers)
        ]
        self.txn_writers = [
            TransactionalWriter(
                f"soak-txn-{i}",
                ctx,
                plan.txn_topic,
                plan.partitions,
                plan.abort_ratio,
                plan.patience[i % len(plan.patience)],
                seed + i,
            )
            for i in range(plan.transactional_producers)
        ]
        self.members = [
            GroupMember(
                f"soak-{protocol}-member-{i}",
                ctx,
                f"soak-group-{protocol}",
                protocol,
                plan.data_topic,
                plan.commit_interval,
            )
            for protocol in plan.group_protocols
            for i in range(plan.members_per_group)
        ]

    @property
    def groups(self) -> list[str]:
        return sorted({m.group for m in self.members})

    def workers(self) -> list[Worker]:
        return [*self.writers, *self.txn_writers, *self.members]

    def start(self) -> None:
        for worker in self.workers():
            worker.start()

    def idle_since(self, moment: float) -> list[str]:
        """Workers the broker acknowledged nothing to since ``moment``."""
        return [w.name for w in self.workers() if w.last_progress <= moment]

    def stop(self, timeout: float) -> list[str]:
        """Stop every worker; the names of those still running after ``timeout``."""
        self.ctx.stop.set()
        deadline = time.monotonic() + timeout
        for worker in self.workers():
            worker.join(max(0.0, deadline - time.monotonic()))
        return [w.name for w in self.workers() if w.is_alive()]

    def errors(self) -> list[str]:
        return [error for w in self.workers() for error in w.errors]
