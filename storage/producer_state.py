"""Per-partition producer state for idempotent and transactional appends.

For each producer id: its epoch and the metadata of its last five batches, so a
retried batch is answered with its original offset instead of being written
twice. The checks follow Kafka's rules for appends from clients:

- a batch equal (epoch, first and last sequence) to a cached one is a duplicate;
- an epoch older than the known one is INVALID_PRODUCER_EPOCH (47);
- a new epoch must start at sequence 0, unless the producer was unknown;
- within an epoch the first sequence must follow the last one (wrapping at
  2^31 - 1), else OUT_OF_ORDER_SEQUENCE_NUMBER (45); a producer with no state
  (new, expired or removed with its records) may start at any sequence.

The table is rebuilt after a restart from a snapshot plus the batch headers
written after it, so nothing here is written on the append path.
"""

from __future__ import annotations

import json
import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from odradek.protocol.batch import BatchHeader

CACHED_BATCHES = 5
MAX_SEQUENCE = (1 << 31) - 1
SNAPSHOT_FILE = "producer-state.json"

INVALID_PRODUCER_EPOCH = 47
OUT_OF_ORDER_SEQUENCE_NUMBER = 45


class ProducerStateError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class DuplicateBatch(Exception):  # noqa: N818 - a signal, not a failure
    """The batch was written before; answer with where it went."""

    def __init__(self, first_offset: int, last_offset: int) -> None:
        super().__init__(f"duplicate of the batch at offset {first_offset}")
        self.first_offset = first_offset
        self.last_offset = last_offset


@dataclass(slots=True)
class CachedBatch:
    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    last_timestamp: int = -1
    batches: deque[CachedBatch] = field(default_factory=lambda: deque(maxlen=CACHED_BATCHES))
    # first offset of this producer's open transaction on this partition, or -1
    transaction_first_offset: int = -1
    # of the last transaction marker (-1 before any; Odradek's coordinators write 0)
    coordinator_epoch: int = -1

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else -1


def _in_sequence(last: int, first: int) -> bool:
    return first == last + 1 or (first == 0 and last == MAX_SEQUENCE)


@dataclass(frozen=True, slots=True)
class AbortedTransaction:
    producer_id: int
    first_offset: int
    last_offset: int  # the offset of the ABORT marker


