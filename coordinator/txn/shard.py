"""The transaction coordinator shard for one `__transaction_state` partition.

Every state change is a record (the transactional id's whole metadata) that
`replay` applies, live and when loading. Ending a transaction takes two
records around the markers the runtime writes in between:

    Ongoing -> PrepareCommit | PrepareAbort   (record; then markers everywhere)
            -> CompleteCommit | CompleteAbort  (record, once every marker is in)

A shard loaded with a transaction in Prepare* finishes it: the markers are
written again (they are idempotent for readers) and the Complete* record
follows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from odradek.coordinator.registry import RecordType, Registry, into_state
from odradek.coordinator.runtime import Record, Result, ShardRuntime
from odradek.coordinator.txn import records as rec
from odradek.coordinator.txn.records import (
    COMPLETE_ABORT,
    COMPLETE_COMMIT,
    DEAD,
    EMPTY,
    ONGOING,
    PREPARE_ABORT,
    PREPARE_COMMIT,
    PREPARE_EPOCH_FENCE,
)

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
INVALID_PRODUCER_ID_MAPPING = 49
INVALID_TRANSACTION_TIMEOUT = 50
CONCURRENT_TRANSACTIONS = 51
TRANSACTIONAL_ID_NOT_FOUND = 105
PRODUCER_FENCED = 90
TRANSACTION_ABORTABLE = 120

MAX_EPOCH = 32766  # Short.MAX_VALUE - 1: an epoch of 32767 could never be bumped

TopicPartition = tuple[str, int]


@dataclass
class TxnMetadata:
    transactional_id: str
    producer_id: int
    epoch: int
    timeout_ms: int
    state: int = EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    # memory only, as in Kafka: lets a retried epoch bump get its answer again
    last_producer_id: int = -1
    last_epoch: int = -1


@dataclass(frozen=True)
class MarkerPlan:
    """What the runtime must do between the Prepare* and Complete* records."""

    transactional_id: str
    producer_id: int
    epoch: int
    commit: bool
    partitions: frozenset[TopicPartition]
    # an EndTxn of transactions version 2 bumped the epoch: past the last one, the
    # producer goes on under a new producer id once the transaction completes
    bumped: bool = False


@dataclass
class TxnConfig:
    max_timeout_ms: int = 900000
    transactional_id_expiration_ms: int = 604800000


class TxnShard:
    def __init__(self, runtime: ShardRuntime | None, config: TxnConfig) -> None:
        self.runtime = runtime
        self.config = config
        self.transactions: dict[str, TxnMetadata] = {}
        # (last producer id, last epoch) for the record being written: as in Kafka, the
        # last epoch is kept only for a bump the producer itself asked for (KIP-360), so
        # only that producer's retry gets the bumped epoch again; -1 otherwise
        self._last_epoch_hint: dict[str, tuple[int, int]] = {}

    # -- replay --------------------------------------------------------------------

    def replay(self, offset: int, key: bytes | None, value: bytes | None, producer_id: int) -> None:
        if key is None:
            return  # every record here has a key
        REGISTRY.replay(self, offset, key, value, producer_id)

    def _apply(self, transactional_id: str, value: rec.TxnValue | None) -> None:
        if value is None:
            self.transactions.pop(transactional_id, None)
            return
        meta = self.transactions.get(transactional_id)
        if meta is None:
            meta = TxnMetadata(
                transactional_id, value.producer_id, value.producer_epoch, value.timeout_ms
            )
            self.transactions[transactional_id] = meta
        hint = self._last_epoch_hint.pop(transactional_id, None)
        if hint is not None:
            meta.last_producer_id, meta.last_epoch = hint
        elif meta.producer_id != value.producer_id or meta.epoch != value.producer_epoch:
            # loading: not persisted, so a retried bump spanning a restart is fenced
            meta.last_producer_id, meta.last_epoch = meta.producer_id, -1
        meta.producer_id = value.producer_id
        meta.epoch = value.producer_epoch
        meta.timeout_ms = value.timeout_ms
        meta.state = value.state
        meta.partitions = {(t, p) for t, parts in value.partitions.items() for p in parts}
        meta.start_ms = value.start_ms
        meta.last_update_ms = value.last_update_ms

    def replay_control(self, producer_id: int, commit: bool) -> None:
        """No transactional records are written to this topic."""

    def begin_load(self) -> None:
        pass

    def on_loaded(self) -> None:
        """Prepare* transactions are finished by the runtime (see `unfinished`)."""

    def unfinished(self) -> Result[list[MarkerPlan]]:
        plans = [
            MarkerPlan(
                m.transactional_id,
                m.producer_id,
                m.epoch,
                m.state == PREPARE_COMMIT,
                frozenset(m.partitions),
            )
            for m in self.transactions.values()
            if m.state in (PREPARE_COMMIT, PREPARE_ABORT)
        ]
        return Result([], plans)

    # -- records -------------------------------------------------------------------

    def _record(self, meta: TxnMetadata, **changes: Any) -> Record:
        """The record for `meta` with `changes` applied (replay makes them real)."""
        state = changes.get("state", meta.state)
        partitions = changes.get("partitions", meta.partitions)
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        value = rec.TxnValue(
            producer_id=changes.get("producer_id", meta.producer_id),
            producer_epoch=changes.get("epoch", meta.epoch),
            timeout_ms=changes.get("timeout_ms", meta.timeout_ms),
            state=state,
            partitions=by_topic,
            last_update_ms=changes.get("now", meta.last_update_ms),
            start_ms=changes.get("start_ms", meta.start_ms),
        )
        return TRANSACTION.record(meta.transactional_id, value)

    # -- InitProducerId --------------------------------------------------------------

    def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        expected_pid: int,
        expected_epoch: int,
        new_producer_id: Any,
        now: int,
    ) -> Result[Any]:
        """Answers (error, producer id, epoch), or a MarkerPlan when an open
        transaction must be aborted first (the caller then answers
        CONCURRENT_TRANSACTIONS and the client retries)."""
        self._last_epoch_hint.clear()
        if timeout_ms <= 0 or timeout_ms > self.config.max_timeout_ms:
            return Result([], (INVALID_TRANSACTION_TIMEOUT, -1, -1))
        meta = self.transactions.get(transactional_id)
        if meta is None:
            pid = new_producer_id()
            fresh = TxnMetadata(transactional_id, pid, -1, timeout_ms)
            record = self._record(fresh, epoch=0, state=EMPTY, partitions=set(), now=now)
            return Result([record], (NONE, pid, 0))
        expected = expected_pid >= 0
        if expected and not (
            expected_pid == meta.producer_id
            or (expected_pid == meta.last_producer_id and expected_epoch >= MAX_EPOCH)
        ):
            return Result([], (PRODUCER_FENCED, -1, -1))
        if meta.state in (PREPARE_COMMIT, PREPARE_ABORT, PREPARE_EPOCH_FENCE):
            return Result([], (CONCURRENT_TRANSACTIONS, -1, -1))
        if meta.state == ONGOING:
            record, plan = self._fence_and_abort(meta, now)
            return Result([record], plan)
        if meta.epoch >= MAX_EPOCH and (not expected or expected_epoch == meta.epoch):
            pid, epoch = new_producer_id(), 0
            last_epoch = meta.epoch if expected else -1
        elif not expected:
            pid, epoch, last_epoch = meta.producer_id, meta.epoch + 1, -1
        elif expected_epoch == meta.epoch:
            pid, epoch, last_epoch = meta.producer_id, meta.epoch + 1, meta.epoch
        elif expected_epoch == meta.last_epoch:
            # a retry of the bump this producer made: the same answer, no new bump
            return Result([], (NONE, meta.producer_id, meta.epoch))
        else:
            return Result([], (PRODUCER_FENCED, -1, -1))
        self._last_epoch_hint[transactional_id] = (meta.producer_id, last_epoch)
        record = self._record(
            meta,
            producer_id=pid,
            epoch=epoch,
            timeout_ms=timeout_ms,
            state=EMPTY,
            partitions=set(),
            now=now,
            start_ms=-1,
        )
        return Result([record], (NONE, pid, epoch))

    def _fence_and_abort(self, meta: TxnMetadata, now: int) -> tuple[Record, MarkerPlan]:
        """Bump the epoch so the old producer is fenced, and abort its transaction."""
        # up to Short.MAX_VALUE: a fenced epoch is never handed to a producer
        epoch = min(meta.epoch + 1, MAX_EPOCH + 1)
        self._last_epoch_hint[meta.transactional_id] = (meta.producer_id, -1)
        record = self._record(meta, epoch=epoch, state=PREPARE_ABORT, now=now)
        plan = MarkerPlan(
            meta.transactional_id, meta.producer_id, epoch, False, frozenset(meta.partitions)
        )
        return record, plan

    # -- AddPartitionsToTxn / AddOffsetsToTxn -------------------------------------------

    def check_producer(self, transactional_id: str, producer_id: int, epoch: int) -> int:
        meta = self.transactions.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return INVALID_PRODUCER_ID_MAPPING
        if epoch != meta.epoch:
            return PRODUCER_FENCED
        if meta.state in (PREPARE_COMMIT, PREPARE_ABORT, PREPARE_EPOCH_FENCE):
            return CONCURRENT_TRANSACTIONS
        if meta.state == DEAD:
            return INVALID_PRODUCER_ID_MAPPING
        return NONE

    def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: set[TopicPartition],
        now: int,
    ) -> Result[int]:
        code = self.check_producer(transactional_id, producer_id, epoch)
        if code != NONE:
            return Result([], code)
        meta = self.transactions[transactional_id]
        if meta.state == ONGOING and partitions <= meta.partitions:
            return Result([], NONE)
        start = meta.start_ms if meta.state == ONGOING else now
        record = self._record(
            meta, state=ONGOING, partitions=meta.partitions | partitions, now=now, start_ms=start
        )
        return Result([record], NONE)

    def verify_partitions(
        self, transactional_id: str, producer_id: int, epoch: int, partitions: set[TopicPartition]
    ) -> Result[dict[TopicPartition, int]]:
        """AddPartitionsToTxn v4+ with verify_only: whether each partition is in the
        producer's transaction (TRANSACTION_ABORTABLE if not), nothing added."""
        meta = self.transactions.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            code = INVALID_PRODUCER_ID_MAPPING
        elif meta.epoch != epoch:
            code = PRODUCER_FENCED
        elif meta.state in (PREPARE_COMMIT, PREPARE_ABORT):
            code = CONCURRENT_TRANSACTIONS
        else:
            in_it = meta.partitions
            return Result(
                [], {tp: NONE if tp in in_it else TRANSACTION_ABORTABLE for tp in partitions}
            )
        return Result([], {tp: code for tp in partitions})

    def in_transaction(
        self, transactional_id: str, producer_id: int, epoch: int, partition: TopicPartition
    ) -> bool:
        meta = self.transactions.get(transactional_id)
        return (
            meta is not None
            and meta.producer_id == producer_id
            and meta.epoch == epoch
            and meta.state == ONGOING
            and partition in meta.partitions
        )

    # -- EndTxn ----------------------------------------------------------------------

    def prepare_end(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        commit: bool,
        now: int,
        bump: bool = False,
    ) -> Result[Any]:
        """Answers an error code, or a MarkerPlan to carry out. With `bump`
        (transactions version 2, EndTxn v5+) every end moves the producer to a new
        epoch, and the markers carry it."""
        meta = self.transactions.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return Result([], INVALID_PRODUCER_ID_MAPPING)
        if bump:
            return self._prepare_end_bumping(meta, epoch, commit, now)
        if epoch != meta.epoch:
            return Result([], PRODUCER_FENCED)
        state = meta.state
        if state == ONGOING:
            record = self._record(meta, state=PREPARE_COMMIT if commit else PREPARE_ABORT, now=now)
            plan = MarkerPlan(
                transactional_id, producer_id, epoch, commit, frozenset(meta.partitions)
            )
            return Result([record], plan)
        done = COMPLETE_COMMIT if commit else COMPLETE_ABORT
        preparing = PREPARE_COMMIT if commit else PREPARE_ABORT
        if state == done:
            return Result([], NONE)
        if state in (preparing, PREPARE_EPOCH_FENCE):
            return Result([], CONCURRENT_TRANSACTIONS)
        return Result([], INVALID_TXN_STATE)

    def _prepare_end_bumping(
        self, meta: TxnMetadata, epoch: int, commit: bool, now: int
    ) -> Result[Any]:
        """EndTxn of transactions version 2, as Kafka 4.4: an abort is also taken with
        nothing in the transaction (a Produce the client sent may have failed), and a
        retry with the epoch before the bump gets the same answer again."""
        state = meta.state
        preparing = PREPARE_COMMIT if commit else PREPARE_ABORT
        if epoch == meta.epoch:
            if state == ONGOING or (
                not commit and state in (EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT)
            ):
                partitions = meta.partitions if state == ONGOING else set()
                start = meta.start_ms if state == ONGOING else now
                # an exhausted epoch goes up once more, to fence the old producer id; the
                # id changes when the transaction completes (complete_end)
                new_epoch = epoch + 1
                # a retry with the old epoch is told the outcome (a fence clears this)
                self._last_epoch_hint[meta.transactional_id] = (meta.producer_id, epoch)
                record = self._record(
                    meta,
                    epoch=new_epoch,
                    state=preparing,
                    partitions=partitions,
                    now=now,
                    start_ms=start,
                )
                plan = MarkerPlan(
                    meta.transactional_id,
                    meta.producer_id,
                    new_epoch,
                    commit,
                    frozenset(partitions),
                    bumped=True,
                )
                return Result([record], plan)
            if state in (PREPARE_COMMIT, PREPARE_ABORT, PREPARE_EPOCH_FENCE):
                return Result([], CONCURRENT_TRANSACTIONS)
            return Result([], INVALID_TXN_STATE)
        if epoch == meta.last_epoch and meta.last_producer_id == meta.producer_id:
            # a retry of the end that bumped the epoch (not of one a fence bumped)
            if state == (COMPLETE_COMMIT if commit else COMPLETE_ABORT):
                return Result([], NONE)
            if state in (preparing, PREPARE_EPOCH_FENCE):
                return Result([], CONCURRENT_TRANSACTIONS)
            return Result([], INVALID_TXN_STATE)
        return Result([], PRODUCER_FENCED)

    def complete_end(self, plan: MarkerPlan, now: int, new_producer_id: Any = None) -> Result[int]:
        """The Complete* record. A producer whose epoch is exhausted (transactions
        version 2 bumps it at every end) continues under a new producer id."""
        meta = self.transactions.get(plan.transactional_id)
        if meta is None or meta.state not in (PREPARE_COMMIT, PREPARE_ABORT):
            return Result([], NONE)
        state = COMPLETE_COMMIT if plan.commit else COMPLETE_ABORT
        changes: dict[str, Any] = {}
        if plan.bumped and meta.epoch > MAX_EPOCH and new_producer_id is not None:
            changes = {"producer_id": new_producer_id(), "epoch": 0}
            self._last_epoch_hint[meta.transactional_id] = (meta.producer_id, -1)
        record = self._record(meta, state=state, partitions=set(), now=now, **changes)
        return Result([record], NONE)

    def producer_of(self, transactional_id: str) -> Result[tuple[int, int]]:
        """The id's producer id and epoch now, (-1, -1) if it has none."""
        meta = self.transactions.get(transactional_id)
        return Result([], (-1, -1) if meta is None else (meta.producer_id, meta.epoch))

    # -- timeouts and expiry --------------------------------------------------------------

    def abort_timed_out(self, now: int) -> Result[list[MarkerPlan]]:
        """Ongoing transactions past their timeout: fence the producer and abort."""
        records: list[Record] = []
        plans = []
        for meta in list(self.transactions.values()):
            if meta.state == ONGOING and now - meta.start_ms > meta.timeout_ms:
                record, plan = self._fence_and_abort(meta, now)
                records.append(record)
                plans.append(plan)
        return Result(records, plans)

    def expire_idle(self, now: int) -> Result[None]:
        records: list[Record] = [
            TRANSACTION.tombstone(m.transactional_id)
            for m in self.transactions.values()
            if m.state in (EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT)
            and now - m.last_update_ms > self.config.transactional_id_expiration_ms
        ]
        return Result(records)

    # -- describe and list -------------------------------------------------------------

    def describe(self, transactional_id: str) -> Result[TxnMetadata | None]:
        return Result([], self.transactions.get(transactional_id))

    def list_all(self) -> Result[list[TxnMetadata]]:
        return Result([], list(self.transactions.values()))


# `__transaction_state` has one record type: a transactional id's whole metadata
TRANSACTION = RecordType(0, "Transaction", rec.KEY, rec.VALUE, TxnShard._apply, into_state)
REGISTRY: Registry[TxnShard] = Registry("transaction", (TRANSACTION,))
