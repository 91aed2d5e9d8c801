"""A partition on this node: its log (if it has a replica here), its producers' state,
its place in a cluster (`replication`), and the futures that wake the fetches and
produces waiting on it."""

from __future__ import annotations

import asyncio
import struct
from typing import TYPE_CHECKING, Protocol

from odradek.broker.dataplane.log_dirs import LogDir
from odradek.protocol.batch import iter_records
from odradek.protocol.errors import ErrorCode
from odradek.storage import PartitionLog
from odradek.storage.producer_state import ProducerStateTable

if TYPE_CHECKING:
    from odradek.broker.dataplane.topics import Topic

LEADER_EPOCH = 0  # one node of its own leads every partition, forever


class NotHosted(LookupError):
    """The partition has no replica on this node (a cluster places it elsewhere)."""


class Partition:
    """One partition's log plus the wake-up signal for parked fetches.

    In a cluster a node knows every partition but keeps a log only for those it has a
    replica of (`hosted`); `replication` is the replica's state there (None on one
    node of its own, where this node leads at epoch 0 and the log end is the high
    watermark). A partition whose log directory failed is `offline`: still hosted,
    serving nothing."""

    def __init__(
        self,
        topic: Topic,
        index: int,
        log: PartitionLog | None,
        log_dir: LogDir | None = None,
        offline: bool = False,
    ) -> None:
        self.topic = topic
        self.index = index
        self._log = log
        self.log_dir = log_dir
        self.offline = offline
        self.producers = _load_producer_state(log) if log is not None else ProducerStateTable()
        self._arrival: asyncio.Future[None] | None = None
        self._replica_arrival: asyncio.Future[None] | None = None
        self.replication: Replication | None = None

    @property
    def log(self) -> PartitionLog:
        if self._log is None:
            raise NotHosted(f"{self.topic.name}-{self.index} has no replica on this node")
        return self._log

    @property
    def hosted(self) -> bool:
        return self._log is not None or self.offline

    @property
    def dir_name(self) -> str:
        return f"{self.topic.name}-{self.index}"

    @property
    def unavailable_error(self) -> ErrorCode:
        """What a request for a partition not led here gets: KAFKA_STORAGE_ERROR when
        its log directory failed, as on Kafka, else NOT_LEADER_OR_FOLLOWER."""
        return ErrorCode.kafka_storage_error if self.offline else ErrorCode.not_leader_or_follower

    def go_offline(self) -> None:
        """Its log directory failed: drop the log's files (unflushed, unmarked: the next
        start recovers it) and wake the fetches parked on it."""
        if self._log is not None:
            self._log.abandon()
        self.offline = True
        self.data_arrived()

    def replace_log(self, new: PartitionLog, log_dir: LogDir) -> None:
        """The replica moved to another log directory (the caller removes the old log)."""
        self._log = new
        self.log_dir = log_dir

    @property
    def high_watermark(self) -> int:
        """What every in-sync replica has: consumers read below it."""
        replication = self.replication
        if replication is None:
            return self.log.log_end_offset
        return replication.high_watermark

    @property
    def led_here(self) -> bool:
        """This node takes the partition's writes and serves its consumers."""
        if self.offline:
            return False
        replication = self.replication
        return replication is None or (replication.is_leader and self._log is not None)

    @property
    def leader_epoch(self) -> int:
        replication = self.replication
        return LEADER_EPOCH if replication is None else replication.leader_epoch

    def reload_producer_state(self) -> None:
        """After the log was cut (truncate_to): the producers as the log now has them."""
        self.producers = _load_producer_state(self.log)

    def appended(self) -> None:
        """Records were written here: move the high watermark (an ISR of one has them
        all at once) and wake the fetches parked on the partition."""
        replication = self.replication
        if replication is not None and replication.is_leader:
            replication.update_high_watermark(self.log.log_end_offset)
        self.data_arrived()

    def replicated(self, end_offset: int) -> asyncio.Future[None] | None:
        """What to wait for before records below `end_offset` count as written: None
        when they already do (always, on one node of its own)."""
        replication = self.replication
        if replication is None or replication.high_watermark >= end_offset:
            return None
        return replication.wait_for(end_offset)

    def data_arrived(self) -> None:
        """Records were appended (or leadership changed): every parked fetch looks."""
        _wake(self._replica_arrival)
        self._replica_arrival = None
        self.high_watermark_moved()

    def high_watermark_moved(self) -> None:
        """Consumers' fetches look, and followers' that tell their own (Fetch v18);
        other followers' do not, as in Kafka: they learn it with their next records."""
        _wake(self._arrival)
        self._arrival = None

    def arrival(self, replica: bool = False) -> asyncio.Future[None]:
        """A future that completes at the next append, or for a consumer (not a
        `replica`) when the high watermark moves."""
        if replica:
            if self._replica_arrival is None or self._replica_arrival.done():
                self._replica_arrival = asyncio.get_running_loop().create_future()
            return self._replica_arrival
        if self._arrival is None or self._arrival.done():
            self._arrival = asyncio.get_running_loop().create_future()
        return self._arrival


def _wake(future: asyncio.Future[None] | None) -> None:
    if future is not None and not future.done():
        future.set_result(None)


class Replication(Protocol):
    high_watermark: int

    @property
    def leader_epoch(self) -> int: ...

    @property
    def leader_id(self) -> int: ...

    @property
    def replicas(self) -> tuple[int, ...]: ...

    @property
    def isr(self) -> tuple[int, ...]: ...

    @property
    def is_leader(self) -> bool: ...

    def update_high_watermark(self, log_end_offset: int) -> bool: ...

    def wait_for(self, offset: int) -> asyncio.Future[None]: ...


def _load_producer_state(log: PartitionLog) -> ProducerStateTable:
    """The snapshot written at the last clean close, then every batch after it."""
    table, valid_to = ProducerStateTable.load(log.directory)
    if valid_to > log.log_end_offset or valid_to < log.log_start_offset:
        table, valid_to = ProducerStateTable(), log.log_start_offset
    if valid_to < log.log_end_offset:
        for header, data in log.iter_batches(valid_to):
            if header.base_offset >= valid_to:
                table.record(header, control_type(data) if header.is_control else None)
    return table


def control_type(batch: bytes) -> bool | None:
    """True for a COMMIT marker, False for ABORT, None if unreadable."""
    for _delta, key, _value in iter_records(batch):
        if key is not None and len(key) >= 4:
            return struct.unpack_from(">h", key, 2)[0] == 1
    return None