class ProducerStateTable:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        self.aborted: list[AbortedTransaction] = []

    def check(self, header: BatchHeader) -> None:
        """Raise DuplicateBatch or ProducerStateError; return if the batch may be appended."""
        if header.producer_id < 0:
            return
        entry = self.producers.get(header.producer_id)
        if entry is None:
            return
        if header.base_sequence >= 0 and header.producer_epoch == entry.epoch:
            for cached in entry.batches:
                if (
                    cached.first_sequence == header.base_sequence
                    and cached.last_sequence == header.last_sequence
                ):
                    raise DuplicateBatch(cached.first_offset, cached.last_offset)
        if header.producer_epoch < entry.epoch:
            raise ProducerStateError(
                INVALID_PRODUCER_EPOCH,
                f"epoch {header.producer_epoch} is older than the current {entry.epoch}",
            )
        if header.base_sequence < 0:
            return
        if header.producer_epoch > entry.epoch:
            if header.base_sequence != 0:
                raise ProducerStateError(
                    OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"a new epoch must start at sequence 0, not {header.base_sequence}",
                )
        elif entry.batches and not _in_sequence(entry.last_sequence, header.base_sequence):
            raise ProducerStateError(
                OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"sequence {header.base_sequence} does not follow {entry.last_sequence}",
            )

    def record(self, header: BatchHeader, control_commit: bool | None = None) -> None:
        """Remember an appended batch (its header carries the assigned base offset).

        For a control batch, `control_commit` says whether it commits (True) or
        aborts (False) the producer's open transaction on this partition.
        """
        if header.producer_id < 0:
            return
        entry = self.producers.get(header.producer_id)
        open_since = entry.transaction_first_offset if entry is not None else -1
        if entry is None or header.producer_epoch > entry.epoch:
            coordinator_epoch = entry.coordinator_epoch if entry is not None else -1
            entry = ProducerEntry(epoch=header.producer_epoch, coordinator_epoch=coordinator_epoch)
            self.producers[header.producer_id] = entry
        entry.last_timestamp = max(entry.last_timestamp, header.max_timestamp)
        if header.is_control:
            entry.coordinator_epoch = 0
            if control_commit is False and open_since >= 0:
                self.aborted.append(
                    AbortedTransaction(header.producer_id, open_since, header.base_offset)
                )
            entry.transaction_first_offset = -1
            return
        if header.is_transactional and entry.transaction_first_offset < 0:
            entry.transaction_first_offset = header.base_offset
        if header.base_sequence >= 0:
            entry.batches.append(
                CachedBatch(
                    header.base_sequence,
                    header.last_sequence,
                    header.base_offset,
                    header.last_offset,
                )
            )

    def last_stable_offset(self, high_watermark: int) -> int:
        """The first offset of the earliest open transaction, else the high watermark."""
        first_open = [
            e.transaction_first_offset
            for e in self.producers.values()
            if e.transaction_first_offset >= 0
        ]
        return min(first_open, default=high_watermark)

    def aborted_between(self, start: int, end: int) -> list[AbortedTransaction]:
        """Aborted transactions with data in [start, end)."""
        return [a for a in self.aborted if a.last_offset >= start and a.first_offset < end]

    def expire(self, now_ms: int, expiration_ms: int) -> int:
        stale = [
            pid
            for pid, entry in self.producers.items()
            if entry.transaction_first_offset < 0
            and entry.last_timestamp >= 0
            and now_ms - entry.last_timestamp > expiration_ms
        ]
        for pid in stale:
            del self.producers[pid]
        return len(stale)

    def drop_below(self, log_start_offset: int) -> None:
        """Producers whose every cached batch was removed with its segment go away."""
        for pid in [
            pid
            for pid, entry in self.producers.items()
            if entry.batches and entry.batches[-1].last_offset < log_start_offset
        ]:
            del self.producers[pid]
        self.aborted = [a for a in self.aborted if a.last_offset >= log_start_offset]

    def save(self, directory: Path, next_offset: int) -> None:
        state: dict[str, Any] = {
            "next_offset": next_offset,
            "producers": {
                str(pid): {
                    "epoch": e.epoch,
                    "last_timestamp": e.last_timestamp,
                    "transaction_first_offset": e.transaction_first_offset,
                    "coordinator_epoch": e.coordinator_epoch,
                    "batches": [
                        [b.first_sequence, b.last_sequence, b.first_offset, b.last_offset]
                        for b in e.batches
                    ],
                }
                for pid, e in self.producers.items()
            },
            "aborted": [[a.producer_id, a.first_offset, a.last_offset] for a in self.aborted],
        }
        tmp = directory / (SNAPSHOT_FILE + ".tmp")
        with open(tmp, "w") as out:
            json.dump(state, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, directory / SNAPSHOT_FILE)

    @classmethod
    def load(cls, directory: Path) -> tuple[ProducerStateTable, int]:
        """The saved table and the offset it is valid up to (0 and empty if none)."""
        table = cls()
        path = directory / SNAPSHOT_FILE
        try:
            state = json.loads(path.read_text())
            for pid, e in state["producers"].items():
                entry = ProducerEntry(
                    epoch=int(e["epoch"]),
                    last_timestamp=int(e["last_timestamp"]),
                    transaction_first_offset=int(e["transaction_first_offset"]),
                    coordinator_epoch=int(e.get("coordinator_epoch", -1)),
                )
                entry.batches.extend(CachedBatch(*map(int, b)) for b in e["batches"])
                table.producers[int(pid)] = entry
            table.aborted = [AbortedTransaction(*map(int, a)) for a in state.get("aborted", [])]
            return table, int(state["next_offset"])
        except (OSError, ValueError, KeyError, TypeError):
            return cls(), 0
